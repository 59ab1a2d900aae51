/**
 * A client of TrustGraph's config service over Pulsar's WebSocket API: a ConfigRequest published
 * to the config request queue with a fresh `id` property, its ConfigResponse (one message, the
 * same `id`) taken from the response queue. The reference service sends every message as plain
 * JSON with no Pulsar schema (trustgraph-base 2.11.1, base/async_pulsar_backend.py uses
 * BytesSchema), so the WebSocket API, which sends bytes, speaks to it unchanged.
 *
 * Built on src/pulsar/'s producer and consumer; the bridge's client ends a call only at
 * `end_of_stream`, which ConfigResponse does not have. One subscription (exclusive,
 * non-durable, opened before the first publish: the topics are non-persistent) and one producer,
 * opened on demand and dropped on any close; a request waiting on a socket that drops fails at
 * once, and the caller (config-sync.ts) retries with backoff.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Consumer } from '../pulsar/consumer.js';
import { Producer } from '../pulsar/producer.js';
import { BrokerUnavailableError, consumerUrl, parseFrame, producerUrl, publishFrame, type ReceivedMessage } from '../pulsar/wire.js';
import { ConfigResponseSchema, type ConfigRequest, type ConfigResponse } from '../model/trustgraph-config.js';

export interface ConfigClientOptions {
  /** Pulsar's WebSocket API, e.g. ws://127.0.0.1:8080. */
  url: string;
  token?: string | undefined;
  /** Full topic names. */
  requestTopic: string;
  responseTopic: string;
  connectTimeoutMs: number;
  /** How long a request waits for its response. */
  timeoutMs: number;
}

/** What TrustGraph's config service, or the way to it, said no with. */
export class ConfigServiceError extends Error {
  override readonly name = 'ConfigServiceError';
}

/** What config-sync.ts and adopt.ts need of a client: the in-memory fake in tests has it too. */
export interface ConfigRequester {
  request(body: ConfigRequest): Promise<ConfigResponse>;
  close(): void;
}

interface Waiting {
  resolve: (response: ConfigResponse) => void;
  reject: (err: Error) => void;
}

export class ConfigServiceClient implements ConfigRequester {
  readonly #options: ConfigClientOptions;
  readonly #consumer: Consumer;
  readonly #producer: Producer;
  #opening: Promise<void> | null = null;
  readonly #responses = new Map<string, Waiting>();
  #closed = false;

  constructor(options: ConfigClientOptions) {
    this.#options = options;
    const { url, token, connectTimeoutMs, requestTopic, responseTopic } = options;
    const subscription = `tool-registry-config-${hostname()}--${randomUUID()}`;
    // Opened on demand, never in the background: config-sync.ts retries with its own backoff.
    const socket = { token, connectTimeoutMs, reconnect: 'on-demand' as const };
    const dropped = { drop: () => this.#drop(new ConfigServiceError('the connection to the broker dropped')) };
    this.#consumer = new Consumer(
      {
        ...socket,
        url: consumerUrl(url, responseTopic, subscription, { subscriptionType: 'Exclusive', subscriptionMode: 'NonDurable' }),
      },
      (message) => this.#onResponse(message),
      dropped,
    );
    this.#producer = new Producer({ ...socket, url: producerUrl(url, requestTopic) }, dropped);
  }

  /** Sends one request; resolves with its response, rejects on an `error` in it, a broker refusal or the timeout. */
  async request(body: ConfigRequest): Promise<ConfigResponse> {
    await this.#ready();
    const id = randomUUID();
    const context = this.#producer.nextContext();
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<ConfigResponse>((resolve, reject) => this.#responses.set(id, { resolve, reject }));
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new ConfigServiceError(`no answer from TrustGraph's config service in ${this.#options.timeoutMs} ms`)),
        this.#options.timeoutMs,
      );
    });
    const acked = this.#producer.send(publishFrame(JSON.stringify(body), { id }, context), context).then(
      (ack) => {
        if (!ack.ok) throw new ConfigServiceError(`the broker did not take the request (${ack.result}: ${ack.errorMsg})`);
      },
      (err: unknown) => {
        throw err instanceof BrokerUnavailableError ? new ConfigServiceError(err.message) : err;
      },
    );
    try {
      await Promise.race([acked, timedOut]);
      const response = await Promise.race([answered, timedOut]);
      const error = response.error;
      if (error !== null && error !== undefined)
        throw new ConfigServiceError(
          `TrustGraph's config service refused ${body.operation}: ${error.type ?? 'error'}: ${error.message ?? ''}`,
        );
      return response;
    } finally {
      clearTimeout(timer);
      this.#responses.delete(id);
      answered.catch(() => undefined);
      acked.catch(() => undefined);
    }
  }

  close(): void {
    this.#closed = true;
    this.#drop(new ConfigServiceError('the config client is closed'));
  }

  #ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new ConfigServiceError('the config client is closed'));
    if (this.#consumer.socket.open && this.#producer.socket.open) return Promise.resolve();
    this.#opening ??= this.#open().finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  async #open(): Promise<void> {
    // Subscribed before anything is published: a non-persistent topic delivers only to
    // subscriptions that exist when the message arrives.
    await this.#consumer.socket.ready();
    try {
      await this.#producer.socket.ready();
    } catch (err) {
      this.#consumer.socket.restart();
      throw err;
    }
    if (this.#closed) throw new ConfigServiceError('the config client is closed');
  }

  #onResponse(message: ReceivedMessage): void {
    const id = message.properties.get('id');
    const waiting = id === undefined ? undefined : this.#responses.get(id);
    if (!waiting) return; // another client's response: everyone on the topic sees every one
    const payload = message.text;
    const parsed = ConfigResponseSchema.safeParse(payload === undefined ? undefined : parseFrame(payload));
    if (parsed.success) waiting.resolve(parsed.data);
    else waiting.reject(new ConfigServiceError("TrustGraph's config service sent a response that is not a ConfigResponse"));
  }

  /** Closes both sockets and fails whatever waits on them; the next request opens them again. */
  #drop(err: Error): void {
    if (this.#closed) {
      this.#consumer.socket.close();
      this.#producer.close();
    } else {
      this.#consumer.socket.restart();
      this.#producer.socket.restart();
    }
    for (const waiting of this.#responses.values()) waiting.reject(err);
    this.#responses.clear();
  }
}
