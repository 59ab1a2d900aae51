import type { FastifyPluginAsync } from 'fastify';
import { explainAccess } from '../../model/access.js';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import { actorOf } from '../plugins/audit.js';
import { toolRecordBody } from '../../model/record-bodies.js';
import { isAdmin, mayKnowOf, viewKeyFor, visibleScopes } from '../../model/visibility.js';

interface NameParams {
  name: string;
}

const toolRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const knownScopes = () => app.catalog.knownScopes().keys();
  /** The article's runtime registration; either tool form. 201 when new, 200 when replaced. */
  app.post('/tools/register', { config: { admin: 'registering a tool', audit: 'tool.put' } }, async (request, reply) => {
    const { record, created } = await app.registry.putTool(request.body, undefined, actorOf(request));
    reply.header('x-registry-index', String(record.index)).header('location', `/tools/${encodeURIComponent(record.name)}`);
    return reply.code(created ? 201 : 200).send(toolRecordBody(record));
  });

  /**
   * Admins get the stored descriptor (with config values); everyone else gets the discovery
   * entry, if the tool is in their view.
   */
  app.get<{ Params: NameParams }>('/tools/:name', async (request) => {
    const admin = isAdmin(request.caller, config);
    // The view policy first, so that under ANONYMOUS_DISCOVERY=none names cannot be probed.
    const viewKey = admin ? null : viewKeyFor(request.caller, config.anonymousDiscovery, knownScopes);
    const entry = app.catalog.getTool(request.params.name);
    if (entry && admin) return toolRecordBody(entry.record);
    if (!entry || (viewKey && !visibleScopes(entry.tool.scopes, viewKey))) {
      throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${request.params.name}"`);
    }
    return entry.view;
  });

  /**
   * The access explainer: which scopes the tool needs, which the caller has, which are
   * missing, and whether a call would be allowed. Tools the caller could not discover even
   * anonymously stay hidden (404); under ANONYMOUS_DISCOVERY=none anonymous callers get 401.
   */
  app.get<{ Params: NameParams }>('/tools/:name/access', async (request) => {
    const entry = app.catalog.getTool(request.params.name);
    const policy = { anonymous: config.anonymousDiscovery, adminScope: config.adminScope };
    const seen = mayKnowOf(entry?.tool.scopes ?? [], request.caller, policy, knownScopes);
    if (!entry || !seen.known) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${request.params.name}"`);
    return explainAccess(entry.tool, request.caller, seen.inOwnView);
  });

  app.put<{ Params: NameParams }>('/tools/:name', { config: { admin: 'replacing a tool', audit: 'tool.put' } }, async (request, reply) => {
    const { record, created } = await app.registry.putTool(request.body, request.params.name, actorOf(request));
    reply.header('x-registry-index', String(record.index));
    return reply.code(created ? 201 : 200).send(toolRecordBody(record));
  });

  /** Leaves a tombstone (status `deleted`) so change feeds can tell mirrors. */
  app.delete<{ Params: NameParams }>('/tools/:name', { config: { admin: 'deleting a tool', audit: 'tool.delete' } }, async (request, reply) => {
    const record = await app.registry.deleteTool(request.params.name, actorOf(request));
    reply.header('x-registry-index', String(record.index));
    return toolRecordBody(record);
  });
};

export default toolRoutes;
