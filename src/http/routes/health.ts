import type { FastifyPluginAsync } from 'fastify';
import { sendProblem } from '../plugins/errors.js';

/** Liveness and readiness. Readiness proves the database still takes a write. */
const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { config: { auth: false, rateLimit: false } }, async () => ({ status: 'ok' }));
  // The write probe costs an fsync; probes within a second share one, so that a flood of
  // unauthenticated /readyz calls cannot turn into a flood of disk syncs.
  let probedAt = 0;
  let probeOk = true;
  app.get('/readyz', { config: { auth: false, rateLimit: false } }, async (request, reply) => {
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
    // The bridge's state is reported apart: discovery and writes work while the broker is down.
    return { status: 'ready', checks: { database: 'ok', bridge: app.bridge.state }, index: app.catalog.index, inflightCalls: app.bridge.inflight, waiters: app.waiters.size };
  });
};

export default healthRoutes;
