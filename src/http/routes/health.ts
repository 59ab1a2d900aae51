import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { HealthSchema, ReadinessSchema } from '../../model/api.js';
import { RegistryError } from '../../model/errors.js';
import { json, problems } from '../openapi/responses.js';
import { sendProblem } from '../plugins/errors.js';

/** Liveness and readiness. Readiness proves the database still takes a write. */
const healthRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const config = { auth: false, rateLimit: false } as const;
  app.get(
    '/healthz',
    {
      config,
      schema: {
        tags: ['operations'],
        operationId: 'liveness',
        summary: 'Liveness',
        description: 'Answers while the process runs. Ignores credentials.',
        security: [],
        response: { 200: json(HealthSchema, 'The process is alive.') },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  // The write probe costs an fsync; probes within a second share one, so that a flood of
  // unauthenticated /readyz calls cannot turn into a flood of disk syncs.
  let probedAt = 0;
  let probeOk = true;
  app.get(
    '/readyz',
    {
      config,
      schema: {
        tags: ['operations'],
        operationId: 'readiness',
        summary: 'Readiness',
        description:
          'Proves the database still takes a write (one probe a second at most); with a JWKS, that its signing keys are loaded (else every token would get `401`; the `503` then says why, with `signingKeys: "unavailable"`); in replicated mode, also that this replica has caught up with the replication topic. Ignores credentials.',
        security: [],
        response: { 200: json(ReadinessSchema, 'Ready to serve.'), 503: problems.Unavailable },
      },
    },
    async (request, reply) => {
      if (Date.now() - probedAt >= 1000) {
        probedAt = Date.now();
        try {
          app.registry.probeWrite();
          probeOk = true;
        } catch (err) {
          probeOk = false;
          request.log.error({ err }, 'readiness probe failed');
        }
      }
      if (!probeOk) return sendProblem(reply, 'TR_ERR_UNAVAILABLE', 'the database does not take writes');
      const replication = app.replication?.state;
      if (replication?.failed !== undefined)
        return sendProblem(reply, 'TR_ERR_UNAVAILABLE', `this replica stopped applying the replication topic: ${replication.failed}`);
      if (replication && !replication.caughtUp) {
        // The state goes with the 503, when an operator needs it most.
        const detail =
          replication.broker === 'connected'
            ? 'this replica is catching up with the replication topic'
            : 'this replica cannot reach the broker to catch up with the replication topic';
        return sendProblem(
          reply,
          'TR_ERR_UNAVAILABLE',
          detail,
          new RegistryError('TR_ERR_UNAVAILABLE', detail, { extra: { replication }, retryAfterS: 1 }),
        );
      }
      // With a JWKS and no keys every token gets 401: not ready, and why (a probe asking also
      // starts a fetch, once per JWKS_COOLDOWN_S).
      const missingKeys = app.jwks?.missingKeys();
      if (missingKeys !== undefined) {
        const detail = `${missingKeys}; every token is refused with 401 until they are`;
        return sendProblem(
          reply,
          'TR_ERR_UNAVAILABLE',
          detail,
          new RegistryError('TR_ERR_UNAVAILABLE', detail, { extra: { signingKeys: 'unavailable' } }),
        );
      }
      // The bridge's state is reported apart: discovery and writes work while the broker is down.
      return {
        status: 'ready' as const,
        checks: { database: 'ok' as const, bridge: app.bridge.state },
        // Beside the checks, which clients compare whole (keys missing is a 503 above).
        signingKeys: app.jwks === null ? ('local' as const) : ('loaded' as const),
        index: app.catalog.index,
        inflightCalls: app.bridge.inflight,
        waiters: app.waiters.size,
        ...(replication && { replication }),
      };
    },
  );
};

export default healthRoutes;
