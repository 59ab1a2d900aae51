/**
 * Message-bus tools: the reference tool-service wire (an envelope with config and arguments as
 * JSON text, correlated by `id`) over Pulsar's WebSocket API.
 */
import { configValuesOf } from '../model/resolve.js';
import type { BusTool, ToolService } from '../model/schemas.js';
import type { MessageSizeFacts } from '../pulsar/limits.js';
import { BridgeUnavailableError, RequestTooLargeError } from './errors.js';
import type { PulsarWsClient } from './pulsar-ws.js';
import { traceTransport } from './tracing.js';
import type { ToolTransport, TransportCall, TransportState } from './transport.js';

/** The 413's detail: the call's size, the limit, and the setting or broker value behind it. */
function tooLargeDetail(facts: MessageSizeFacts): string {
  const bound =
    facts.boundBy === 'message'
      ? `the broker's maxMessageSize, ${String(facts.maxMessageBytes)} bytes, less room for the message header`
      : facts.frameFrom === 'broker'
        ? `base64 in one WebSocket frame of at most ${facts.maxFrameBytes} bytes, the broker's webSocketMaxTextFrameSize`
        : `base64 in one WebSocket frame of at most ${facts.maxFrameBytes} bytes, PULSAR_WS_MAX_FRAME_BYTES`;
  return `the call is ${facts.bytes} bytes of JSON, more than the ${facts.limitBytes} bytes one message on the bus carries (${bound})`;
}

export class BusTransport implements ToolTransport {
  readonly #client: PulsarWsClient | undefined;
  readonly #lookupService: (id: string) => ToolService | undefined;

  /** Without a client (no PULSAR_WS_URL), every call fails fast with 503. */
  constructor(client: PulsarWsClient | undefined, lookupService: (id: string) => ToolService | undefined) {
    this.#client = client;
    this.#lookupService = lookupService;
  }

  get state(): TransportState {
    if (!this.#client) return 'not-configured';
    return this.#client.connected ? 'connected' : 'disconnected';
  }

  async call(call: TransportCall): Promise<string> {
    const client = this.#client;
    if (!client) throw new BridgeUnavailableError('no message bus is configured (set PULSAR_WS_URL)');
    const serviceId = call.tool.serviceId ?? '';
    const service = this.#lookupService(serviceId);
    if (!service) throw new BridgeUnavailableError(`tool service "${serviceId}" is not registered`);
    const requestQueue = service['request-queue'];
    // The messaging conventions' client span: `send {destination}`, the correlation id as the
    // conversation id; its `traceparent` goes as a message property beside `id`.
    const attributes = {
      'messaging.system': 'pulsar',
      'messaging.operation.type': 'send',
      'messaging.destination.name': requestQueue,
      'messaging.message.conversation_id': call.id,
    };
    // The reference wire: config and arguments as JSON text; `user` carries the caller to
    // services that read it and is ignored by those that do not.
    const body = {
      user: call.sub ?? '',
      config: JSON.stringify(configValuesOf(call.descriptor as BusTool, service)),
      arguments: JSON.stringify(call.arguments),
    };
    return traceTransport(`send ${requestQueue}`, attributes, async (properties) => {
      try {
        return await client.call(
          {
            id: call.id,
            requestQueue,
            responseQueue: service['response-queue'],
            body,
            ...(call.onChunk && { onChunk: call.onChunk }),
            properties,
          },
          call.signal,
        );
      } catch (err) {
        // Named in the registry's terms: the setting, or the broker value, that set the limit.
        if (err instanceof RequestTooLargeError && err.facts) throw new RequestTooLargeError(tooLargeDetail(err.facts), err.facts);
        throw err;
      }
    });
  }

  close(): void {
    this.#client?.close();
  }
}
