import type { FastifyPluginAsync } from 'fastify';
import { RegistryError } from '../errors.js';
import { serviceRecordBody } from './records.js';

interface IdParams {
  id: string;
}

/** Tool services name their queues (backend topology), so every route here needs the admin scope. */
const toolServiceRoutes: FastifyPluginAsync = async (app) => {
  app.get('/tool-services', async (request) => {
    app.requireAdmin(request, 'listing tool services');
    return { toolServices: app.catalog.services().map(serviceRecordBody) };
  });

  app.get<{ Params: IdParams }>('/tool-services/:id', async (request) => {
    app.requireAdmin(request, 'reading a tool service');
    const record = app.catalog.getService(request.params.id);
    if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool service "${request.params.id}"`);
    return serviceRecordBody(record);
  });

  app.put<{ Params: IdParams }>('/tool-services/:id', async (request, reply) => {
    app.requireAdmin(request, 'writing a tool service');
    const { record, created } = app.registry.putService(request.body, request.params.id);
    reply.header('x-registry-index', String(record.index));
    return reply.code(created ? 201 : 200).send(serviceRecordBody(record));
  });

  /** 409 naming the tools while any still use the service. */
  app.delete<{ Params: IdParams }>('/tool-services/:id', async (request, reply) => {
    app.requireAdmin(request, 'deleting a tool service');
    const record = app.registry.deleteService(request.params.id);
    reply.header('x-registry-index', String(record.index));
    return serviceRecordBody(record);
  });
};

export default toolServiceRoutes;
