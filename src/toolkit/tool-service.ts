/**
 * Writing tool services in TypeScript: the counterpart of the reference's Python
 * DynamicToolService. It subscribes to a request topic (Shared subscription `"{id}-request"`, so
 * replicas share the work), calls a handler `(user, config, arguments)` that returns a string
 * or streams strings, and publishes the response, or the chunks then an end-of-stream marker,
 * with the request's `id` property. A handler's exception becomes an error response.
 *
 * It stays up when the broker goes away: it logs the loss and reconnects with jittered
 * exponential backoff (250 ms doubling to 10 s by default), subscribing and opening its producer
 * again; responses finished meanwhile wait (up to 1000) and go out once it is back. It stops
 * only when closed, when its `signal` aborts, or when `maxRetries` attempts in a row have failed.
 * Giving up is logged, rejects `stopped` and sets `process.exitCode` to 1, so that a process
 * running only this service ends with status 1 for its supervisor to see.
 *
 * With `announce`, it also announces itself to registries (issue 14, src/model/announcement.ts):
 * once its request subscription is ready it publishes `{v: 1, token, service, tools,
 * heartbeatIntervalS, goodbye: false}` on the announcement topic, again every
 * `heartbeatIntervalS` while it listens (the heartbeat), and at once when `announce(tools)`
 * changes its tools; its own producer reconnects with the same backoff when the broker drops it.
 * close() publishes the same message with `goodbye: true` before it lets go of its subscription.
 * The token travels only inside the message: it is never logged.
 */
import WebSocket from 'ws';
import {
  Backoff,
  DEFAULT_MAX_FRAME_BYTES,
  effectiveLimits,
  keepAlive,
  openSocket,
  oversize,
  oversizeMessage,
  payloadText,
  publishFrame,
  topicPath,
  type BusLimits,
} from '../bridge/pulsar-ws.js';
import { ANNOUNCEMENT_VERSION, AnnouncementSchema, type Announcement } from '../model/announcement.js';

export type ToolHandler = (
  user: string,
  config: Record<string, unknown>,
  args: Record<string, unknown>,
) => string | Promise<string> | AsyncIterable<string>;

/** The part of a pino logger the service uses: `logger.info({ ...facts }, 'message')`. */
export interface ToolServiceLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** connecting (first attempt) -> listening <-> reconnecting -> stopped (closed, or gave up). */
export type ToolServiceState = 'connecting' | 'listening' | 'reconnecting' | 'stopped';

export interface ToolServiceOptions {
  /** Pulsar WebSocket API base URL, e.g. ws://127.0.0.1:8080. */
  url: string;
  /** Service id; the request subscription is `"{id}-request"`. */
  id: string;
  /** Short form: non-persistent://tg/request/{topic} and non-persistent://tg/response/{topic}. */
  topic?: string;
  requestQueue?: string;
  responseQueue?: string;
  token?: string;
  handler: ToolHandler;
  /** Error `type` for handler exceptions. */
  errorType?: string;
  onError?: (err: unknown) => void;
  /** Where state changes are logged (pino works as is); default: pino-style JSON lines on stderr. */
  logger?: ToolServiceLogger;
  /** Failed connection attempts in a row after which the service gives up (default: never). */
  maxRetries?: number;
  /** The first and the longest delay between attempts, each jittered down by up to half. */
  retryDelayMs?: { min?: number; max?: number };
  /** Aborting it stops the service, as close() does. */
  signal?: AbortSignal;
  /** How long opening the subscription or the producer may take (default 10 s). */
  connectTimeoutMs?: number;
  /** Ping interval; a ping unanswered by the next one counts as a lost connection (default 30 s). */
  pingIntervalMs?: number;
  /**
   * The broker's webSocketMaxTextFrameSize (default 1 MiB). A response travels base64-encoded in
   * one frame; one too large for it is answered with a `response-too-large` error instead.
   */
  maxFrameBytes?: number;
  /**
   * Announce the service and its tools to registries, with a heartbeat (see
   * ToolServiceAnnouncement). runToolService throws a TypeError when it does not fit the message
   * format of src/model/announcement.ts (a heartbeat outside 1 to 3600 s, an empty token, ...).
   */
  announce?: ToolServiceAnnouncement;
}

/**
 * What a service announces about itself on the registry's announcement topic (issue 14). Every
 * message carries all of it, so a registry that starts later learns everything from the next
 * heartbeat.
 */
export interface ToolServiceAnnouncement {
  /** The registry's ANNOUNCE_TOPIC, e.g. non-persistent://tg/registry/announcements. */
  topic: string;
  /** A JWT holding the registry's ANNOUNCE_SCOPE (`registry:announce` by default); sent in every message, never logged. */
  token: string;
  /** The tool service descriptor, as `PUT /tool-services/{id}` takes it. */
  service: Record<string, unknown>;
  /** The tools, as `PUT /tools/{name}` takes them (each names the service); change them with announce(). */
  tools: Record<string, unknown>[];
  /**
   * Seconds between heartbeats, 1 to 3600 (default 10). A registry marks the tools unavailable
   * after 3 heartbeats in a row are missing.
   */
  heartbeatIntervalS?: number;
}

export interface RunningToolService {
  /** Resolves when the service first listens (subscription and producer open); rejects if it stops first. */
  ready: Promise<void>;
  /** Settles when the service has stopped: resolves after close() or the signal, rejects when it gave up. */
  stopped: Promise<void>;
  readonly state: ToolServiceState;
  /** Stops the service; with `announce`, publishes a goodbye first (waiting up to 2 s for the broker to take it). */
  close(): Promise<void>;
  /**
   * Replaces the announced tools and publishes the announcement at once. Resolves true when the
   * broker took it, false when it could not go out now (the broker is away, or the service is
   * not listening): the new tools then go out with the next announcement. Never rejects; throws
   * (synchronously) when the service was started without `announce`, or `tools` is not a list
   * of at most 1000 objects.
   */
  announce(tools: Record<string, unknown>[]): Promise<boolean>;
}

interface ResponseMessage {
  error: { type: string; message: string } | null;
  response: string;
  end_of_stream: boolean;
}

/** Responses kept while the broker is away; beyond it, newer ones are dropped (and logged). */
const MAX_QUEUED_RESPONSES = 1000;

/** A response the bus cannot carry in one message; answered with an error instead. */
class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
}

/** pino's line format (level numbers, `time`, `msg`), so pino-pretty and log shippers read it. */
function stderrLogger(name: string): ToolServiceLogger {
  const write = (level: number, obj: object, msg: string) => {
    process.stderr.write(`${JSON.stringify({ level, time: Date.now(), name, ...obj, msg })}\n`);
  };
  return { info: (obj, msg) => write(30, obj, msg), warn: (obj, msg) => write(40, obj, msg), error: (obj, msg) => write(50, obj, msg) };
}

function isAsyncIterable(value: unknown): value is AsyncIterable<string> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

function parseJsonText(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string' || text === '') return {};
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The request queue a service descriptor names, when it names one by its full topic name. */
function announcedRequestQueue(service: Record<string, unknown>): string | undefined {
  const queue = service['request-queue'];
  if (typeof queue === 'string') return queue.includes('://') ? queue : undefined;
  const topic = service['topic'];
  return typeof topic === 'string' ? `non-persistent://tg/request/${topic}` : undefined;
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Closes a socket without waiting; whatever it says afterwards is ignored. */
function drop(ws: WebSocket): void {
  ws.removeAllListeners();
  ws.on('error', () => undefined);
  ws.terminate();
}

/** Closes a socket politely, then for good after 2 s. */
function closeGently(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      drop(ws);
      resolve();
    }, 2000).unref();
    ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    ws.close();
  });
}

/** A promise with its settlers; never reported as an unhandled rejection. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } {
  let resolve = () => undefined as void;
  let reject = (_err: Error) => undefined as void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** How long close() waits for the broker to take the goodbye. */
const GOODBYE_TIMEOUT_MS = 2000;

/**
 * The announce option checked against the message format (src/model/announcement.ts), with the
 * heartbeat's default filled in. Throws a TypeError naming what is wrong; never the token's text.
 */
function checkedAnnouncement(announce: ToolServiceAnnouncement): Announcement {
  try {
    topicPath(announce.topic);
  } catch {
    throw new TypeError(`announce.topic: not a Pulsar topic name: ${String(announce.topic)}`);
  }
  const { token, service, tools, heartbeatIntervalS } = announce;
  const result = AnnouncementSchema.safeParse({ v: ANNOUNCEMENT_VERSION, token, service, tools, heartbeatIntervalS, goodbye: false });
  if (!result.success) {
    // zod's messages say what was expected, never the value received.
    const problems = result.error.issues.map((issue) => `announce.${issue.path.map(String).join('.')}: ${issue.message}`);
    throw new TypeError(`invalid announce option: ${problems.join('; ')}`);
  }
  return result.data;
}

/** `tools` checked as announce(tools) takes them. */
function checkedTools(tools: Record<string, unknown>[]): Record<string, unknown>[] {
  const result = AnnouncementSchema.shape.tools.safeParse(tools);
  if (!result.success)
    throw new TypeError(
      `announce(tools): ${result.error.issues.map((issue) => `${issue.path.map(String).join('.') || 'tools'}: ${issue.message}`).join('; ')}`,
    );
  return result.data;
}

/** What the announcer needs from its service. */
interface AnnouncerContext {
  /** The producer URL on the announcement topic. */
  url: string;
  /** The broker's token (`Authorization` on the WebSocket), not the announcement's. */
  brokerToken: string | undefined;
  connectTimeoutMs: number;
  pingIntervalMs: number;
  limits: BusLimits;
  backoff: Backoff;
  log: ToolServiceLogger;
  /** Whether the service takes requests now; heartbeats go out only then, as they claim it does. */
  listening: () => boolean;
}

/**
 * Publishes a service's announcement on its own producer: at once when the service (again)
 * listens or its tools change, then every heartbeat while the service listens; a goodbye when it
 * stops. Reconnects with backoff after any close, until stopped.
 */
class Announcer {
  #ws: WebSocket | undefined;
  #connecting = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #stopPings = () => undefined as void;
  readonly #acks = new Map<string, (ok: boolean) => void>();
  #context = 0;
  #stopped = false;
  /** An announcement has gone out since the last goodbye (or ever): a goodbye is worth sending. */
  #live = false;
  /** Log the next announcement the broker takes (after a connection, or a change of tools). */
  #logNext = true;
  /** The current announcement was found too large, and that was logged. */
  #tooLarge = false;
  #message: Announcement;

  constructor(
    private readonly ctx: AnnouncerContext,
    private readonly topic: string,
    announcement: Announcement,
  ) {
    this.#message = announcement;
  }

  get #facts(): Record<string, unknown> {
    const id = this.#message.service['id'];
    return { topic: this.topic, service: typeof id === 'string' ? id : undefined, tools: this.#message.tools.length };
  }

  /** The service listens (the first time or again): announce now, connecting first if needed. */
  listening(): void {
    if (this.#stopped) return;
    if (this.#ws?.readyState === WebSocket.OPEN) {
      void this.#publish(false);
      return;
    }
    if (this.#connecting) return;
    // The service just reached the broker: try now rather than after the backoff's delay.
    clearTimeout(this.#retryTimer);
    this.ctx.backoff.reset();
    void this.#connect();
  }

  update(tools: Record<string, unknown>[]): Promise<boolean> {
    this.#message = { ...this.#message, tools };
    this.#tooLarge = false;
    this.#logNext = true;
    return this.#publish(false);
  }

  /** Stops heartbeats, publishes a goodbye (waiting up to `timeoutMs` for the broker to take it), and closes. */
  async goodbye(timeoutMs: number): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#stopTimers();
    const ws = this.#ws;
    if (ws?.readyState === WebSocket.OPEN) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const taken = await Promise.race([this.#publish(true), timeout]);
      clearTimeout(timer);
      if (taken) this.ctx.log.info(this.#facts, `said goodbye on ${this.topic}`);
      else
        this.ctx.log.warn(
          this.#facts,
          `the broker did not take the goodbye on ${this.topic}; registries mark the service unavailable after missed heartbeats`,
        );
    } else if (this.#live) {
      this.ctx.log.warn(
        this.#facts,
        `cannot say goodbye on ${this.topic}: the broker is away; registries mark the service unavailable after missed heartbeats`,
      );
    }
    this.#detach();
    if (ws) await closeGently(ws);
  }

  /** Stops at once, without a goodbye (the service gave up on the broker). */
  stop(): void {
    this.#stopped = true;
    this.#stopTimers();
    const ws = this.#ws;
    this.#detach();
    if (ws) drop(ws);
  }

  #stopTimers(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /** Forgets the socket: pings stop and waiting publishes resolve false. */
  #detach(): void {
    this.#ws = undefined;
    this.#stopPings();
    this.#stopPings = () => undefined;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    for (const settle of this.#acks.values()) settle(false);
    this.#acks.clear();
  }

  #retryLater(reason: string, what: string): void {
    const delayMs = this.ctx.backoff.next();
    this.#retryTimer = setTimeout(() => void this.#connect(), delayMs);
    this.ctx.log.warn({ ...this.#facts, delayMs, reason }, `${what}; retrying in ${delayMs} ms`);
  }

  async #connect(): Promise<void> {
    this.#retryTimer = undefined;
    if (this.#stopped || this.#connecting) return;
    this.#connecting = true;
    let ws: WebSocket;
    try {
      // The broker's token on the upgrade request; the announcement's own rides in the message.
      ws = await openSocket(this.ctx.url, this.ctx.brokerToken, this.ctx.connectTimeoutMs);
    } catch (err) {
      this.#connecting = false;
      if (!this.#stopped) this.#retryLater(reasonOf(err), `cannot open the announcement producer on ${this.topic}`);
      return;
    }
    this.#connecting = false;
    if (this.#stopped) {
      drop(ws);
      return;
    }
    this.#ws = ws;
    this.ctx.backoff.reset();
    this.#logNext = true;
    this.#stopPings = keepAlive(ws, this.ctx.pingIntervalMs);
    // Pulsar closes with codes ws reports as errors; the close that follows is what counts.
    ws.on('error', () => undefined);
    ws.on('close', () => this.#lost(ws));
    ws.on('message', (data) => this.#acked(data.toString()));
    this.#heartbeat = setInterval(() => void this.#publish(false), this.#message.heartbeatIntervalS * 1000);
    void this.#publish(false);
  }

  #lost(ws: WebSocket): void {
    if (this.#ws !== ws) return;
    this.#detach();
    if (this.#stopped) return;
    this.#retryLater('the connection dropped', `lost the announcement producer on ${this.topic}`);
  }

  #acked(text: string): void {
    let ack: { result?: unknown; errorMsg?: unknown; context?: unknown };
    try {
      ack = JSON.parse(text) as typeof ack;
    } catch {
      return;
    }
    if (typeof ack.context !== 'string') return;
    const settle = this.#acks.get(ack.context);
    if (!settle) return;
    this.#acks.delete(ack.context);
    if (ack.result === 'ok') settle(true);
    else {
      this.ctx.log.warn({ ...this.#facts, result: ack.result, errorMsg: ack.errorMsg }, 'the broker did not take an announcement');
      settle(false);
    }
  }

  /** Publishes the whole announcement; resolves whether the broker took it. */
  #publish(goodbye: boolean): Promise<boolean> {
    const ws = this.#ws;
    if (ws?.readyState !== WebSocket.OPEN) return Promise.resolve(false);
    // A heartbeat says the service takes requests: none while it does not.
    if (!goodbye && (this.#stopped || !this.ctx.listening())) return Promise.resolve(false);
    const message: Announcement = { ...this.#message, goodbye };
    const payload = JSON.stringify(message);
    const context = String(++this.#context);
    const facts = oversize(payload, this.ctx.limits, {}, context);
    if (facts) {
      if (!this.#tooLarge) {
        this.#tooLarge = true;
        this.ctx.log.error(
          { ...this.#facts, bytes: facts.bytes, limitBytes: facts.limitBytes },
          `cannot announce on ${this.topic}: ${oversizeMessage(facts)}`,
        );
      }
      return Promise.resolve(false);
    }
    return new Promise<boolean>((resolve) => {
      this.#acks.set(context, (ok) => {
        if (ok) {
          this.#live = !goodbye;
          if (!goodbye && this.#logNext) {
            this.#logNext = false;
            this.ctx.log.info({ ...this.#facts, heartbeatIntervalS: message.heartbeatIntervalS }, `announced the service on ${this.topic}`);
          }
        }
        resolve(ok);
      });
      ws.send(publishFrame(payload, {}, context));
    });
  }
}

/** Starts a tool service; it connects, and reconnects, in the background (see `ready`). */
export function runToolService(options: ToolServiceOptions): RunningToolService {
  const requestQueue = options.requestQueue ?? `non-persistent://tg/request/${options.topic ?? options.id}`;
  const responseQueue = options.responseQueue ?? `non-persistent://tg/response/${options.topic ?? options.id}`;
  const base = options.url.replace(/\/+$/, '');
  const producerUrl = `${base}/ws/v2/producer/${topicPath(responseQueue)}`;
  const consumerUrl = `${base}/ws/v2/consumer/${topicPath(requestQueue)}/${encodeURIComponent(`${options.id}-request`)}?subscriptionType=Shared`;
  const log = options.logger ?? stderrLogger(`tool-service ${options.id}`);
  const maxRetries = options.maxRetries ?? Infinity;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const pingIntervalMs = options.pingIntervalMs ?? 30_000;
  const limits = effectiveLimits(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, undefined);
  const backoff = new Backoff(options.retryDelayMs?.min ?? 250, options.retryDelayMs?.max ?? 10_000);
  const announcement = options.announce && checkedAnnouncement(options.announce);
  const ready = deferred();
  const stopped = deferred();
  const queued: string[] = [];
  let state: ToolServiceState = 'connecting';
  let session: { producer: WebSocket; consumer: WebSocket; stopPings: () => void } | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;
  let lostAt = 0;
  let context = 0;
  // A function, not a comparison: close() may run during any await below.
  const isStopped = () => state === 'stopped';
  const announcer =
    options.announce && announcement
      ? new Announcer(
          {
            url: `${base}/ws/v2/producer/${topicPath(options.announce.topic)}`,
            brokerToken: options.token,
            connectTimeoutMs,
            pingIntervalMs,
            limits,
            backoff: new Backoff(options.retryDelayMs?.min ?? 250, options.retryDelayMs?.max ?? 10_000),
            log,
            listening: () => state === 'listening',
          },
          options.announce.topic,
          announcement,
        )
      : undefined;
  if (announcement) {
    const announced = announcedRequestQueue(announcement.service);
    if (announced !== undefined && announced !== requestQueue) {
      log.warn(
        { requestQueue, announced },
        `the announced service descriptor names ${announced} as its request queue, but this service listens on ${requestQueue}`,
      );
    }
  }

  const publish = (message: ResponseMessage, id: string) => {
    const payload = JSON.stringify(message);
    const properties = { id };
    const ctx = String(++context);
    const facts = oversize(payload, limits, properties, ctx);
    if (facts) throw new ResponseTooLargeError(oversizeMessage(facts));
    const frame = publishFrame(payload, properties, ctx);
    if (session?.producer.readyState === WebSocket.OPEN) session.producer.send(frame);
    else if (queued.length < MAX_QUEUED_RESPONSES) queued.push(frame);
    else log.warn({ id, queued: queued.length }, 'dropped a response: the broker is away and the queue of responses is full');
  };

  const publishError = (type: string, message: string, id: string) => {
    try {
      publish({ error: { type, message }, response: '', end_of_stream: true }, id);
    } catch (err) {
      log.error({ id, reason: reasonOf(err) }, 'cannot send an error response');
    }
  };

  const handle = async (frame: { payload?: string; properties?: Record<string, string> }) => {
    const id = frame.properties?.['id'] ?? 'unknown';
    // Never decoded leniently: U+FFFD would hand the handler text nobody sent.
    const text = payloadText(frame.payload ?? '');
    if (text === undefined) {
      publishError('invalid-request', 'the request is not valid UTF-8', id);
      return;
    }
    try {
      const request = JSON.parse(text) as Record<string, unknown>;
      const user = typeof request['user'] === 'string' ? request['user'] : '';
      const result = options.handler(user, parseJsonText(request['config']), parseJsonText(request['arguments']));
      if (isAsyncIterable(result)) {
        for await (const chunk of result) publish({ error: null, response: chunk, end_of_stream: false }, id);
        publish({ error: null, response: '', end_of_stream: true }, id);
      } else {
        publish({ error: null, response: await result, end_of_stream: true }, id);
      }
    } catch (err) {
      options.onError?.(err);
      if (err instanceof ResponseTooLargeError) publishError('response-too-large', err.message, id);
      else publishError(options.errorType ?? 'tool-service-error', reasonOf(err), id);
    }
  };

  const listen = (producer: WebSocket, consumer: WebSocket) => {
    const current = { producer, consumer, stopPings: () => undefined as void };
    const stops = [keepAlive(producer, pingIntervalMs), keepAlive(consumer, pingIntervalMs)];
    current.stopPings = () => stops.forEach((stop) => stop());
    session = current;
    for (const ws of [producer, consumer]) {
      // Pulsar closes with codes ws reports as errors; the close that follows is what counts.
      ws.on('error', () => undefined);
      ws.on('close', () => lost(current));
    }
    producer.on('message', (data) => {
      let ack: { result?: unknown; errorMsg?: unknown };
      try {
        ack = JSON.parse(data.toString()) as typeof ack;
      } catch {
        return;
      }
      if (ack.result !== 'ok') log.warn({ result: ack.result, errorMsg: ack.errorMsg }, 'the broker did not take a response');
    });
    consumer.on('message', (data) => {
      let frame: { messageId?: string; payload?: string; properties?: Record<string, string> };
      try {
        frame = JSON.parse(data.toString()) as typeof frame;
      } catch {
        return;
      }
      if (frame.messageId !== undefined) consumer.send(JSON.stringify({ messageId: frame.messageId }));
      void handle(frame);
    });
    const again = state === 'reconnecting';
    state = 'listening';
    failures = 0;
    backoff.reset();
    if (again) log.info({ requestQueue, downMs: Date.now() - lostAt, queued: queued.length }, `listening again on ${requestQueue}`);
    else log.info({ requestQueue, responseQueue }, `listening on ${requestQueue}`);
    for (const frame of queued.splice(0)) producer.send(frame);
    ready.resolve();
    announcer?.listening();
  };

  const giveUp = (err: unknown) => {
    state = 'stopped';
    announcer?.stop();
    const reason = reasonOf(err);
    log.error(
      { attempts: failures, reason },
      `gave up connecting to the broker after ${failures} failed attempts in a row (maxRetries ${maxRetries})`,
    );
    if (!process.exitCode) process.exitCode = 1;
    const error = new Error(`the tool service ${options.id} gave up connecting to the broker: ${reason}`);
    ready.reject(error);
    stopped.reject(error);
  };

  const retryLater = () => {
    const delayMs = backoff.next();
    retryTimer = setTimeout(() => void attempt(), delayMs);
    return delayMs;
  };

  const attempt = async (): Promise<void> => {
    retryTimer = undefined;
    if (isStopped()) return;
    let producer: WebSocket | undefined;
    try {
      producer = await openSocket(producerUrl, options.token, connectTimeoutMs);
      // Until listen() takes over: an error event without a listener would end the process.
      producer.on('error', () => undefined);
      const consumer = await openSocket(consumerUrl, options.token, connectTimeoutMs);
      if (isStopped() || producer.readyState !== WebSocket.OPEN) {
        drop(consumer);
        if (isStopped()) {
          drop(producer);
          return;
        }
        throw new Error('the connection to the broker dropped while the subscription opened');
      }
      listen(producer, consumer);
    } catch (err) {
      if (producer) drop(producer);
      if (isStopped()) return;
      failures++;
      if (failures > maxRetries) {
        giveUp(err);
        return;
      }
      const delayMs = retryLater();
      log.warn({ attempt: failures, delayMs, reason: reasonOf(err) }, `cannot reach the broker; retrying in ${delayMs} ms`);
    }
  };

  const lost = (current: NonNullable<typeof session>) => {
    if (session !== current) return;
    session = undefined;
    current.stopPings();
    drop(current.producer);
    drop(current.consumer);
    if (state === 'stopped') return;
    state = 'reconnecting';
    lostAt = Date.now();
    const delayMs = retryLater();
    log.warn({ requestQueue, delayMs }, `lost the connection to the broker; reconnecting in ${delayMs} ms`);
  };

  const close = async () => {
    if (state !== 'stopped') {
      state = 'stopped';
      log.info({ requestQueue }, 'stopped');
    }
    clearTimeout(retryTimer);
    ready.reject(new Error(`the tool service ${options.id} was closed before it connected`));
    // Before the subscription goes: registries stop routing calls here first.
    await announcer?.goodbye(GOODBYE_TIMEOUT_MS);
    const current = session;
    session = undefined;
    if (current) {
      current.stopPings();
      await Promise.all([closeGently(current.consumer), closeGently(current.producer)]);
    }
    stopped.resolve();
  };

  if (options.signal?.aborted) void close();
  else {
    options.signal?.addEventListener('abort', () => void close(), { once: true });
    void attempt();
  }

  return {
    ready: ready.promise,
    stopped: stopped.promise,
    get state() {
      return state;
    },
    close,
    announce(tools) {
      if (!announcer) throw new Error(`the tool service ${options.id} was started without the announce option`);
      return announcer.update(checkedTools(tools));
    },
  };
}
