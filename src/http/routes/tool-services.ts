import type { FastifyPluginAsync } from 'fastify';
import { RegistryError } from '../../model/errors.js';
import { actorOf } from '../plugins/audit.js';
import { serviceRecordBody } from '../../model/record-bodies.js';

interface IdParams {
  id: string;
}

/** Tool services name their queues (backend topology), so every route here needs the admin scope. */
const toolServiceRoutes: FastifyPluginAsync = async (app) => {
  app.get('/tool-services', { config: { admin: 'listing tool services' } }, async () => ({
    toolServices: app.catalog.services().map(serviceRecordBody),
  }));

  app.get<{ Params: IdParams }>('/tool-services/:id', { config: { admin: 'reading a tool service' } }, async (request) => {
    const record = app.catalog.getService(request.params.id);
    if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool service "${request.params.id}"`);
    return serviceRecordBody(record);
  });

  app.put<{ Params: IdParams }>(
    '/tool-services/:id',
    { config: { admin: 'writing a tool service', audit: 'tool-service.put' } },
    async (request, reply) => {
      const { record, created } = await app.registry.putService(request.body, request.params.id, actorOf(request));
      reply.header('x-registry-index', String(record.index));
      return reply.code(created ? 201 : 200).send(serviceRecordBody(record));
    },
  );

  /** 409 naming the tools while any still use the service. */
  app.delete<{ Params: IdParams }>(
    '/tool-services/:id',
    { config: { admin: 'deleting a tool service', audit: 'tool-service.delete' } },
    async (request, reply) => {
      const record = await app.registry.deleteService(request.params.id, actorOf(request));
      reply.header('x-registry-index', String(record.index));
      return serviceRecordBody(record);
    },
  );
};

export default toolServiceRoutes;
