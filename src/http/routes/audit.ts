import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { AuditQuerySchema } from '../../model/api.js';
import { AuditPageSchema } from '../../model/admin-api.js';
import { adminOnly, adminReadProblems, headers, json, problem } from '../openapi/responses.js';

/** `GET /audit` (admin scope): newest first, keyset pagination, filters. */
const auditRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/audit',
    {
      config: { admin: 'reading the audit log', invalidRequest: 'invalid audit query' },
      schema: {
        tags: ['operations'],
        operationId: 'listAuditEntries',
        summary: 'Read the audit log (admin)',
        description:
          "Every registry write (logged in the write's own transaction), every refused write, and every tool call answered with an error status (action `tool.invoke`), newest first. Keyset pagination: pass `nextCursor` back as `cursor`. Entries older than `AUDIT_RETENTION_DAYS` are pruned. An unknown query parameter is `400`.",
        security: adminOnly(config.adminScope),
        querystring: AuditQuerySchema,
        response: {
          200: json(AuditPageSchema, 'One page of entries.'),
          ...adminReadProblems,
          400: problem(
            "A query parameter is malformed, out of range or unknown (`TR_ERR_BAD_REQUEST`, with one entry in `errors` per problem, `path` being the parameter's name, unknown ones included), or the `Authorization` header is malformed (`TR_ERR_INVALID_REQUEST`, with a `WWW-Authenticate` challenge).",
            {
              headers: { 'WWW-Authenticate': headers.MalformedAuthorizationChallenge },
              example: {
                type: 'urn:tool-registry:error:bad-request',
                title: 'Bad request',
                status: 400,
                detail: 'invalid audit query',
                code: 'TR_ERR_BAD_REQUEST',
                errors: [{ path: 'colour', message: 'unknown query parameter "colour"' }],
              },
            },
          ),
        },
      },
    },
    async (request) => {
      const { cursor, ...filters } = request.query;
      const entries = app.auditLog.list({ ...filters, beforeId: cursor, limit: filters.limit + 1 });
      const page = entries.slice(0, filters.limit);
      const last = page.at(-1);
      return {
        entries: page,
        nextCursor: entries.length > filters.limit && last ? Buffer.from(String(last.id)).toString('base64url') : null,
      };
    },
  );
};

export default auditRoutes;
