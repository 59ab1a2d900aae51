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
 * With `announce`, it also announces itself to registries (issues 14 and 29,
 * src/model/announcement.ts): once its request subscription is ready it publishes `{v: 2, sub,
 * instance, seq, iat, service, tools, heartbeatIntervalS, goodbye: false}`, signed as a compact
 * JWS with the announcer's private key, on the announcement topic, again every
 * `heartbeatIntervalS` while it listens (the heartbeat), and at once when `announce(tools)`
 * changes its tools; its own producer reconnects with the same backoff when the broker drops it.
 * close() publishes the same message with `goodbye: true` before it lets go of its subscription.
 * The private key never leaves the process; no token travels in the message.
 */
import { createPrivateKey, KeyObject, type JsonWebKey } from 'node:crypto';
import { ANNOUNCEMENT_VERSION, AnnouncementSchema } from '../model/announcement.js';
import { Consumer } from '../pulsar/consumer.js';
import { DEFAULT_MAX_FRAME_BYTES, effectiveLimits, oversize, oversizeMessage, type BusLimits } from '../pulsar/limits.js';
import { Producer } from '../pulsar/producer.js';
import type { RetryInfo } from '../pulsar/socket.js';
import { consumerUrl, producerUrl, publishFrame, topicPath, type ReceivedMessage } from '../pulsar/wire.js';
import { Announcer, type AnnouncedContent, type AnnouncementSigner } from './announcer.js';

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
   * format of src/model/announcement.ts (a heartbeat outside 1 to 3600 s, a subject that is no
   * scope token, ...) or its key is no private key with an id.
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
  /** The announcer's subject, as the registry's binding names it (ANNOUNCER_KEYS_FILE `subject`). */
  subject: string;
  /**
   * The private key every announcement is signed with (Ed25519, EC P-256/384/521 or RSA): a
   * private JWK, or a KeyObject. The registry's binding holds its public part; never logged.
   */
  privateKey: JsonWebKey | KeyObject;
  /** The key's id, as the binding's JWK names it (`kid`); default: the JWK's own `kid`. */
  keyId?: string;
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

/** The JWS algorithm of a private key: what the registry's binding defaults to for its public part. */
function algorithmOf(key: KeyObject): string | undefined {
  if (key.asymmetricKeyType === 'ed25519') return 'EdDSA';
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec')
    return ({ prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' } as Record<string, string>)[
      key.asymmetricKeyDetails?.namedCurve ?? ''
    ];
  return undefined;
}

/** The announce option's key, as the announcer signs with it. Throws a TypeError naming what is wrong; never the key. */
function checkedSigner(announce: ToolServiceAnnouncement): AnnouncementSigner {
  const { privateKey, subject } = announce;
  let key: KeyObject;
  try {
    key = privateKey instanceof KeyObject ? privateKey : createPrivateKey({ key: privateKey, format: 'jwk' });
  } catch {
    throw new TypeError('announce.privateKey: not a private key (a private JWK with "d", or a KeyObject)');
  }
  if (key.type !== 'private') throw new TypeError('announce.privateKey: not a private key (a private JWK with "d", or a KeyObject)');
  const alg = algorithmOf(key);
  if (alg === undefined) throw new TypeError('announce.privateKey: must be an Ed25519, EC (P-256, P-384, P-521) or RSA key');
  const kid =
    announce.keyId ?? (privateKey instanceof KeyObject ? undefined : typeof privateKey['kid'] === 'string' ? privateKey['kid'] : undefined);
  if (kid === undefined || kid === '')
    throw new TypeError('announce.keyId: required (the kid the registry binding names), unless the JWK has one');
  return { subject, keyId: kid, key, alg };
}

/**
 * The announce option checked against the message format (src/model/announcement.ts), with the
 * heartbeat's default filled in. Throws a TypeError naming what is wrong; never the key.
 */
function checkedAnnouncement(announce: ToolServiceAnnouncement): AnnouncedContent {
  try {
    topicPath(announce.topic);
  } catch {
    throw new TypeError(`announce.topic: not a Pulsar topic name: ${String(announce.topic)}`);
  }
  const { subject, service, tools, heartbeatIntervalS } = announce;
  const sample = {
    v: ANNOUNCEMENT_VERSION,
    sub: subject,
    instance: 'check',
    seq: 1,
    iat: 0,
    service,
    tools,
    heartbeatIntervalS,
    goodbye: false,
  };
  const result = AnnouncementSchema.safeParse(sample);
  if (!result.success) {
    // zod's messages say what was expected, never the value received.
    const problems = result.error.issues.map((issue) => {
      const path = issue.path.map(String).join('.');
      return `announce.${path === 'sub' ? 'subject' : path}: ${issue.message}`;
    });
    throw new TypeError(`invalid announce option: ${problems.join('; ')}`);
  }
  return { service: result.data.service, tools: result.data.tools, heartbeatIntervalS: result.data.heartbeatIntervalS };
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

/** A response frame with the context the broker's answer will repeat. */
interface ResponseFrame {
  text: string;
  context: string;
}

/**
 * One running service: a producer on the response queue whose socket counts as open only once
 * the request subscription is open too (so the two come and go as one session, with one backoff
 * and one count of failed attempts), the handler between them, and the announcer beside.
 */
class ToolService {
  readonly #options: ToolServiceOptions;
  readonly #log: ToolServiceLogger;
  readonly #requestQueue: string;
  readonly #responseQueue: string;
  readonly #limits: BusLimits;
  readonly #responses: Producer;
  readonly #requests: Consumer;
  readonly #announcer: Announcer | undefined;
  readonly #ready = deferred();
  readonly #stopped = deferred();
  readonly #queued: ResponseFrame[] = [];
  #state: ToolServiceState = 'connecting';
  #lostAt = 0;

  constructor(options: ToolServiceOptions) {
    this.#options = options;
    this.#requestQueue = options.requestQueue ?? `non-persistent://tg/request/${options.topic ?? options.id}`;
    this.#responseQueue = options.responseQueue ?? `non-persistent://tg/response/${options.topic ?? options.id}`;
    this.#log = options.logger ?? stderrLogger(`tool-service ${options.id}`);
    this.#limits = effectiveLimits(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES, undefined);
    const socket = {
      token: options.token,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      pingIntervalMs: options.pingIntervalMs ?? 30_000,
    };
    const backoff = { minMs: options.retryDelayMs?.min, maxMs: options.retryDelayMs?.max };
    const responsesUrl = producerUrl(options.url, this.#responseQueue);
    // Shared: replicas of a service split its requests between them.
    const requestsUrl = consumerUrl(options.url, this.#requestQueue, `${options.id}-request`, { subscriptionType: 'Shared' });
    const announcement = options.announce && checkedAnnouncement(options.announce);
    const signer = options.announce && checkedSigner(options.announce);
    this.#requests = new Consumer({ ...socket, url: requestsUrl, reconnect: 'on-demand' }, (message) => void this.#handle(message), {
      drop: () => this.#requestsDropped(),
    });
    this.#responses = new Producer(
      {
        ...socket,
        url: responsesUrl,
        backoff,
        maxRetries: options.maxRetries ?? Infinity,
        holdsProcess: true,
        whenOpen: () => this.#requests.socket.ready(),
      },
      {
        open: () => this.#listening(),
        drop: () => this.#lost(),
        retry: (info) => this.#retrying(info),
        giveUp: (err, attempts) => this.#giveUp(err, attempts),
      },
    );
    this.#announcer =
      options.announce && announcement && signer
        ? new Announcer(
            {
              url: options.url,
              brokerToken: options.token,
              connectTimeoutMs: socket.connectTimeoutMs,
              pingIntervalMs: socket.pingIntervalMs,
              retryDelayMs: backoff,
              limits: this.#limits,
              log: this.#log,
              listening: () => this.#state === 'listening',
            },
            options.announce.topic,
            announcement,
            signer,
          )
        : undefined;
    if (announcement) this.#checkAnnouncedQueue(announcement);
  }

  get ready(): Promise<void> {
    return this.#ready.promise;
  }

  get stopped(): Promise<void> {
    return this.#stopped.promise;
  }

  get state(): ToolServiceState {
    return this.#state;
  }

  start(): void {
    const signal = this.#options.signal;
    if (signal?.aborted) {
      void this.close();
      return;
    }
    signal?.addEventListener('abort', () => void this.close(), { once: true });
    this.#responses.socket.start();
  }

  async close(): Promise<void> {
    if (this.#state !== 'stopped') {
      this.#state = 'stopped';
      this.#log.info({ requestQueue: this.#requestQueue }, 'stopped');
    }
    // No reconnection from here on; an open session stays for the goodbye.
    if (!this.#responses.socket.open) this.#responses.close();
    this.#ready.reject(new Error(`the tool service ${this.#options.id} was closed before it connected`));
    // Before the subscription goes: registries stop routing calls here first.
    await this.#announcer?.goodbye(GOODBYE_TIMEOUT_MS);
    await Promise.all([this.#requests.socket.closeGently(2000), this.#responses.closeGently(2000)]);
    this.#stopped.resolve();
  }

  announce(tools: Record<string, unknown>[]): Promise<boolean> {
    if (!this.#announcer) throw new Error(`the tool service ${this.#options.id} was started without the announce option`);
    return this.#announcer.update(checkedTools(tools));
  }

  #checkAnnouncedQueue(announcement: AnnouncedContent): void {
    const announced = announcedRequestQueue(announcement.service);
    if (announced !== undefined && announced !== this.#requestQueue) {
      this.#log.warn(
        { requestQueue: this.#requestQueue, announced },
        `the announced service descriptor names ${announced} as its request queue, but this service listens on ${this.#requestQueue}`,
      );
    }
  }

  #listening(): void {
    if (this.#state === 'stopped') return;
    const again = this.#state === 'reconnecting';
    this.#state = 'listening';
    const requestQueue = this.#requestQueue;
    if (again)
      this.#log.info(
        { requestQueue, downMs: Date.now() - this.#lostAt, queued: this.#queued.length },
        `listening again on ${requestQueue}`,
      );
    else this.#log.info({ requestQueue, responseQueue: this.#responseQueue }, `listening on ${requestQueue}`);
    for (const frame of this.#queued.splice(0)) this.#send(frame);
    this.#ready.resolve();
    this.#announcer?.listening();
  }

  /** The response producer dropped (or was restarted for its subscription): the session goes. */
  #lost(): void {
    if (this.#state !== 'stopped') {
      this.#state = 'reconnecting';
      this.#lostAt = Date.now();
    }
    this.#requests.socket.restart();
  }

  #requestsDropped(): void {
    if (this.#state === 'listening') this.#responses.socket.restart();
  }

  #retrying({ dropped, attempt, delayMs, reason }: RetryInfo): void {
    if (this.#state === 'stopped') return;
    if (dropped) {
      this.#log.warn({ requestQueue: this.#requestQueue, delayMs }, `lost the connection to the broker; reconnecting in ${delayMs} ms`);
      return;
    }
    // A subscription that opened for an attempt that failed all the same.
    this.#requests.socket.restart();
    this.#log.warn({ attempt, delayMs, reason }, `cannot reach the broker; retrying in ${delayMs} ms`);
  }

  #giveUp(err: unknown, attempts: number): void {
    this.#state = 'stopped';
    this.#requests.socket.close();
    this.#announcer?.stop();
    const reason = reasonOf(err);
    const maxRetries = this.#options.maxRetries ?? Infinity;
    this.#log.error(
      { attempts, reason },
      `gave up connecting to the broker after ${attempts} failed attempts in a row (maxRetries ${maxRetries})`,
    );
    if (!process.exitCode) process.exitCode = 1;
    const error = new Error(`the tool service ${this.#options.id} gave up connecting to the broker: ${reason}`);
    this.#ready.reject(error);
    this.#stopped.reject(error);
  }

  async #handle(message: ReceivedMessage): Promise<void> {
    const id = message.properties.get('id') ?? 'unknown';
    // Never decoded leniently: U+FFFD would hand the handler text nobody sent.
    const text = message.text;
    if (text === undefined) {
      this.#respondError('invalid-request', 'the request is not valid UTF-8', id);
      return;
    }
    try {
      const request = JSON.parse(text) as Record<string, unknown>;
      const user = typeof request['user'] === 'string' ? request['user'] : '';
      const result = this.#options.handler(user, parseJsonText(request['config']), parseJsonText(request['arguments']));
      if (isAsyncIterable(result)) {
        for await (const chunk of result) this.#respond({ error: null, response: chunk, end_of_stream: false }, id);
        this.#respond({ error: null, response: '', end_of_stream: true }, id);
      } else {
        this.#respond({ error: null, response: await result, end_of_stream: true }, id);
      }
    } catch (err) {
      this.#options.onError?.(err);
      if (err instanceof ResponseTooLargeError) this.#respondError('response-too-large', err.message, id);
      else this.#respondError(this.#options.errorType ?? 'tool-service-error', reasonOf(err), id);
    }
  }

  /** Sends one response message now, or once the broker is back; throws when it is too large for one message. */
  #respond(message: ResponseMessage, id: string): void {
    const payload = JSON.stringify(message);
    const properties = { id };
    const context = this.#responses.nextContext();
    const facts = oversize(payload, this.#limits, properties, context);
    if (facts) throw new ResponseTooLargeError(oversizeMessage(facts));
    const frame = { text: publishFrame(payload, properties, context), context };
    if (this.#responses.socket.open) this.#send(frame);
    else if (this.#queued.length < MAX_QUEUED_RESPONSES) this.#queued.push(frame);
    else this.#log.warn({ id, queued: this.#queued.length }, 'dropped a response: the broker is away and the queue of responses is full');
  }

  #respondError(type: string, message: string, id: string): void {
    try {
      this.#respond({ error: { type, message }, response: '', end_of_stream: true }, id);
    } catch (err) {
      this.#log.error({ id, reason: reasonOf(err) }, 'cannot send an error response');
    }
  }

  #send(frame: ResponseFrame): void {
    this.#responses.send(frame.text, frame.context).then(
      (ack) => {
        if (!ack.ok) this.#log.warn({ result: ack.result, errorMsg: ack.errorMsg }, 'the broker did not take a response');
      },
      () => undefined,
    );
  }
}

/** Starts a tool service; it connects, and reconnects, in the background (see `ready`). */
export function runToolService(options: ToolServiceOptions): RunningToolService {
  const service = new ToolService(options);
  service.start();
  // A plain object, as before the class: its methods may be passed around unbound.
  return {
    ready: service.ready,
    stopped: service.stopped,
    get state() {
      return service.state;
    },
    close: () => service.close(),
    announce: (tools) => service.announce(tools),
  };
}
