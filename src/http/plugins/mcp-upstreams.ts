import fp from 'fastify-plugin';
import { McpUpstreamClient } from '../../bridge/mcp-client.js';
import type { Config } from '../../config.js';
import { packageVersion } from '../../package-root.js';
import { McpSync } from '../../registry/mcp-sync.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Registered upstream MCP servers: their connections, tool syncs and states. */
    mcpUpstreams: McpSync<McpUpstreamClient>;
  }
}

/**
 * The connections to registered MCP servers and the sync of their tools. Started once the app
 * is ready and never waited for: the registry serves at once, and a server that is slow or
 * down only shows in its own state (GET /mcp-servers/{id}).
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const { refreshS, maxTools, maxListBytes, writeIntervalMs, maxWriteIntervalMs } = config.mcpUpstream;
    const version = packageVersion();
    const sync = new McpSync({
      registry: app.registry,
      catalog: app.catalog,
      subscribe: (listener) => app.changes.subscribe(listener),
      credentialOf: (id) => app.store.mcpServerCredential(id),
      connect: (server, bearer, events) =>
        new McpUpstreamClient({
          url: server.url,
          bearer,
          requestTimeoutMs: server.timeoutMs ?? config.bridge.callTimeoutMs,
          maxTools,
          maxListBytes,
          onToolsChanged: events.onToolsChanged,
          onLost: events.onLost,
          version,
          fetch: app.outbound.fetch,
        }),
      scheduler: app.catalog.scheduler,
      defaultRefreshS: refreshS,
      writeIntervalMs,
      maxWriteIntervalMs,
      log: app.log.child({ component: 'mcp-upstreams' }),
    });
    app.decorate('mcpUpstreams', sync);
    app.addHook('onReady', async () => sync.start());
    app.addHook('onClose', async () => sync.close());
  },
  { name: 'mcp-upstreams', dependencies: ['registry', 'outbound'] },
);
