import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { ServiceIdParamsSchema } from '../../model/api.js';
import { ServiceRecordSchema, ToolServiceListSchema } from '../../model/admin-api.js';
import { parseToolServicePut, ToolServicePutBodySchema } from '../../model/descriptors.js';
import { RegistryError } from '../../model/errors.js';
import { serviceRecordBody } from '../../model/record-bodies.js';
import { serviceRecordRepresentation } from '../../catalog/record-etag.js';
import { adminOnly, adminReadProblems, empty, headers, json, problem, problems, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';
import { checkConditionFirst, readConditionHeaders, sendTagged, writeConditionHeaders, writeConditionOf } from '../conditional.js';
import { pathKeyIntoBody, validatedBy } from '../validation.js';

const writeIndex = { 'X-Registry-Index': headers['X-Registry-Index'] };
/** A write's answer: its index, and the stored record's new entity tag for the next If-Match. */
const written = { ...writeIndex, ETag: headers.RecordETag };

/** Preconditions of a tool service's writes, checked by the registry in the write's batch, as a tool's are. */
const WriteConditionHeaders = writeConditionHeaders('tool service', '`GET /tool-services/{id}`');

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
        description:
          'The stored record. The answer carries a strong `ETag`; send it back in `If-None-Match` to get `304 Not Modified` while the service is unchanged, or in `If-Match` on `PUT` or `DELETE` so that the write happens only while the service is still as read.',
        security,
        params: ServiceIdParamsSchema,
        headers: readConditionHeaders(),
        response: {
          200: json(ServiceRecordSchema, 'The stored record.', { headers: { ETag: headers.RecordETag } }),
          304: empty('The service still matches an entity tag given in `If-None-Match`; no body.', { ETag: headers.RecordETag }),
          ...adminReadProblems,
          404: problems.NotFound,
        },
      },
    },
    // Not async, as `GET /tools/{name}`: the bytes are sent before the handler returns.
    (request, reply) => {
      const record = app.catalog.getService(request.params.id);
      if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool service "${request.params.id}"`);
      sendTagged(reply, request.headers['if-none-match'], serviceRecordRepresentation(record));
    },
  );

  app.put(
    '/tool-services/:id',
    {
      config: { admin: 'writing a tool service', audit: 'tool-service.put' },
      // As `PUT /tools/{name}`: the precondition before the body is looked at, then the path's id into the body.
      preValidation: [
        async (request) => {
          const { id } = request.params;
          checkConditionFirst(request.headers, `tool service "${id}"`, () => {
            const current = app.catalog.getService(id);
            return current && serviceRecordRepresentation(current).etag;
          });
        },
        pathKeyIntoBody('id'),
      ],
      schema: {
        tags: ['tool-services'],
        operationId: 'putToolService',
        summary: 'Create or replace a tool service',
        description:
          "The body is the full queue form or the short `topic` form. Its `id` may be left out (it is taken from the path); if given it must equal the path's id, or the answer is `400`. A replacement must keep every live tool on the service valid (for instance, a new required config param would break them); otherwise nothing changes and the answer is `409` naming those tools. `201` when created, `200` when replaced. `If-Match` (the `ETag` of `GET /tool-services/{id}` or of the last write) makes the write conditional on the service as read, `If-None-Match: *` on there being none: `412` otherwise, with nothing written.",
        security,
        params: ServiceIdParamsSchema,
        headers: WriteConditionHeaders,
        // The registry service checks the tools that use it (WriteCommands.toolsBrokenBy).
        body: validatedBy(ToolServicePutBodySchema, (data) => parseToolServicePut(data)),
        response: {
          200: json(ServiceRecordSchema, 'An existing tool service was replaced.', { headers: written }),
          201: json(ServiceRecordSchema, 'The tool service was created.', { headers: written }),
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
          412: problems.PreconditionFailed,
        },
      },
    },
    async (request, reply) => {
      const { record, created } = await app.registry.putService(request.body, {
        pathId: request.params.id,
        actor: actorOf(request),
        condition: writeConditionOf(request.headers),
      });
      reply.header('x-registry-index', String(record.index));
      reply.header('etag', serviceRecordRepresentation(record).etag);
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
          "Leaves a tombstone (status `deleted`). Refused with `409` while any live tool still uses the service; the problem's `tools` names them. `If-Match` makes the delete conditional on the service as read (`412` otherwise).",
        security,
        params: ServiceIdParamsSchema,
        headers: WriteConditionHeaders,
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
          412: problems.PreconditionFailed,
          503: problems.Unavailable,
        },
      },
    },
    async (request, reply) => {
      const record = await app.registry.deleteService(request.params.id, {
        actor: actorOf(request),
        condition: writeConditionOf(request.headers),
      });
      reply.header('x-registry-index', String(record.index));
      return serviceRecordBody(record);
    },
  );
};

export default toolServiceRoutes;
