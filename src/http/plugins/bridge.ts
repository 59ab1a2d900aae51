import fp from 'fastify-plugin';
import { ToolBridge } from '../../bridge/bridge.js';
import { BusTransport } from '../../bridge/bus-transport.js';
import { HttpTransport } from '../../bridge/http-transport.js';
import { McpTransport } from '../../bridge/mcp-transport.js';
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
      retentionDays: config.usageRetentionDays,
      onError: (err, what) => app.log.error({ err }, what),
      onPruned: (removed) => app.log.info({ removed }, 'pruned tool-call records past retention'),
    });
    const { pulsarWsUrl, pulsarToken, callTimeoutMs, maxInflight, maxInflightPerCaller, connectTimeoutMs } = config.bridge;
    const client = pulsarWsUrl
      ? new PulsarWsClient({ url: pulsarWsUrl, token: pulsarToken, connectTimeoutMs, subscriptionPrefix: 'tool-registry', maxResponseBytes: MAX_RESPONSE_BYTES, log: app.log })
      : undefined;
    if (!client) app.log.info('no PULSAR_WS_URL: message-bus tools are listed but calls to them answer 503');
    const bridge = new ToolBridge({
      catalog: app.catalog,
      transports: {
        http: new HttpTransport(MAX_RESPONSE_BYTES),
        'tool-service': new BusTransport(client, app.catalog.lookupService),
        // Over the connections the MCP server sync keeps (src/http/plugins/mcp-upstreams.ts).
        mcp: new McpTransport((id) => app.mcpUpstreams.connection(id), MAX_RESPONSE_BYTES),
      },
      usage,
      defaultTimeoutMs: callTimeoutMs,
      maxInflight,
      maxInflightPerCaller,
      visibility: config.visibility,
    });
    app.decorate('usage', usage);
    app.decorate('bridge', bridge);
    app.addHook('onClose', async () => {
      bridge.close();
      usage.close();
    });
  },
  { name: 'bridge', dependencies: ['registry', 'mcp-upstreams'] },
);
