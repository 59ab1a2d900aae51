import fp from 'fastify-plugin';
import { ToolBridge } from '../../bridge/bridge.js';
import { PulsarWsClient } from '../../bridge/pulsar-ws.js';
import type { Config } from '../../config.js';
import { UsageTracker } from '../../usage/tracker.js';

/** The most of one call's observation the registry keeps, whichever transport carries it. */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

declare module 'fastify' {
  interface FastifyInstance {
    bridge: ToolBridge;
    usage: UsageTracker;
  }
}

/**
 * The call bridge and usage tracking. The bus client connects lazily, on the first call, so
 * discovery, registration and /stats never depend on the broker being up.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const usage = new UsageTracker(app.usageStore, {
      flushIntervalMs: 1000,
      window: 1024,
      onError: (err) => app.log.error({ err }, 'writing usage records failed'),
    });
    // Bounded by age, so the table (and the aggregation at startup) does not grow for ever.
    const prune = () => {
      try {
        const removed = app.usageStore.prune(new Date(Date.now() - config.usageRetentionDays * 86_400_000).toISOString());
        if (removed > 0) app.log.info({ removed }, 'pruned tool-call records past retention');
      } catch (err) {
        app.log.error({ err }, 'pruning tool-call records failed');
      }
    };
    prune();
    const pruneTimer = setInterval(prune, 3_600_000).unref();
    usage.load();
    const { pulsarWsUrl, pulsarToken, callTimeoutMs, maxInflight, connectTimeoutMs } = config.bridge;
    const bus = pulsarWsUrl
      ? new PulsarWsClient({ url: pulsarWsUrl, token: pulsarToken, connectTimeoutMs, subscriptionPrefix: 'tool-registry', maxResponseBytes: MAX_RESPONSE_BYTES, log: app.log })
      : undefined;
    if (!bus) app.log.info('no PULSAR_WS_URL: message-bus tools are listed but calls to them answer 503');
    const bridge = new ToolBridge({
      catalog: app.catalog,
      bus,
      usage,
      defaultTimeoutMs: callTimeoutMs,
      maxInflight,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      adminScope: config.adminScope,
      // Tells a deleted tool (410) from one that never was (404), from the in-memory tombstones.
      wasDeleted: (name) => app.catalog.getTombstone(name) !== undefined,
    });
    app.decorate('usage', usage);
    app.decorate('bridge', bridge);
    app.addHook('onClose', async () => {
      clearInterval(pruneTimer);
      bus?.close();
      usage.flush();
    });
  },
  { name: 'bridge', dependencies: ['registry'] },
);
