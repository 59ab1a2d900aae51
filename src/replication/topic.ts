/**
 * The replication topic over Pulsar's WebSocket API: one producer (kept open, so that whether
 * writes can go is known at once) and one reader from a given message id, both reconnecting with
 * backoff after any close. Built from the bridge's Pulsar pieces (src/bridge/pulsar-ws.ts).
 *
 * Why a reader on the whole topic and not a compacted read: the WebSocket API has no
 * `readCompacted` (Pulsar 4.0's ReaderHandler and ConsumerHandler take no such parameter), and a
 * topic of writes as sent, decided at apply time, cannot be compacted anyway without losing which
 * writes were refused. So the topic keeps every message (retention without limit, set by
 * ensureTopic in src/replication/admin.ts) and a new replica reads it from the start.
 */
import type WebSocket from 'ws';
import { Backoff, keepAlive, openSocket, payloadText, topicPath } from '../bridge/pulsar-ws.js';

export interface TopicOptions {
  /** Pulsar's WebSocket API, e.g. ws://127.0.0.1:8080. */
  url: string;
  token?: string | undefined;
  topic: string;
  connectTimeoutMs: number;
  /** Reader name, for the broker's stats. */
  name: string;
  log?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
}

export interface TopicMessage {
  messageId: string;
  /** The payload's bytes, as published (what its MAC covers). */
  payload: Buffer;
  /** The payload as text; undefined when it is not UTF-8. */
  text: string | undefined;
  /** The message's properties (string values only). */
  properties: ReadonlyMap<string, string>;
  /** When the broker's WebSocket service took it (ISO 8601), the same for every reader. */
  publishTime: string | undefined;
}

/** A broker that cannot take or confirm a message right now. */
export class TopicUnavailableError extends Error {
  override readonly name = 'TopicUnavailableError';
}

/** A message the broker refused for its size (past its maxMessageSize): retrying will not help. */
export class MessageTooLargeError extends Error {
  override readonly name = 'MessageTooLargeError';
}

function base(url: string): string {
  return url.replace(/\/+$/, '');
}

function parseFrame(data: WebSocket.RawData): Record<string, unknown> | undefined {
  try {
    const frame: unknown = JSON.parse(String(data));
    return typeof frame === 'object' && frame !== null && !Array.isArray(frame) ? (frame as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A frame's `properties`, its string values only, in a Map (the sender names the keys). */
function propertiesOf(value: unknown): ReadonlyMap<string, string> {
  const properties = new Map<string, string>();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return properties;
  for (const [key, v] of Object.entries(value)) if (typeof v === 'string') properties.set(key, v);
  return properties;
}

/** One socket kept open: connects, and after any close reconnects with backoff until stopped. */
abstract class Link {
  protected ws: WebSocket | null = null;
  readonly #backoff = new Backoff(100, 5_000);
  #timer: NodeJS.Timeout | null = null;
  #stopPing: (() => void) | null = null;
  #stopped = false;
  #wasOpen = false;

  constructor(protected readonly options: TopicOptions) {}

  get open(): boolean {
    return this.ws !== null && this.ws.readyState === 1;
  }

  start(): void {
    this.#stopped = false;
    void this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#drop();
  }

  /** Closes the socket now (it reconnects, from where the reader is, unless stopped). */
  restart(): void {
    this.#drop();
    if (!this.#stopped) this.#schedule();
  }

  protected abstract url(): string;
  protected abstract onFrame(frame: Record<string, unknown>): void;
  protected abstract onClose(): void;

  async #connect(): Promise<void> {
    this.#timer = null;
    if (this.#stopped) return;
    let ws: WebSocket;
    try {
      ws = await openSocket(this.url(), this.options.token, this.options.connectTimeoutMs);
    } catch (err) {
      if (this.#wasOpen)
        this.options.log?.warn(
          { err: (err as Error).message, topic: this.options.topic },
          'replication: cannot reach the broker; retrying',
        );
      this.#wasOpen = false;
      this.#schedule();
      return;
    }
    if (this.#stopped) {
      ws.terminate();
      return;
    }
    this.ws = ws;
    this.#backoff.reset();
    if (!this.#wasOpen)
      this.options.log?.info(
        { topic: this.options.topic },
        `replication: ${this.constructor.name === 'TopicReader' ? 'reader' : 'producer'} connected`,
      );
    this.#wasOpen = true;
    this.#stopPing = keepAlive(ws, 10_000);
    ws.on('message', (data) => {
      const frame = parseFrame(data);
      if (frame) this.onFrame(frame);
    });
    // Pulsar closes with codes ws calls invalid: every close or error means reconnect.
    ws.on('error', () => undefined);
    ws.on('close', () => {
      if (this.ws !== ws) return;
      this.#drop();
      this.#schedule();
    });
  }

  #drop(): void {
    const ws = this.ws;
    this.ws = null;
    this.#stopPing?.();
    this.#stopPing = null;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
      ws.terminate();
      this.onClose();
    }
  }

  #schedule(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => void this.#connect(), this.#backoff.next());
    this.#timer.unref();
  }
}

/** Publishes messages; each resolves with its message id once the broker has persisted it. */
export class TopicProducer extends Link {
  readonly #acks = new Map<string, { resolve: (messageId: string) => void; reject: (err: Error) => void }>();
  #context = 0;

  protected url(): string {
    return `${base(this.options.url)}/ws/v2/producer/${topicPath(this.options.topic)}?sendTimeoutMillis=${Math.max(1000, this.options.connectTimeoutMs)}`;
  }

  /** Fails at once when the producer is not connected: the caller answers 503 without waiting. */
  publish(payload: Buffer, key: string, properties: Record<string, string> = {}): Promise<string> {
    const ws = this.ws;
    if (!ws || !this.open) return Promise.reject(new TopicUnavailableError('the replication topic is unreachable'));
    const context = String(++this.#context);
    return new Promise<string>((resolve, reject) => {
      this.#acks.set(context, { resolve, reject });
      ws.send(JSON.stringify({ payload: payload.toString('base64'), properties, key, context }));
    });
  }

  protected onFrame(frame: Record<string, unknown>): void {
    const context = frame['context'];
    const ack = typeof context === 'string' ? this.#acks.get(context) : undefined;
    if (!ack) return;
    this.#acks.delete(context as string);
    const messageId = frame['messageId'];
    if (frame['result'] === 'ok' && typeof messageId === 'string') {
      ack.resolve(messageId);
      return;
    }
    const reason = `${String(frame['result'])}: ${String(frame['errorMsg'] ?? '')}`;
    // Pulsar words it "Message size is bigger than ..." or "... exceeds ... bytes".
    if (/size|exceed|too large|too big/i.test(String(frame['errorMsg'] ?? ''))) ack.reject(new MessageTooLargeError(reason));
    else ack.reject(new TopicUnavailableError(`the broker did not take the write (${reason})`));
  }

  protected onClose(): void {
    // A publish without its acknowledgement may or may not have been persisted: its caller hears
    // 503, and the write still takes effect if it was (puts and deletes are safe to retry).
    for (const ack of this.#acks.values())
      ack.reject(new TopicUnavailableError('the connection to the broker dropped before it confirmed the write'));
    this.#acks.clear();
  }
}

/**
 * Reads the topic in order from after `from()` (a message id, or the start), acknowledging each
 * message once `onMessage`'s promise settles, so that at most the broker's receiver queue waits
 * unapplied. After a reconnect it reads again from after `from()`.
 */
export class TopicReader extends Link {
  constructor(
    options: TopicOptions,
    private readonly from: () => string | null,
    private readonly onMessage: (message: TopicMessage) => Promise<void>,
  ) {
    super(options);
  }

  protected url(): string {
    const from = this.from();
    const start = from === null ? 'earliest' : encodeURIComponent(from);
    return `${base(this.options.url)}/ws/v2/reader/${topicPath(this.options.topic)}?messageId=${start}&readerName=${encodeURIComponent(this.options.name)}&receiverQueueSize=1000`;
  }

  protected onFrame(frame: Record<string, unknown>): void {
    const messageId = frame['messageId'];
    if (typeof messageId !== 'string') return;
    const ws = this.ws;
    const base64 = String(frame['payload'] ?? '');
    const message: TopicMessage = {
      messageId,
      payload: Buffer.from(base64, 'base64'),
      text: payloadText(base64),
      properties: propertiesOf(frame['properties']),
      publishTime: typeof frame['publishTime'] === 'string' ? frame['publishTime'] : undefined,
    };
    const ack = () => {
      if (ws && this.ws === ws && ws.readyState === 1) ws.send(JSON.stringify({ messageId }));
    };
    this.onMessage(message).then(ack, ack);
  }

  protected onClose(): void {}
}
