import type { FastifyBaseLogger } from 'fastify';
import fp from 'fastify-plugin';
import { toolCredentialOwner } from '../../registry/tool-credential-commands.js';
import { RegistryError } from '../../model/errors.js';
import { readBrokerLimits, type BrokerLimits } from '../../pulsar/broker-limits.js';
import { ToolBridge } from '../../bridge/bridge.js';
import { BusTransport } from '../../bridge/bus-transport.js';
import { HttpTransport } from '../../bridge/http-transport.js';
import { OutboundCredentials } from '../../bridge/outbound-credentials.js';
import { openApiSourceOf } from '../../model/openapi-source.js';
import type { OutboundCredential } from '../../model/outbound-credential.js';
import { McpTransport } from '../../bridge/mcp-transport.js';
import { PulsarWsClient } from '../../bridge/pulsar-ws.js';
import { effectiveLimits, payloadLimit, type BusLimits } from '../../pulsar/limits.js';
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

/** Bytes of JSON a call may carry under these limits (its `id` property, the first context). */
function callBytes(limits: BusLimits): number {
  return payloadLimit(limits, { id: '00000000-0000-4000-8000-000000000000' }, '1').bytes;
}

/**
 * Reads the broker's message limits once, at startup, and says in the log what a call may
 * carry: PULSAR_WS_MAX_FRAME_BYTES, lowered to the broker's webSocketMaxTextFrameSize when that
 * is lower. When they cannot be read (a WebSocket proxy, no superuser token, the broker down),
 * says so and trusts the setting.
 */
async function checkBrokerLimits(
  log: FastifyBaseLogger,
  bridge: Config['bridge'],
  url: string,
  signal: AbortSignal,
): Promise<BrokerLimits | undefined> {
  const { pulsarToken, connectTimeoutMs, maxFrameBytes } = bridge;
  let broker: BrokerLimits;
  try {
    broker = await readBrokerLimits(url, pulsarToken, connectTimeoutMs, signal);
  } catch (err) {
    if (!signal.aborted) {
      const bytes = callBytes(effectiveLimits(maxFrameBytes, undefined));
      log.warn(
        { reason: (err as Error).message },
        `cannot read the broker's webSocketMaxTextFrameSize; trusting PULSAR_WS_MAX_FRAME_BYTES=${maxFrameBytes}: message-bus calls up to ${bytes} bytes of JSON`,
      );
    }
    return undefined;
  }
  const limits = effectiveLimits(maxFrameBytes, broker);
  const facts = {
    webSocketMaxTextFrameSize: broker.maxTextFrameBytes,
    maxMessageSize: broker.maxMessageBytes,
    maxFrameBytes,
    callBytes: callBytes(limits),
  };
  if (limits.frameFrom === 'broker') {
    log.warn(
      facts,
      `the broker's webSocketMaxTextFrameSize (${broker.maxTextFrameBytes}) is below PULSAR_WS_MAX_FRAME_BYTES (${maxFrameBytes}); using the broker's: message-bus calls up to ${facts.callBytes} bytes of JSON`,
    );
  } else {
    log.info(
      facts,
      `message-bus calls up to ${facts.callBytes} bytes of JSON (PULSAR_WS_MAX_FRAME_BYTES=${maxFrameBytes}; the broker takes frames up to ${broker.maxTextFrameBytes})`,
    );
  }
  return broker;
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
    const { pulsarWsUrl, pulsarToken, callTimeoutMs, maxInflight, maxInflightPerCaller, connectTimeoutMs, maxFrameBytes } = config.bridge;
    // Read in the background: startup never waits on the broker; the first call waits for it.
    const limitsCheck = new AbortController();
    const client = pulsarWsUrl
      ? new PulsarWsClient({
          url: pulsarWsUrl,
          token: pulsarToken,
          connectTimeoutMs,
          subscriptionPrefix: 'tool-registry',
          maxResponseBytes: MAX_RESPONSE_BYTES,
          maxFrameBytes,
          brokerLimits: checkBrokerLimits(app.log, config.bridge, pulsarWsUrl, limitsCheck.signal),
          log: app.log,
        })
      : undefined;
    if (!client) app.log.info('no PULSAR_WS_URL: message-bus tools are listed but calls to them answer 503');
    const bridge = new ToolBridge({
      catalog: app.catalog,
      transports: {
        http: new HttpTransport(MAX_RESPONSE_BYTES, app.outbound.fetch, {
          // An OpenAPI source's credential, or the tool's own (issue 30), opened from its sealed row
          // at each call (a rotated one applies at once).
          credentialOf: (owner, tool, origin) => {
            const source = openApiSourceOf(owner);
            if (source !== undefined && owner !== null) {
              const sealed = app.store.openApiSourceCredential(source);
              return sealed === undefined
                ? undefined
                : { key: owner, credential: app.store.credentials.open(owner, sealed) as OutboundCredential };
            }
            const own = app.store.sealedToolCredential(tool);
            if (own === undefined) return undefined;
            if (own.origin !== origin) {
              throw new RegistryError(
                'TR_ERR_UPSTREAM_CREDENTIAL',
                `tool "${tool}" now calls ${origin}, not ${own.origin} its credential was set for: it is not sent elsewhere; set the credential again`,
              );
            }
            const key = toolCredentialOwner(tool);
            return { key, credential: app.store.credentials.open(key, own.sealed) as OutboundCredential };
          },
          parts: new OutboundCredentials({ fetch: app.outbound.fetch }),
        }),
        'tool-service': new BusTransport(client, app.catalog.lookupService),
        // Over the connections the MCP server sync keeps (src/http/plugins/mcp-upstreams.ts).
        mcp: new McpTransport((id) => app.mcpUpstreams.connection(id), MAX_RESPONSE_BYTES),
      },
      usage,
      defaultTimeoutMs: callTimeoutMs,
      maxInflight,
      maxInflightPerCaller,
      visibility: config.visibility,
      health: app.serviceHealth,
    });
    app.decorate('usage', usage);
    app.decorate('bridge', bridge);
    app.addHook('onClose', async () => {
      limitsCheck.abort();
      bridge.close();
      usage.close();
    });
  },
  { name: 'bridge', dependencies: ['registry', 'mcp-upstreams', 'announce', 'outbound'] },
);
