import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { requireScope } from '../../model/caller.js';
import { headers, problem, problems } from '../openapi/responses.js';

const challenge = { 'WWW-Authenticate': headers['WWW-Authenticate'] };

/**
 * `GET /metrics`: the Prometheus text format, for operators: tokens with the admin scope or
 * STATS_READ_SCOPE (the figures name tools every caller may not know of). Served here only when
 * METRICS_PORT is unset; with it set, the metrics plugin serves them on that port, open.
 */
const metricsRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  if (config.metrics.port !== undefined) return;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { adminScope, readScope } = config.visibility;
  const scopes = readScope === undefined ? [adminScope] : [adminScope, readScope];
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getMetrics',
        summary: 'Prometheus metrics (operators)',
        description:
          "The registry's metrics in the Prometheus text format (0.0.4): requests by route pattern and status, discovery views and 304s, tools by kind, held queries, streams and MCP sessions, tool calls by tool and outcome with their latency, the message bus state, key-set fetches, group commits, and the process's own figures. Counters count from process start. Needs a token with the admin scope or `STATS_READ_SCOPE`; with `METRICS_PORT` set this route is not served here but on that port, to anyone who reaches it.",
        security: scopes.map((scope) => ({ bearerAuth: [scope] })),
        response: {
          200: {
            description: 'Every metric family, then the process metrics.',
            content: { 'text/plain': { schema: z.string().describe('The Prometheus text exposition format, version 0.0.4.') } },
          },
          400: problems.BadRequest,
          401: problem(
            'No bearer token (`TR_ERR_UNAUTHENTICATED`; the challenge names the scopes that would do), or the token is not valid (`TR_ERR_INVALID_TOKEN`).',
            {
              headers: challenge,
            },
          ),
          403: problem(
            'The token holds neither the admin scope nor `STATS_READ_SCOPE` (`TR_ERR_INSUFFICIENT_SCOPE`, `error="insufficient_scope"`).',
            { headers: challenge },
          ),
          429: problems.TooManyRequests,
        },
      },
    },
    async (request, reply) => {
      requireScope(request.caller, scopes, 'reading the metrics');
      const text = await app.metrics.text();
      return reply.type(app.metrics.contentType).header('cache-control', 'no-store').send(text);
    },
  );
};

export default metricsRoutes;
