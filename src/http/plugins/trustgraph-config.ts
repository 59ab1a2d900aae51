import fp from 'fastify-plugin';
import { effectiveLimits, payloadLimit } from '../../pulsar/limits.js';
import type { Config } from '../../config.js';
import { adoptTrustGraphConfig } from '../../trustgraph/adopt.js';
import { ConfigServiceClient } from '../../trustgraph/config-client.js';
import { catalogSource, ConfigSync } from '../../trustgraph/config-sync.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Live sync to TrustGraph's config service; null unless TRUSTGRAPH_CONFIG_SYNC is on. */
    configSync: ConfigSync | null;
  }
}

/**
 * TrustGraph's config service (src/trustgraph/): with TRUSTGRAPH_CONFIG_ADOPT, adopts its tool
 * services and tools when the app is ready (one attempt: when it fails, the registry starts
 * without them and says so); with TRUSTGRAPH_CONFIG_SYNC, then writes every live tool service and
 * message-bus tool to it and follows the change bus from there on. Neither holds up a registry
 * write or read.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const { trustgraph, bridge } = config;
    app.decorate('configSync', null);
    if ((!trustgraph.sync && !trustgraph.adopt) || bridge.pulsarWsUrl === undefined) return;
    const client = new ConfigServiceClient({
      url: bridge.pulsarWsUrl,
      token: bridge.pulsarToken,
      requestTopic: trustgraph.requestQueue,
      responseTopic: trustgraph.responseQueue,
      connectTimeoutMs: bridge.connectTimeoutMs,
      timeoutMs: trustgraph.timeoutMs,
    });
    const log = app.log.child({ component: 'trustgraph-config', workspace: trustgraph.workspace });
    // A request is one message on the bus: what one frame of PULSAR_WS_MAX_FRAME_BYTES carries.
    const maxRequestBytes = payloadLimit(
      effectiveLimits(bridge.maxFrameBytes, undefined),
      { id: '00000000-0000-4000-8000-000000000000' },
      '1000000',
    ).bytes;
    const sync = trustgraph.sync
      ? new ConfigSync(client, catalogSource(app.catalog), { workspace: trustgraph.workspace, maxRequestBytes, log })
      : null;
    app.configSync = sync;
    app.metrics.watchConfigSync(() => sync?.figures ?? null);
    let unsubscribe = () => undefined as void;

    app.addHook('onReady', async () => {
      if (trustgraph.adopt) {
        try {
          const adopted = await adoptTrustGraphConfig(client, app.registry, app.catalog, {
            workspace: trustgraph.workspace,
            maxDepth: config.jsonMaxDepth,
          });
          for (const skipped of adopted.skipped) log.warn(skipped, "an item of TrustGraph's config was not adopted");
          log.info(
            {
              index: adopted.index,
              toolServices: adopted.toolServices,
              tools: adopted.tools,
              held: adopted.held,
              skipped: adopted.skipped.length,
            },
            "adopted TrustGraph's tool config",
          );
        } catch (err) {
          log.error({ err }, "TrustGraph's tool config was not adopted; the registry starts without it");
        }
      }
      if (sync) {
        unsubscribe = app.changes.subscribe(sync.onChange);
        sync.start();
      }
    });
    app.addHook('onClose', async () => {
      unsubscribe();
      sync?.close();
      client.close();
    });
  },
  { name: 'trustgraph-config', dependencies: ['registry', 'metrics'] },
);
