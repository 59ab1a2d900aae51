/**
 * The life of a text/event-stream answer that outlives its handler (issue 32), in one place
 * rather than once per route: the change feed, a call's chunks (plain and AG-UI), an AG-UI run
 * and the MCP session stream each had their own copy of it, so a step (a released slot, a
 * cleared timer, a header) was written, and could be missed, four times.
 *
 * What a stream owns: for a held stream (one that lasts until the client, the server or the
 * token ends it), one of the caller's held-stream slots (MAX_WAITERS, MAX_WAITERS_PER_CALLER)
 * from the moment it is opened, the exemption from IDLE_TIMEOUT_MS, and an end when the token
 * expires; for every stream, the headers Fastify would have sent (reply.hijack() bypasses the
 * reply its hooks set them on), the cut-off of a client that stops reading (where the route
 * sets a bound), and one cleanup that runs however the stream ends (the client hangs up, the
 * server closes, a failure, the token).
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { exemptFromIdleTimeout } from './plugins/connections.js';
import { SSE_HEADERS } from './sse.js';

/** setTimeout's longest delay (about 24.8 days); a later expiry re-arms. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Past this many buffered bytes a writer that can wait (a replay) waits for the client to drain. */
const HIGH_WATER_BYTES = 64 * 1024;

/** The held-stream budget (src/catalog/waiters.ts): MAX_WAITERS in all, MAX_WAITERS_PER_CALLER each. */
interface StreamSlots {
  /** Takes a slot of `holder`, or throws TR_ERR_UNAVAILABLE (503 with Retry-After); returns its release. */
  reserve(holder: string): () => void;
}

interface HoldOptions {
  slots: StreamSlots;
  /** The caller key the slot counts against. */
  holder: string;
  /** When the caller's token stops being accepted (tokenExpiresAt); undefined: never. */
  expiresAt: number | undefined;
  /** Ends the stream at expiry, in the way its protocol closes a stream. */
  onExpired: (stream: EventStream) => void;
}

interface EventStreamOptions {
  /** A held stream: a slot, no idle timeout, an end at token expiry. */
  hold?: HoldOptions;
  /**
   * A client that stops reading is cut off once a write would pass this many buffered bytes
   * (a write onto a nearly drained stream always goes out whole, so that one larger than the
   * limit cannot stop a stream for good). Unset: the writer's own limits bound what it sends.
   */
  maxBufferedBytes?: number;
}

interface EventStreamsOptions {
  /** A comment written to every open stream this often, so that idle connections stay open. */
  heartbeat?: { everyMs: number; text: string };
  /** Open streams end when the server closes (streams that end on their own need not). */
  endOnClose?: boolean;
}

/** One event-stream answer; made by `eventStreams(...).open` as the handler begins. */
export class EventStream {
  readonly #request: FastifyRequest;
  readonly #reply: FastifyReply;
  readonly #raw: ServerResponse;
  readonly #hold: HoldOptions | undefined;
  readonly #maxBuffered: number;
  readonly #highWater: number;
  readonly #open: Set<EventStream>;
  readonly #gone = new AbortController();
  readonly #onEnd: (() => void)[] = [];
  readonly #release: (() => void) | undefined;
  #expiry: NodeJS.Timeout | undefined;
  #started = false;
  #ended = false;

  constructor(request: FastifyRequest, reply: FastifyReply, options: EventStreamOptions, open: Set<EventStream>) {
    this.#request = request;
    this.#reply = reply;
    this.#raw = reply.raw;
    this.#hold = options.hold;
    this.#maxBuffered = options.maxBufferedBytes ?? Infinity;
    this.#highWater = Math.min(HIGH_WATER_BYTES, this.#maxBuffered / 4);
    this.#open = open;
    // First, so that a refusal (503) comes before anything is written or listened to.
    this.#release = options.hold?.slots.reserve(options.hold.holder);
    // Registered before anything can fail, so that the slot is released however the answer ends.
    this.#raw.once('close', () => {
      if (!this.#raw.writableFinished) this.#gone.abort();
      this.#finish();
    });
  }

  /** Aborted when the client hangs up before the answer is complete: its calls are cancelled. */
  get signal(): AbortSignal {
    return this.#gone.signal;
  }

  /** The 200 and its headers are out: a failure from now on can only be an event. */
  get started(): boolean {
    return this.#started;
  }

  /** Nothing more is written: the client, the server, a cut-off or the token ended it. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Answers 200 with the event-stream headers. The security headers go in here because
   * hijacking skips the hooks that would add them (src/http/plugins/security-headers.ts).
   */
  start(headers: Readonly<Record<string, string>> = {}): void {
    if (this.#started) return;
    this.#reply.hijack();
    this.#raw.writeHead(200, { ...SSE_HEADERS, 'x-request-id': this.#request.id, ...headers });
    this.held();
  }

  /**
   * The stream is open, its head written by someone else (the MCP SDK's transport, through
   * reply.send): from now on it is held, and `start` is not needed.
   */
  held(): void {
    this.#started = true;
    if (this.#ended) return;
    this.#open.add(this);
    const hold = this.#hold;
    if (hold === undefined) return;
    exemptFromIdleTimeout(this.#request);
    const expiresAt = hold.expiresAt;
    if (expiresAt === undefined) return;
    const arm = () => {
      const left = expiresAt - Date.now();
      if (left <= 0) hold.onExpired(this);
      else this.#expiry = setTimeout(arm, Math.min(left, MAX_TIMER_MS)).unref();
    };
    arm();
  }

  /**
   * Writes unless the stream has ended. A client whose buffer would pass `maxBufferedBytes`
   * is cut off and its socket dropped at once (an `end` would keep the buffer until the client
   * read it); it resumes as its protocol lets it (Last-Event-ID).
   */
  write(text: string): void {
    if (this.admits(Buffer.byteLength(text))) this.#raw.write(text);
  }

  /**
   * Whether `bytes` more may go out, for a writer of its own (the MCP SDK's transport, through
   * reply.send): false once the stream has ended, and a client past `maxBufferedBytes` is cut
   * off here as `write` would cut it.
   */
  admits(bytes: number): boolean {
    if (this.#ended || this.#raw.destroyed) return false;
    const buffered = this.#raw.writableLength;
    if (buffered > this.#highWater && buffered + bytes > this.#maxBuffered) {
      this.cut();
      return false;
    }
    return true;
  }

  /** Resolves once the client has read the buffer down to the high-water mark, or is gone. */
  async drained(): Promise<void> {
    if (this.#raw.writableLength > this.#highWater && !this.#ended)
      await Promise.race([once(this.#raw, 'drain'), once(this.#raw, 'close')]);
  }

  /**
   * Ends the answer after `text`. With `graceMs`, the socket is dropped if that has not reached
   * the client by then (a client that is not reading would otherwise keep it).
   */
  end(text?: string, graceMs?: number): void {
    if (this.#ended) return;
    this.#finish();
    const raw = this.#raw;
    raw.end(text);
    if (graceMs === undefined) return;
    setTimeout(() => {
      if (!raw.writableFinished) raw.destroy();
    }, graceMs).unref();
  }

  /** Drops the socket at once: until the response has finished it holds the socket. */
  cut(): void {
    this.#finish();
    this.#raw.destroy();
  }

  /** Gives the slot back for a stream that never started: the answer is an ordinary reply instead. */
  release(): void {
    this.#finish();
  }

  /** Runs once when the stream ends, however it ends (at once if it has). */
  onEnd(cleanup: () => void): void {
    if (this.#ended) cleanup();
    else this.#onEnd.push(cleanup);
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#expiry);
    this.#open.delete(this);
    this.#release?.();
    for (const cleanup of this.#onEnd.splice(0)) cleanup();
  }
}

/**
 * A route's event streams: `open` makes one per answer; the heartbeat and the end on server
 * close reach every one of them that is open.
 */
export function eventStreams(fastify: FastifyInstance, options: EventStreamsOptions = {}) {
  const open = new Set<EventStream>();
  const { heartbeat, endOnClose = false } = options;
  if (heartbeat !== undefined || endOnClose) {
    const timer =
      heartbeat &&
      setInterval(() => {
        // Through the cut-off too: a heartbeat must not grow the buffer of a client that is not reading.
        for (const stream of open) stream.write(heartbeat.text);
      }, heartbeat.everyMs).unref();
    fastify.addHook('preClose', async () => {
      clearInterval(timer);
      if (endOnClose) for (const stream of [...open]) stream.end();
    });
  }
  return {
    open: (request: FastifyRequest, reply: FastifyReply, streamOptions: EventStreamOptions = {}): EventStream =>
      new EventStream(request, reply, streamOptions, open),
  };
}
