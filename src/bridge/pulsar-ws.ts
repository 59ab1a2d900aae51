/**
 * The registry's client of the tool-service wire contract over Pulsar: a JSON envelope published
 * to the request topic with a fresh `id` property, and response messages with that `id`
 * collected from the response topic until `end_of_stream`. The sockets, their pings and their
 * reconnection are src/pulsar/'s.
 *
 * One response subscription per response topic per process (opened, and confirmed open, before
 * the first request on it; it reconnects in the background), producers cached per request topic
 * (reopened when the next request needs them). Calls waiting on a connection that drops fail at
 * once rather than waiting out their timeout.
 *
 * Sizes: a call's JSON is checked, exactly, against what one message can carry
 * (src/pulsar/limits.ts), lowered to the broker's own limits when they could be read
 * (src/pulsar/broker-limits.ts), and refused before anything is sent.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { BrokerLimits } from '../pulsar/broker-limits.js';
import { Consumer } from '../pulsar/consumer.js';
import { DEFAULT_MAX_FRAME_BYTES, effectiveLimits, oversize, oversizeMessage, type BusLimits } from '../pulsar/limits.js';
import { Producer } from '../pulsar/producer.js';
import { BrokerUnavailableError, consumerUrl, producerUrl, publishFrame, type ReceivedMessage } from '../pulsar/wire.js';
import { BridgeUnavailableError, RequestTooLargeError, ToolServiceError } from './errors.js';

export interface PulsarWsOptions {
  /** e.g. ws://127.0.0.1:8080 */
  url: string;
  /** Sent as `Authorization: Bearer`; never logged. */
  token?: string | undefined;
  /** How long opening a producer or consumer may take. */
  connectTimeoutMs: number;
  pingIntervalMs?: number;
  /** Largest text frame the server takes (Pulsar's webSocketMaxTextFrameSize, 1 MiB by default). */
  maxFrameBytes?: number;
  /**
   * The broker's own limits, being read (src/pulsar/broker-limits.ts); undefined when they could
   * not be. Awaited before the first publish: a lower frame limit than `maxFrameBytes` wins.
   */
  brokerLimits?: Promise<BrokerLimits | undefined>;
  /** Largest total observation kept for one call. */
  maxResponseBytes?: number;
  /** Prefix of this process's response subscriptions; a unique suffix is added. */
  subscriptionPrefix?: string;
  log?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

/** One call as it goes on the bus. */
export interface BusRequest {
  /** The correlation id, sent as the `id` message property. */
  id: string;
  requestQueue: string;
  responseQueue: string;
  /** The envelope: `{user, config, arguments}` with config and arguments as JSON text. */
  body: Record<string, unknown>;
  /** Called with each `response` chunk as it arrives. */
  onChunk?: (text: string) => void;
  /** More message properties (the W3C `traceparent`); services ignore those they do not know. */
  properties?: Record<string, string>;
}

interface Pending {
  chunks: string[];
  bytes: number;
  onChunk: ((text: string) => void) | undefined;
  resolve: (text: string) => void;
  reject: (err: Error) => void;
}

/** The broker's words, as the bridge's error (503) that the call path maps. */
function bridgeError(err: unknown): unknown {
  return err instanceof BrokerUnavailableError ? new BridgeUnavailableError(err.message) : err;
}

/**
 * The service's `error` member as an error: `{type, message}` as the reference sends it, or a
 * plain string (its text kept as the message); anything else but null is an error too, its JSON
 * kept as the message.
 */
function serviceErrorOf(error: unknown): ToolServiceError {
  if (typeof error === 'string') return new ToolServiceError('tool-service-error', error);
  if (typeof error === 'object' && error !== null && !Array.isArray(error)) {
    const { type, message } = error as { type?: unknown; message?: unknown };
    const text = typeof message === 'string' ? message : message === undefined || message === null ? '' : JSON.stringify(message);
    return new ToolServiceError(typeof type === 'string' && type !== '' ? type : 'tool-service-error', text);
  }
  return new ToolServiceError('tool-service-error', JSON.stringify(error));
}

/** The process's subscription to one response topic; routes messages to calls by `id`. */
class ResponseSubscription {
  readonly pending = new Map<string, Pending>();
  readonly consumer: Consumer;
  readonly #maxResponseBytes: number;

  constructor(url: string, client: PulsarWsClient) {
    const { token, connectTimeoutMs, pingIntervalMs, maxResponseBytes } = client.options;
    this.#maxResponseBytes = maxResponseBytes ?? 16 * 1024 * 1024;
    this.consumer = new Consumer({ url, token, connectTimeoutMs, pingIntervalMs }, (message) => this.#received(message), {
      open: () => client.connectionChanged(),
      drop: () => {
        client.connectionChanged();
        this.failAll(new BridgeUnavailableError('the connection to the broker dropped'));
      },
    });
  }

  failAll(err: Error): void {
    for (const [id, call] of this.pending) this.#finish(id, call, err);
  }

  #received(message: ReceivedMessage): void {
    const id = message.properties.get('id');
    if (id === undefined) return;
    const call = this.pending.get(id);
    if (!call) return; // another caller's response: every caller sees every response
    // Bytes that are not UTF-8 are refused, never passed on as U+FFFD: the reference client's
    // response loop dies on them, and the observation would not be what the service meant.
    const text = message.text;
    if (text === undefined) {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not valid UTF-8'));
      return;
    }
    let response: { error?: unknown; response?: unknown; end_of_stream?: unknown };
    try {
      response = JSON.parse(text) as typeof response;
    } catch {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not JSON'));
      return;
    }
    if (typeof response !== 'object' || response === null) {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not a JSON object'));
      return;
    }
    if (response.error !== null && response.error !== undefined) {
      // On success `error` is null or absent; anything else, even {}, is an error.
      this.#finish(id, call, serviceErrorOf(response.error));
      return;
    }
    const chunk =
      typeof response.response === 'string' ? response.response : response.response === undefined ? '' : JSON.stringify(response.response);
    if (chunk !== '') {
      call.bytes += Buffer.byteLength(chunk);
      if (call.bytes > this.#maxResponseBytes) {
        this.#finish(
          id,
          call,
          new ToolServiceError('response-too-large', 'the tool service sent more than the registry keeps for one call'),
        );
        return;
      }
      call.chunks.push(chunk);
      call.onChunk?.(chunk);
    }
    if (response.end_of_stream === true) this.#finish(id, call);
  }

  #finish(id: string, call: Pending, err?: Error): void {
    this.pending.delete(id);
    if (err) call.reject(err);
    else call.resolve(call.chunks.join(''));
  }
}

/** A producer on one request topic, opened when a request needs it. */
class RequestProducer {
  readonly producer: Producer;

  constructor(url: string, client: PulsarWsClient) {
    const { token, connectTimeoutMs, pingIntervalMs } = client.options;
    this.producer = new Producer(
      { url, token, connectTimeoutMs, pingIntervalMs, reconnect: 'on-demand' },
      { open: () => client.connectionChanged(), drop: () => client.connectionChanged() },
    );
  }

  /** The frame for one message, checked against the limits first (nothing is sent). */
  frame(payload: string, properties: Record<string, string>, limits: BusLimits): { context: string; text: string } {
    const context = this.producer.nextContext();
    const facts = oversize(payload, limits, properties, context);
    if (facts) throw new RequestTooLargeError(oversizeMessage(facts), facts);
    return { context, text: publishFrame(payload, properties, context) };
  }

  /** Sends a frame made by `frame()`; resolves when the broker acknowledges it. */
  async publish(frame: { context: string; text: string }): Promise<void> {
    await this.producer.socket.ready();
    const ack = await this.producer.send(frame.text, frame.context);
    if (!ack.ok) throw new BridgeUnavailableError(`the broker did not take the request (${ack.result}: ${ack.errorMsg})`);
  }
}

export class PulsarWsClient {
  readonly options: PulsarWsOptions;
  readonly #subscriptionName: string;
  readonly #subscriptions = new Map<string, ResponseSubscription>();
  readonly #producers = new Map<string, RequestProducer>();
  #wasConnected = false;
  #limits: Promise<BusLimits> | undefined;

  constructor(options: PulsarWsOptions) {
    this.options = options;
    this.#subscriptionName = `${options.subscriptionPrefix ?? `tool-registry-${hostname()}`}--${randomUUID()}`;
  }

  /** Whether every response subscription is open (true when none exists yet and the last connect worked). */
  get connected(): boolean {
    const subs = [...this.#subscriptions.values()];
    return subs.length === 0 ? this.#wasConnected : subs.every((s) => s.consumer.socket.open);
  }

  get pendingCalls(): number {
    let n = 0;
    for (const s of this.#subscriptions.values()) n += s.pending.size;
    return n;
  }

  /** The limits a publish meets; waits, once, for the broker's own when they are being read. */
  limits(): Promise<BusLimits> {
    const own = this.options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    if (this.#limits === undefined) {
      // Never waited on for longer than a connection may take: past it the setting holds.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), this.options.connectTimeoutMs);
        timer.unref();
      });
      this.#limits = Promise.race([this.options.brokerLimits ?? Promise.resolve(undefined), gaveUp])
        .then(
          (broker) => effectiveLimits(own, broker),
          () => effectiveLimits(own, undefined),
        )
        .finally(() => clearTimeout(timer));
    }
    return this.#limits;
  }

  /** @internal called by the subscriptions and producers as their sockets open and drop */
  connectionChanged(): void {
    const was = this.connected;
    const sockets = [
      ...[...this.#subscriptions.values()].map((s) => s.consumer.socket),
      ...[...this.#producers.values()].map((p) => p.producer.socket),
    ];
    this.#wasConnected = sockets.some((socket) => socket.open);
    const now = this.connected;
    if (was && !now) this.options.log?.warn({ url: this.options.url }, 'lost the connection to the message bus; reconnecting with backoff');
    if (!was && now) this.options.log?.info({ url: this.options.url }, 'connected to the message bus');
  }

  /**
   * Publishes one request and resolves with the whole observation once `end_of_stream`
   * arrives. The caller owns the timeout (abort with `signal`).
   */
  async call(request: BusRequest, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    // Every wait below races the caller's abort (its timeout), so a call never outlives it.
    let onAbort = () => undefined as void;
    const aborted = new Promise<never>((_resolve, reject) => {
      onAbort = () => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    });
    aborted.catch(() => undefined);
    signal.addEventListener('abort', onAbort, { once: true });
    const subscription = this.#subscription(request.responseQueue);
    const producer = this.#producer(request.requestQueue);
    const id = request.id;
    try {
      // Too large a call is refused before anything is opened or sent.
      const frame = producer.frame(
        JSON.stringify(request.body),
        { ...request.properties, id },
        await Promise.race([this.limits(), aborted]),
      );
      // Subscribe before publishing: a non-persistent topic delivers only to subscriptions that
      // exist when the message arrives.
      await Promise.race([subscription.consumer.socket.ready(), aborted]);
      const result = new Promise<string>((resolve, reject) => {
        subscription.pending.set(id, { chunks: [], bytes: 0, onChunk: request.onChunk, resolve, reject });
      });
      // Settled by the races below or dropped with the call; never an unhandled rejection.
      result.catch(() => undefined);
      await Promise.race([producer.publish(frame), aborted]);
      return await Promise.race([result, aborted]);
    } catch (err) {
      throw bridgeError(err);
    } finally {
      subscription.pending.delete(id);
      signal.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    for (const subscription of this.#subscriptions.values()) {
      subscription.consumer.socket.close();
      subscription.failAll(new BridgeUnavailableError('the bus client is closing'));
    }
    for (const producer of this.#producers.values()) producer.producer.close();
    this.#subscriptions.clear();
    this.#producers.clear();
  }

  #subscription(topic: string): ResponseSubscription {
    let sub = this.#subscriptions.get(topic);
    if (!sub) {
      // NonDurable: the subscription goes away with the connection, so a restarted registry
      // leaves no orphaned subscription (and backlog) behind on a persistent response topic.
      const url = consumerUrl(this.options.url, topic, this.#subscriptionName, {
        subscriptionType: 'Exclusive',
        subscriptionMode: 'NonDurable',
      });
      sub = new ResponseSubscription(url, this);
      this.#subscriptions.set(topic, sub);
    }
    return sub;
  }

  #producer(topic: string): RequestProducer {
    let producer = this.#producers.get(topic);
    if (!producer) {
      producer = new RequestProducer(producerUrl(this.options.url, topic), this);
      this.#producers.set(topic, producer);
    }
    return producer;
  }
}
