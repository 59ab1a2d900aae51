import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { ServiceIdParamsSchema } from '../../model/api.js';
import { ServiceRecordSchema, ToolServiceListSchema } from '../../model/admin-api.js';
import { parseToolServicePut, ToolServicePutBodySchema } from '../../model/descriptors.js';
import { RegistryError } from '../../model/errors.js';
import { serviceRecordBody } from '../../model/record-bodies.js';
import { adminOnly, adminReadProblems, headers, json, problem, problems, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';
import { pathKeyIntoBody, validatedBy } from '../validation.js';

const writeIndex = { 'X-Registry-Index': headers['X-Registry-Index'] };

/** Tool services name their queues (backend topology), so every route here needs the admin scope. */
const toolServiceRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);

  app.get(
    '/tool-services',
    {
      config: { admin: 'listing tool services' },
      schema: {
        tags: ['tool-services'],
        operationId: 'listToolServices',
        summary: 'List live tool services',
        description: 'Every live tool service, sorted by id. Needs the admin scope (services name their queues).',
        security,
        response: { 200: json(ToolServiceListSchema, 'The live tool services.'), ...adminReadProblems },
      },
    },
    async () => ({ toolServices: app.catalog.services().map(serviceRecordBody) }),
  );

  app.get(
    '/tool-services/:id',
    {
      config: { admin: 'reading a tool service' },
      schema: {
        tags: ['tool-services'],
        operationId: 'getToolService',
        summary: 'Read one tool service',
        security,
        params: ServiceIdParamsSchema,
        response: { 200: json(ServiceRecordSchema, 'The stored record.'), ...adminReadProblems, 404: problems.NotFound },
      },
    },
    async (request) => {
      const record = app.catalog.getService(request.params.id);
      if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool service "${request.params.id}"`);
      return serviceRecordBody(record);
    },
  );

  app.put(
    '/tool-services/:id',
    {
      config: { admin: 'writing a tool service', audit: 'tool-service.put' },
      preValidation: pathKeyIntoBody('id'),
      schema: {
        tags: ['tool-services'],
        operationId: 'putToolService',
        summary: 'Create or replace a tool service',
        description:
          "The body is the full queue form or the short `topic` form. Its `id` may be left out (it is taken from the path); if given it must equal the path's id, or the answer is `400`. A replacement must keep every live tool on the service valid (for instance, a new required config param would break them); otherwise nothing changes and the answer is `409` naming those tools. `201` when created, `200` when replaced.",
        security,
        params: ServiceIdParamsSchema,
        // The registry service checks the tools that use it (WriteCommands.toolsBrokenBy).
        body: validatedBy(ToolServicePutBodySchema, (data) => parseToolServicePut(data)),
        response: {
          200: json(ServiceRecordSchema, 'An existing tool service was replaced.', { headers: writeIndex }),
          201: json(ServiceRecordSchema, 'The tool service was created.', { headers: writeIndex }),
          ...writeProblems,
          409: problem(
            'The replacement would invalidate live tools on the service (`TR_ERR_CONFLICT`); `tools` names them and `errors` says what would break.',
            {
              example: {
                type: 'urn:tool-registry:error:conflict',
                title: 'Conflict',
                status: 409,
                detail: 'replacing tool service "joke-service" would invalidate tools: tell-joke',
                code: 'TR_ERR_CONFLICT',
                errors: [{ path: 'tools.tell-joke.need', message: 'required by service "joke-service" but missing' }],
                tools: ['tell-joke'],
              },
            },
          ),
        },
      },
    },
    async (request, reply) => {
      const { record, created } = await app.registry.putService(request.body, { pathId: request.params.id, actor: actorOf(request) });
      reply.header('x-registry-index', String(record.index));
      return reply.code(created ? 201 : 200).send(serviceRecordBody(record));
    },
  );

  /** 409 naming the tools while any still use the service. */
  app.delete(
    '/tool-services/:id',
    {
      config: { admin: 'deleting a tool service', audit: 'tool-service.delete' },
      schema: {
        tags: ['tool-services'],
        operationId: 'deleteToolService',
        summary: 'Delete a tool service',
        description:
          "Leaves a tombstone (status `deleted`). Refused with `409` while any live tool still uses the service; the problem's `tools` names them.",
        security,
        params: ServiceIdParamsSchema,
        response: {
          200: json(ServiceRecordSchema, "The service's tombstone.", { headers: writeIndex }),
          ...adminReadProblems,
          404: problems.NotFound,
          409: problem('The service is still used by tools (`TR_ERR_IN_USE`); `tools` names them.', {
            example: {
              type: 'urn:tool-registry:error:in-use',
              title: 'The tool service is still used by tools',
              status: 409,
              detail: 'tool service "joke-service" is still used by: tell-joke',
              code: 'TR_ERR_IN_USE',
              tools: ['tell-joke'],
            },
          }),
          503: problems.Unavailable,
        },
      },
    },
    async (request, reply) => {
      const record = await app.registry.deleteService(request.params.id, actorOf(request));
      reply.header('x-registry-index', String(record.index));
      return serviceRecordBody(record);
    },
  );
};

export default toolServiceRoutes;
