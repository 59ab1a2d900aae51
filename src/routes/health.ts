import type { FastifyPluginAsync } from 'fastify';
import { sendProblem } from '../plugins/errors.js';

/** Liveness and readiness. Readiness proves the database still takes a write. */
const healthRoutes: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { config: { auth: false, rateLimit: false } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { config: { auth: false, rateLimit: false } }, async (request, reply) => {
    try {
      app.store.probeWrite(new Date().toISOString());
    } catch (err) {
      request.log.error({ err }, 'readiness probe failed');
      return sendProblem(reply, 'TR_ERR_UNAVAILABLE', 'the database does not take writes');
    }
    // The bridge's state is reported apart: discovery and writes work while the broker is down.
    return { status: 'ready', checks: { database: 'ok', bridge: app.bridge.state }, index: app.catalog.index, inflightCalls: app.bridge.inflight, waiters: app.waiters.size };
  });
};

export default healthRoutes;
