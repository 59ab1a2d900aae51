/**
 * Apache Pulsar over its WebSocket API (pure JSON over `ws`), speaking the tool-service wire
 * contract: a JSON envelope published to the request topic with a fresh `id` property, and
 * response messages with that `id` collected from the response topic until `end_of_stream`.
 *
 * One response subscription per response topic per process (opened, and confirmed open, before
 * the first request on it), producers cached per request topic, every message acknowledged at
 * once, a ping every 30 s, and reconnection with backoff after any close. Calls waiting on a
 * connection that drops fail at once rather than waiting out their timeout.
 *
 * Sizes: a payload travels base64-encoded inside a JSON text frame, and the broker parses text
 * frames up to its `webSocketMaxTextFrameSize` (1 MiB by default), closing the socket on a larger
 * one. So a call's JSON is checked, exactly, against what one frame of `maxFrameBytes` can carry
 * (about 786 KB at 1 MiB), lowered to the broker's own limits when they could be read
 * (src/bridge/broker-limits.ts), and refused before anything is sent.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import WebSocket from 'ws';
import type { BrokerLimits } from './broker-limits.js';
import { BridgeUnavailableError, RequestTooLargeError, ToolServiceError, type MessageSizeFacts } from './errors.js';

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
   * The broker's own limits, being read (src/bridge/broker-limits.ts); undefined when they could
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

/** `non-persistent://tg/request/joke` -> `non-persistent/tg/request/joke`, local name encoded. */
export function topicPath(topic: string): string {
  const match = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/.exec(topic);
  if (!match) throw new Error(`not a Pulsar topic name: ${topic}`);
  const [, domain, tenant, namespace, local] = match as unknown as [string, string, string, string, string];
  return `${domain}/${tenant}/${namespace}/${encodeURIComponent(local)}`;
}

/** Pulsar's default webSocketMaxTextFrameSize. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

/**
 * Room kept beside the payload under the broker's maxMessageSize, which its producer compares
 * with the message's header and payload together. Measured on Pulsar 4.0.8 with maxMessageSize
 * 5242880: a payload of 5242880 bytes was refused as 5242919 with its header (a one-character
 * `id` property), 50 bytes less went through; a uuid `id` and a `traceparent` add under 150.
 */
const MESSAGE_HEADER_ALLOWANCE = 1024;

/** The limits one publish meets. */
export interface BusLimits {
  /** The largest text frame: the setting, or the broker's webSocketMaxTextFrameSize when lower. */
  maxFrameBytes: number;
  frameFrom: 'setting' | 'broker';
  /** The broker's maxMessageSize, when read from it. */
  maxMessageBytes: number | undefined;
}

/** The frame limit in force: the setting, lowered to the broker's when it is lower. */
export function effectiveLimits(maxFrameBytes: number, broker: BrokerLimits | undefined): BusLimits {
  if (broker && broker.maxTextFrameBytes < maxFrameBytes) {
    return { maxFrameBytes: broker.maxTextFrameBytes, frameFrom: 'broker', maxMessageBytes: broker.maxMessageBytes };
  }
  return { maxFrameBytes, frameFrom: 'setting', maxMessageBytes: broker?.maxMessageBytes };
}

/** A publish frame: the payload's UTF-8 bytes in base64, the properties, the ack's context. */
export function publishFrame(payload: string, properties: Record<string, string>, context: string): string {
  return JSON.stringify({ payload: Buffer.from(payload).toString('base64'), properties, context });
}

/**
 * The most bytes of payload one publish frame can carry with these properties and context:
 * the frame less everything but the base64 text, of which every 4 characters hold 3 bytes
 * (base64 characters need no escaping in JSON, so this is exact); then the broker's
 * maxMessageSize, less room for the message header, when known.
 */
export function payloadLimit(
  limits: BusLimits,
  properties: Record<string, string>,
  context: string,
): { bytes: number; boundBy: 'frame' | 'message' } {
  const envelope = Buffer.byteLength(JSON.stringify({ payload: '', properties, context }));
  const byFrame = Math.max(0, Math.floor((limits.maxFrameBytes - envelope) / 4) * 3);
  const byMessage = limits.maxMessageBytes === undefined ? Infinity : Math.max(0, limits.maxMessageBytes - MESSAGE_HEADER_ALLOWANCE);
  return byMessage < byFrame ? { bytes: byMessage, boundBy: 'message' } : { bytes: byFrame, boundBy: 'frame' };
}

/** The facts of a payload too large for one message, or undefined when it fits. */
export function oversize(
  payload: string,
  limits: BusLimits,
  properties: Record<string, string>,
  context: string,
): MessageSizeFacts | undefined {
  const bytes = Buffer.byteLength(payload);
  const limit = payloadLimit(limits, properties, context);
  if (bytes <= limit.bytes) return undefined;
  return { bytes, limitBytes: limit.bytes, boundBy: limit.boundBy, ...limits };
}

/** A library-neutral account of a payload too large; the registry's bridge words its own. */
export function oversizeMessage(facts: MessageSizeFacts): string {
  const bound =
    facts.boundBy === 'frame'
      ? `base64-encoded in a WebSocket text frame of at most ${facts.maxFrameBytes} bytes`
      : `under the broker's maxMessageSize of ${String(facts.maxMessageBytes)} bytes`;
  return `the message is ${facts.bytes} bytes of JSON, more than the ${facts.limitBytes} one message on the bus carries (${bound})`;
}

/** Jittered exponential backoff: each delay is drawn from [d/2, d], d doubling from min to max. */
export class Backoff {
  #next: number;
  constructor(
    readonly minMs = 250,
    readonly maxMs = 10_000,
  ) {
    this.#next = minMs;
  }

  next(): number {
    const delay = this.#next * (0.5 + Math.random() / 2);
    this.#next = Math.min(this.#next * 2, this.maxMs);
    return Math.round(delay);
  }

  reset(): void {
    this.#next = this.minMs;
  }
}

/**
 * Pings every `intervalMs` (the broker closes sessions idle for webSocketSessionIdleTimeoutMillis,
 * 5 minutes by default) and terminates the socket when a ping went unanswered. Returns the stop.
 */
export function keepAlive(ws: WebSocket, intervalMs: number): () => void {
  let alive = true;
  const onPong = () => {
    alive = true;
  };
  ws.on('pong', onPong);
  const timer = setInterval(() => {
    if (!alive) {
      ws.terminate(); // no pong since the last ping: treat as dropped
      return;
    }
    alive = false;
    ws.ping();
  }, intervalMs).unref();
  return () => {
    clearInterval(timer);
    ws.off('pong', onPong);
  };
}

/** Strict UTF-8: bytes that are not valid UTF-8 throw instead of becoming U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A message payload (base64) as text, or undefined when its bytes are not valid UTF-8. */
export function payloadText(base64: string): string | undefined {
  try {
    return UTF8.decode(Buffer.from(base64, 'base64'));
  } catch {
    return undefined;
  }
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

/**
 * Opens one WebSocket to the Pulsar API; resolves once open, rejects fast on refusal.
 *
 * A reader or consumer is sent messages as soon as the broker has made it, and a frame can come
 * in the same network read as the upgrade's answer, before the caller's `await` has resumed and
 * added its 'message' listener: ws would emit it to nobody. So the socket is paused when it
 * opens and resumed a macrotask later, after the caller's continuation (a microtask) has run;
 * callers add their 'message' listener right after the `await`, before awaiting anything else.
 */
export function openSocket(url: string, token: string | undefined, timeoutMs: number): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, {
      handshakeTimeout: timeoutMs,
      ...(token !== undefined && { headers: { authorization: `Bearer ${token}` } }),
    });
    const fail = (reason: string) => {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
      reject(new BridgeUnavailableError(reason));
    };
    ws.once('open', () => {
      ws.removeAllListeners('error');
      ws.removeAllListeners('unexpected-response');
      ws.pause();
      resolve(ws);
      setImmediate(() => {
        if (ws.readyState === WebSocket.OPEN) ws.resume();
      });
    });
    // Pulsar refuses a producer or consumer with an HTTP status on the upgrade request.
    ws.once('unexpected-response', (_req, res) => fail(`the broker refused ${new URL(url).pathname} with HTTP ${res.statusCode}`));
    ws.once('error', (err) => fail(`cannot reach the broker: ${err.message}`));
  });
}

/** Keeps one socket open with reconnection and pings; subclasses handle frames. */
abstract class Channel {
  protected ws: WebSocket | null = null;
  #connecting: Promise<void> | null = null;
  readonly #backoff = new Backoff();
  #retryTimer: NodeJS.Timeout | null = null;
  #stopPing: (() => void) | null = null;
  #closed = false;

  constructor(
    protected readonly client: PulsarWsClient,
    readonly url: string,
  ) {}

  get open(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Resolves when the socket is open; starts an attempt now if none is under way. */
  ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new BridgeUnavailableError('the bus client is closed'));
    if (this.open) return Promise.resolve();
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  close(): void {
    this.#closed = true;
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#stopPing?.();
    this.ws?.removeAllListeners();
    this.ws?.on('error', () => undefined);
    this.ws?.terminate();
    this.ws = null;
    this.onDisconnect(new BridgeUnavailableError('the bus client is closing'));
  }

  protected abstract onFrame(frame: Record<string, unknown>): void;
  /** The socket dropped: fail whatever waits on it. */
  protected abstract onDisconnect(err: Error): void;

  async #connect(): Promise<void> {
    if (this.#retryTimer) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = null;
    }
    let ws: WebSocket;
    try {
      ws = await openSocket(this.url, this.client.options.token, this.client.options.connectTimeoutMs);
    } catch (err) {
      this.#scheduleReconnect();
      throw err;
    }
    if (this.#closed) {
      ws.terminate();
      throw new BridgeUnavailableError('the bus client is closed');
    }
    this.ws = ws;
    this.#backoff.reset();
    this.client.connectionChanged();
    ws.on('message', (data) => {
      let frame: unknown;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        return;
      }
      if (frame !== null && typeof frame === 'object') this.onFrame(frame as Record<string, unknown>);
    });
    // Pulsar closes with codes 1-8, which ws reports as errors: every close means reconnect.
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.#stopPing?.();
      this.client.connectionChanged();
      this.onDisconnect(new BridgeUnavailableError('the connection to the broker dropped'));
      this.#scheduleReconnect();
    });
    this.#stopPing = keepAlive(ws, this.client.options.pingIntervalMs ?? 30_000);
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer || !this.wantsConnection()) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      this.ready().catch(() => undefined);
    }, this.#backoff.next()).unref();
  }

  /** Whether to reconnect in the background (consumers always; producers on demand). */
  protected wantsConnection(): boolean {
    return true;
  }
}

/** The process's subscription to one response topic; routes messages to calls by `id`. */
class ResponseSubscription extends Channel {
  readonly pending = new Map<string, Pending>();

  protected onFrame(frame: Record<string, unknown>): void {
    const messageId = frame['messageId'];
    if (typeof messageId !== 'string') return;
    // Acknowledge at once, even on non-persistent topics: the server stops delivering after
    // receiverQueueSize unacknowledged messages.
    this.ws?.send(JSON.stringify({ messageId }));
    const properties = frame['properties'] as Record<string, unknown> | undefined;
    const id = properties?.['id'];
    if (typeof id !== 'string') return;
    const call = this.pending.get(id);
    if (!call) return; // another caller's response: every caller sees every response
    // Bytes that are not UTF-8 are refused, never passed on as U+FFFD: the reference client's
    // response loop dies on them, and the observation would not be what the service meant.
    const text = payloadText(String(frame['payload'] ?? ''));
    if (text === undefined) {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not valid UTF-8'));
      return;
    }
    let message: { error?: unknown; response?: unknown; end_of_stream?: unknown };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not JSON'));
      return;
    }
    if (typeof message !== 'object' || message === null) {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not a JSON object'));
      return;
    }
    if (message.error !== null && message.error !== undefined) {
      // On success `error` is null or absent; anything else, even {}, is an error.
      this.#finish(id, call, serviceErrorOf(message.error));
      return;
    }
    const chunk =
      typeof message.response === 'string' ? message.response : message.response === undefined ? '' : JSON.stringify(message.response);
    if (chunk !== '') {
      call.bytes += Buffer.byteLength(chunk);
      if (call.bytes > (this.client.options.maxResponseBytes ?? 16 * 1024 * 1024)) {
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
    if (message.end_of_stream === true) this.#finish(id, call);
  }

  protected onDisconnect(err: Error): void {
    for (const [id, call] of this.pending) this.#finish(id, call, err);
  }

  #finish(id: string, call: Pending, err?: Error): void {
    this.pending.delete(id);
    if (err) call.reject(err);
    else call.resolve(call.chunks.join(''));
  }
}

/** A producer on one request topic; publishes are matched to their acks by `context`. */
class RequestProducer extends Channel {
  readonly #acks = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  #context = 0;

  /** The frame for one message, checked against the limits first (nothing is sent). */
  frame(payload: string, properties: Record<string, string>, limits: BusLimits): { context: string; text: string } {
    const context = String(++this.#context);
    const facts = oversize(payload, limits, properties, context);
    if (facts) throw new RequestTooLargeError(oversizeMessage(facts), facts);
    return { context, text: publishFrame(payload, properties, context) };
  }

  /** Sends a frame made by `frame()`; resolves when the broker acknowledges it. */
  async publish(frame: { context: string; text: string }): Promise<void> {
    await this.ready();
    const acked = new Promise<void>((resolve, reject) => this.#acks.set(frame.context, { resolve, reject }));
    this.ws?.send(frame.text);
    return acked;
  }

  protected onFrame(frame: Record<string, unknown>): void {
    const context = frame['context'];
    if (typeof context !== 'string') return;
    const ack = this.#acks.get(context);
    if (!ack) return;
    this.#acks.delete(context);
    if (frame['result'] === 'ok') ack.resolve();
    else
      ack.reject(
        new BridgeUnavailableError(`the broker did not take the request (${String(frame['result'])}: ${String(frame['errorMsg'] ?? '')})`),
      );
  }

  protected onDisconnect(err: Error): void {
    for (const ack of this.#acks.values()) ack.reject(err);
    this.#acks.clear();
  }

  /** Producers reconnect when the next request needs them. */
  protected override wantsConnection(): boolean {
    return false;
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
    return subs.length === 0 ? this.#wasConnected : subs.every((s) => s.open);
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

  /** @internal called by channels */
  connectionChanged(): void {
    const was = this.connected;
    this.#wasConnected = [...this.#subscriptions.values(), ...this.#producers.values()].some((c) => c.open);
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
      await Promise.race([subscription.ready(), aborted]);
      const result = new Promise<string>((resolve, reject) => {
        subscription.pending.set(id, { chunks: [], bytes: 0, onChunk: request.onChunk, resolve, reject });
      });
      // Settled by the races below or dropped with the call; never an unhandled rejection.
      result.catch(() => undefined);
      await Promise.race([producer.publish(frame), aborted]);
      return await Promise.race([result, aborted]);
    } finally {
      subscription.pending.delete(id);
      signal.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    for (const c of [...this.#subscriptions.values(), ...this.#producers.values()]) c.close();
    this.#subscriptions.clear();
    this.#producers.clear();
  }

  #subscription(topic: string): ResponseSubscription {
    let sub = this.#subscriptions.get(topic);
    if (!sub) {
      // NonDurable: the subscription goes away with the connection, so a restarted registry
      // leaves no orphaned subscription (and backlog) behind on a persistent response topic.
      const url = `${this.#base()}/ws/v2/consumer/${topicPath(topic)}/${encodeURIComponent(this.#subscriptionName)}?subscriptionType=Exclusive&subscriptionMode=NonDurable`;
      sub = new ResponseSubscription(this, url);
      this.#subscriptions.set(topic, sub);
    }
    return sub;
  }

  #producer(topic: string): RequestProducer {
    let producer = this.#producers.get(topic);
    if (!producer) {
      producer = new RequestProducer(this, `${this.#base()}/ws/v2/producer/${topicPath(topic)}`);
      this.#producers.set(topic, producer);
    }
    return producer;
  }

  #base(): string {
    return this.options.url.replace(/\/+$/, '');
  }
}
