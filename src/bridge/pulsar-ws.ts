/**
 * Apache Pulsar over its WebSocket API (pure JSON over `ws`), speaking the tool-service wire
 * contract: a JSON envelope published to the request topic with a fresh `id` property, and
 * response messages with that `id` collected from the response topic until `end_of_stream`.
 *
 * One response subscription per response topic per process (opened, and confirmed open, before
 * the first request on it), producers cached per request topic, every message acknowledged at
 * once, a ping every 30 s, and reconnection with backoff after any close. Calls waiting on a
 * connection that drops fail at once rather than waiting out their timeout.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import WebSocket from 'ws';
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

const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 10_000;

/** Opens one WebSocket to the Pulsar API; resolves once open, rejects fast on refusal. */
function openSocket(url: string, token: string | undefined, timeoutMs: number): Promise<WebSocket> {
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
      resolve(ws);
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
  #backoffMs = BACKOFF_MIN_MS;
  #retryTimer: NodeJS.Timeout | null = null;
  #pingTimer: NodeJS.Timeout | null = null;
  #alive = true;
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
    this.#stopPing();
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
    this.#backoffMs = BACKOFF_MIN_MS;
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
    ws.on('pong', () => {
      this.#alive = true;
    });
    // Pulsar closes with codes 1-8, which ws reports as errors: every close means reconnect.
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.#stopPing();
      this.client.connectionChanged();
      this.onDisconnect(new BridgeUnavailableError('the connection to the broker dropped'));
      this.#scheduleReconnect();
    });
    this.#startPing(ws);
  }

  #scheduleReconnect(): void {
    if (this.#closed || this.#retryTimer || !this.wantsConnection()) return;
    const delay = this.#backoffMs * (0.5 + Math.random() / 2);
    this.#backoffMs = Math.min(this.#backoffMs * 2, BACKOFF_MAX_MS);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      this.ready().catch(() => undefined);
    }, delay).unref();
  }

  /** Whether to reconnect in the background (consumers always; producers on demand). */
  protected wantsConnection(): boolean {
    return true;
  }

  #startPing(ws: WebSocket): void {
    this.#alive = true;
    this.#pingTimer = setInterval(() => {
      if (!this.#alive) {
        ws.terminate(); // no pong since the last ping: treat as dropped
        return;
      }
      this.#alive = false;
      ws.ping();
    }, this.client.options.pingIntervalMs ?? 30_000).unref();
  }

  #stopPing(): void {
    if (this.#pingTimer) clearInterval(this.#pingTimer);
    this.#pingTimer = null;
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
    let message: { error?: unknown; response?: unknown; end_of_stream?: unknown };
    try {
      message = JSON.parse(Buffer.from(String(frame['payload'] ?? ''), 'base64').toString('utf8')) as typeof message;
    } catch {
      this.#finish(id, call, new ToolServiceError('invalid-response', 'the tool service sent a response that is not JSON'));
      return;
    }
    if (message.error !== null && message.error !== undefined) {
      // On success `error` is null or absent; anything else, even {}, is an error.
      const error = message.error as { type?: unknown; message?: unknown };
      this.#finish(id, call, new ToolServiceError(String(error.type ?? 'tool-service-error'), String(error.message ?? '')));
      return;
    }
    const text = typeof message.response === 'string' ? message.response : message.response === undefined ? '' : JSON.stringify(message.response);
    if (text !== '') {
      call.bytes += Buffer.byteLength(text);
      if (call.bytes > (this.client.options.maxResponseBytes ?? 16 * 1024 * 1024)) {
        this.#finish(id, call, new ToolServiceError('response-too-large', 'the tool service sent more than the registry keeps for one call'));
        return;
      }
      call.chunks.push(text);
      call.onChunk?.(text);
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

  async publish(payload: string, properties: Record<string, string>): Promise<void> {
    await this.ready();
    const context = String(++this.#context);
    const frame = JSON.stringify({ payload: Buffer.from(payload).toString('base64'), properties, context });
    if (Buffer.byteLength(frame) > (this.client.options.maxFrameBytes ?? 1024 * 1024)) {
      throw new RequestTooLargeError('the request is larger than the bus takes in one message');
    }
    const acked = new Promise<void>((resolve, reject) => this.#acks.set(context, { resolve, reject }));
    this.ws?.send(frame);
    return acked;
  }

  protected onFrame(frame: Record<string, unknown>): void {
    const context = frame['context'];
    if (typeof context !== 'string') return;
    const ack = this.#acks.get(context);
    if (!ack) return;
    this.#acks.delete(context);
    if (frame['result'] === 'ok') ack.resolve();
    else ack.reject(new BridgeUnavailableError(`the broker did not take the request (${String(frame['result'])}: ${String(frame['errorMsg'] ?? '')})`));
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
    const id = request.id;
    try {
      // Subscribe before publishing: a non-persistent topic delivers only to subscriptions that
      // exist when the message arrives.
      await Promise.race([subscription.ready(), aborted]);
      const result = new Promise<string>((resolve, reject) => {
        subscription.pending.set(id, { chunks: [], bytes: 0, onChunk: request.onChunk, resolve, reject });
      });
      // Settled by the races below or dropped with the call; never an unhandled rejection.
      result.catch(() => undefined);
      await Promise.race([this.#producer(request.requestQueue).publish(JSON.stringify(request.body), { ...request.properties, id }), aborted]);
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
