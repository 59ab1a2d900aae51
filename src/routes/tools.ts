import type { FastifyPluginAsync } from 'fastify';
import { hasAnyScope } from '../auth/caller.js';
import { Catalog } from '../catalog/catalog.js';
import type { Config } from '../config.js';
import { RegistryError } from '../errors.js';
import { toolRecordBody } from './records.js';
import { viewKeyFor } from './view-policy.js';

interface NameParams {
  name: string;
}

const toolRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  /** The article's runtime registration; either tool form. 201 when new, 200 when replaced. */
  app.post('/tools/register', async (request, reply) => {
    app.requireAdmin(request, 'registering a tool');
    const { record, created } = app.registry.putTool(request.body);
    reply.header('x-registry-index', String(record.index)).header('location', `/tools/${encodeURIComponent(record.name)}`);
    return reply.code(created ? 201 : 200).send(toolRecordBody(record));
  });

  /**
   * Admins get the stored descriptor (with config values); everyone else gets the discovery
   * entry, if the tool is in their view.
   */
  app.get<{ Params: NameParams }>('/tools/:name', async (request) => {
    const entry = app.catalog.getTool(request.params.name);
    const notFound = new RegistryError('TR_ERR_NOT_FOUND', `no tool "${request.params.name}"`);
    if (!entry) throw notFound;
    if (hasAnyScope(request.caller, [config.adminScope])) return toolRecordBody(entry.record);
    if (!Catalog.visible(entry.tool, viewKeyFor(request.caller, config.anonymousDiscovery))) throw notFound;
    return entry.view;
  });

  app.put<{ Params: NameParams }>('/tools/:name', async (request, reply) => {
    app.requireAdmin(request, 'replacing a tool');
    const { record, created } = app.registry.putTool(request.body, request.params.name);
    reply.header('x-registry-index', String(record.index));
    return reply.code(created ? 201 : 200).send(toolRecordBody(record));
  });

  /** Leaves a tombstone (status `deleted`) so change feeds can tell mirrors. */
  app.delete<{ Params: NameParams }>('/tools/:name', async (request, reply) => {
    app.requireAdmin(request, 'deleting a tool');
    const record = app.registry.deleteTool(request.params.name);
    reply.header('x-registry-index', String(record.index));
    return toolRecordBody(record);
  });
};

export default toolRoutes;
