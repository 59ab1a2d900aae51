/**
 * The replication topic over Pulsar's WebSocket API: one producer (kept open, so that whether
 * writes can go is known at once) and one reader from a given message id, both reconnecting with
 * backoff after any close (src/pulsar/).
 *
 * Why a reader on the whole topic and not a compacted read: the WebSocket API has no
 * `readCompacted` (Pulsar 4.0's ReaderHandler and ConsumerHandler take no such parameter), and a
 * topic of writes as sent, decided at apply time, cannot be compacted anyway without losing which
 * writes were refused. So the topic keeps every message (retention without limit, set by
 * ensureTopic in src/replication/admin.ts) and a new replica reads it from the start.
 */
import { Consumer } from '../pulsar/consumer.js';
import { Producer } from '../pulsar/producer.js';
import type { SocketEvents, SocketOptions } from '../pulsar/socket.js';
import { producerUrl, publishFrame, readerUrl, type ReceivedMessage } from '../pulsar/wire.js';

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

/** A broker that cannot take or confirm a message right now. */
export class TopicUnavailableError extends Error {
  override readonly name = 'TopicUnavailableError';
}

/** A message the broker refused for its size (past its maxMessageSize): retrying will not help. */
export class MessageTooLargeError extends Error {
  override readonly name = 'MessageTooLargeError';
}

/**
 * The socket settings both share: pings every 10 s, so that a dead broker shows within 20 s
 * rather than 60, and a reconnection from 100 ms, since writes answer 503 meanwhile. Logs a
 * connection the first time and after it had failed, and the first failure after it was open.
 */
function linkOf(
  options: TopicOptions,
  what: 'reader' | 'producer',
  url: SocketOptions['url'],
): [SocketOptions, Omit<SocketEvents, 'frame'>] {
  const { token, topic, connectTimeoutMs, log } = options;
  let wasOpen = false;
  return [
    { url, token, connectTimeoutMs, pingIntervalMs: 10_000, backoff: { minMs: 100, maxMs: 5_000 } },
    {
      open: () => {
        if (!wasOpen) log?.info({ topic }, `replication: ${what} connected`);
        wasOpen = true;
      },
      retry: ({ dropped, reason }) => {
        if (dropped) return;
        if (wasOpen) log?.warn({ err: reason, topic }, 'replication: cannot reach the broker; retrying');
        wasOpen = false;
      },
    },
  ];
}

/** Publishes messages; each resolves with its message id once the broker has persisted it. */
export class TopicProducer {
  readonly #producer: Producer;

  constructor(options: TopicOptions) {
    const url = producerUrl(options.url, options.topic, { sendTimeoutMillis: Math.max(1000, options.connectTimeoutMs) });
    this.#producer = new Producer(...linkOf(options, 'producer', url));
  }

  get open(): boolean {
    return this.#producer.socket.open;
  }

  start(): void {
    this.#producer.socket.start();
  }

  stop(): void {
    this.#producer.close();
  }

  /** Fails at once when the producer is not connected: the caller answers 503 without waiting. */
  async publish(payload: Buffer, key: string, properties: Record<string, string> = {}): Promise<string> {
    if (!this.open) throw new TopicUnavailableError('the replication topic is unreachable');
    const context = this.#producer.nextContext();
    let ack;
    try {
      ack = await this.#producer.send(publishFrame(payload, properties, context, key), context);
    } catch {
      // A publish without its acknowledgement may or may not have been persisted: its caller
      // hears 503, and the write still takes effect if it was (puts and deletes are safe to retry).
      throw new TopicUnavailableError('the connection to the broker dropped before it confirmed the write');
    }
    if (ack.ok && ack.messageId !== undefined) return ack.messageId;
    const reason = `${ack.result}: ${ack.errorMsg}`;
    // Pulsar words it "Message size is bigger than ..." or "... exceeds ... bytes".
    if (/size|exceed|too large|too big/i.test(ack.errorMsg)) throw new MessageTooLargeError(reason);
    throw new TopicUnavailableError(`the broker did not take the write (${reason})`);
  }
}

/**
 * Reads the topic in order from after `from()` (a message id, or the start), acknowledging each
 * message once `onMessage`'s promise settles, so that at most the broker's receiver queue waits
 * unapplied. After a reconnect it reads again from after `from()`.
 */
export class TopicReader {
  readonly #reader: Consumer;

  constructor(options: TopicOptions, from: () => string | null, onMessage: (message: ReceivedMessage) => Promise<void>) {
    const url = () => {
      const start = from();
      return readerUrl(options.url, options.topic, {
        messageId: start === null ? 'earliest' : start,
        readerName: options.name,
        receiverQueueSize: 1000,
      });
    };
    const [socket, events] = linkOf(options, 'reader', url);
    this.#reader = new Consumer({ ...socket, ack: 'after-handling' }, onMessage, events);
  }

  get open(): boolean {
    return this.#reader.socket.open;
  }

  start(): void {
    this.#reader.socket.start();
  }

  stop(): void {
    this.#reader.socket.close();
  }
}
