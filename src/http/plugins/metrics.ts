import type { Server } from 'node:http';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { listenProblem } from '../../config/errors.js';
import { addressOf, closeListener, listenForScrapes } from '../metrics/listener.js';
import { RegistryMetrics } from '../metrics/registry-metrics.js';
import { routeConfig } from './route-config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Prometheus metrics: `GET /metrics` for operators, or the open METRICS_PORT listener. */
    metrics: RegistryMetrics;
  }
}

/**
 * Wires the services' observers and figures to the Prometheus metrics
 * (src/http/metrics/registry-metrics.ts), times every answered request by route pattern, and
 * with METRICS_PORT set opens the scrape listener when the app is ready and closes it with the
 * app. Streams that take over the response (change streams, streamed calls, MCP) are not timed
 * as requests: the gauges of held streams and the call figures cover them.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const metrics = new RegistryMetrics(
      { catalog: app.catalog, waiters: app.waiters, bridge: app.bridge, jwks: app.jwks, replication: app.replication },
      config.metrics,
    );
    app.decorate('metrics', metrics);
    const stopObserving = [
      app.usage.observe((call) => metrics.observeCall(call)),
      app.registry.observeCommits((commit) => metrics.observeCommit(commit)),
    ];
    // Every answer passes here, 304 revalidations included: a callback-style hook, and an
    // observation in plain numbers (src/http/metrics/request-histogram.ts), not prom-client's.
    app.addHook('onResponse', (request, reply, done) => {
      metrics.observeRequest(request.method, routeConfig(request).url, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });

    let listener: Server | null = null;
    const { port, host } = config.metrics;
    if (port !== undefined) {
      // At ready, so that a port already taken stops startup (listen calls ready first).
      app.addHook('onReady', async () => {
        try {
          listener = await listenForScrapes(metrics, port, host, (err) => app.log.error({ err }, 'gathering the metrics failed'));
        } catch (err) {
          // Named here: the server would otherwise blame PORT or HOST for this listener's address.
          const hostSetting = config.metrics.host === config.host ? 'HOST' : 'METRICS_HOST';
          throw listenProblem(err, { port, host, portSetting: 'METRICS_PORT', hostSetting }) ?? err;
        }
        metrics.listenAddress = addressOf(listener);
        app.log.info(metrics.listenAddress, 'serving /metrics on its own port');
      });
    }
    app.addHook('onClose', async () => {
      for (const stop of stopObserving) stop();
      if (listener) await closeListener(listener);
      metrics.close();
    });
  },
  { name: 'metrics', dependencies: ['registry', 'auth', 'bridge', 'route-config'] },
);
