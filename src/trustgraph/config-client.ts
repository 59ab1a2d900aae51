/**
 * A client of TrustGraph's config service over Pulsar's WebSocket API: a ConfigRequest published
 * to the config request queue with a fresh `id` property, its ConfigResponse (one message, the
 * same `id`) taken from the response queue. The reference service sends every message as plain
 * JSON with no Pulsar schema (trustgraph-base 2.11.1, base/async_pulsar_backend.py uses
 * BytesSchema), so the WebSocket API, which sends bytes, speaks to it unchanged.
 *
 * Built from the bridge's Pulsar pieces (src/bridge/pulsar-ws.ts); the bridge's own client ends a
 * call only at `end_of_stream`, which ConfigResponse does not have. One subscription (exclusive,
 * non-durable, opened before the first publish: the topics are non-persistent) and one producer,
 * opened on demand and dropped on any close; a request waiting on a socket that drops fails at
 * once, and the caller (config-sync.ts) retries with backoff.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type WebSocket from 'ws';
import { keepAlive, openSocket, payloadText, publishFrame, topicPath } from '../bridge/pulsar-ws.js';
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
  readonly #subscription = `tool-registry-config-${hostname()}--${randomUUID()}`;
  #consumer: WebSocket | null = null;
  #producer: WebSocket | null = null;
  #opening: Promise<void> | null = null;
  #stopPings: (() => void)[] = [];
  #context = 0;
  readonly #acks = new Map<string, { resolve: () => void; reject: (err: Error) => void }>();
  readonly #responses = new Map<string, Waiting>();
  #closed = false;

  constructor(options: ConfigClientOptions) {
    this.#options = options;
  }

  /** Sends one request; resolves with its response, rejects on an `error` in it, a broker refusal or the timeout. */
  async request(body: ConfigRequest): Promise<ConfigResponse> {
    await this.#ready();
    const producer = this.#producer;
    if (!producer) throw new ConfigServiceError('the connection to the broker dropped');
    const id = randomUUID();
    const context = String(++this.#context);
    let timer: NodeJS.Timeout | undefined;
    const answered = new Promise<ConfigResponse>((resolve, reject) => this.#responses.set(id, { resolve, reject }));
    const acked = new Promise<void>((resolve, reject) => this.#acks.set(context, { resolve, reject }));
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new ConfigServiceError(`no answer from TrustGraph's config service in ${this.#options.timeoutMs} ms`)),
        this.#options.timeoutMs,
      );
    });
    try {
      producer.send(publishFrame(JSON.stringify(body), { id }, context));
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
      this.#acks.delete(context);
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
    if (this.#consumer && this.#producer) return Promise.resolve();
    this.#opening ??= this.#open().finally(() => {
      this.#opening = null;
    });
    return this.#opening;
  }

  async #open(): Promise<void> {
    const base = this.#options.url.replace(/\/+$/, '');
    const { token, connectTimeoutMs } = this.#options;
    // Subscribed before anything is published: a non-persistent topic delivers only to
    // subscriptions that exist when the message arrives.
    const consumer = await openSocket(
      `${base}/ws/v2/consumer/${topicPath(this.#options.responseTopic)}/${encodeURIComponent(this.#subscription)}?subscriptionType=Exclusive&subscriptionMode=NonDurable`,
      token,
      connectTimeoutMs,
    );
    let producer: WebSocket;
    try {
      producer = await openSocket(`${base}/ws/v2/producer/${topicPath(this.#options.requestTopic)}`, token, connectTimeoutMs);
    } catch (err) {
      consumer.terminate();
      throw err;
    }
    if (this.#closed) {
      consumer.terminate();
      producer.terminate();
      throw new ConfigServiceError('the config client is closed');
    }
    this.#consumer = consumer;
    this.#producer = producer;
    for (const ws of [consumer, producer]) {
      ws.on('error', () => undefined);
      ws.on('close', () => this.#drop(new ConfigServiceError('the connection to the broker dropped')));
      this.#stopPings.push(keepAlive(ws, 30_000));
    }
    consumer.on('message', (data) => this.#onResponse(consumer, String(data)));
    producer.on('message', (data) => this.#onAck(String(data)));
  }

  #onAck(text: string): void {
    const frame = parseObject(text);
    const context = frame?.['context'];
    const ack = typeof context === 'string' ? this.#acks.get(context) : undefined;
    if (!ack || !frame) return;
    if (frame['result'] === 'ok') ack.resolve();
    else
      ack.reject(
        new ConfigServiceError(`the broker did not take the request (${String(frame['result'])}: ${String(frame['errorMsg'] ?? '')})`),
      );
  }

  #onResponse(consumer: WebSocket, text: string): void {
    const frame = parseObject(text);
    const messageId = frame?.['messageId'];
    if (!frame || typeof messageId !== 'string') return;
    // Acknowledged at once: the server stops delivering after receiverQueueSize unacknowledged.
    consumer.send(JSON.stringify({ messageId }));
    const properties = frame['properties'];
    const id = typeof properties === 'object' && properties !== null ? (properties as Record<string, unknown>)['id'] : undefined;
    const waiting = typeof id === 'string' ? this.#responses.get(id) : undefined;
    if (!waiting) return; // another client's response: everyone on the topic sees every one
    const payload = payloadText(String(frame['payload'] ?? ''));
    const parsed = ConfigResponseSchema.safeParse(payload === undefined ? undefined : parseObject(payload));
    if (parsed.success) waiting.resolve(parsed.data);
    else waiting.reject(new ConfigServiceError("TrustGraph's config service sent a response that is not a ConfigResponse"));
  }

  /** Closes both sockets and fails whatever waits on them; the next request opens them again. */
  #drop(err: Error): void {
    for (const stop of this.#stopPings) stop();
    this.#stopPings = [];
    for (const ws of [this.#consumer, this.#producer]) {
      ws?.removeAllListeners();
      ws?.on('error', () => undefined);
      ws?.terminate();
    }
    this.#consumer = null;
    this.#producer = null;
    for (const waiting of [...this.#acks.values(), ...this.#responses.values()]) waiting.reject(err);
    this.#acks.clear();
    this.#responses.clear();
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
