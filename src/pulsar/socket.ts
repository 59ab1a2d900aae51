/**
 * The one reconnecting WebSocket to Pulsar's WebSocket API, under every producer, consumer and
 * reader of the registry and the toolkit: it opens, pings, and after any close reconnects with
 * jittered exponential backoff, until closed or (with `maxRetries`) until too many attempts in a
 * row have failed. What a socket is for (acknowledgements, messages) lives in producer.ts and
 * consumer.ts; what its owner says about it (logs, states) comes through its events.
 */
import WebSocket from 'ws';
import { BrokerUnavailableError, parseFrame } from './wire.js';

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
function keepAlive(ws: WebSocket, intervalMs: number): () => void {
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
      reject(new BrokerUnavailableError(reason));
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

/** Closes a socket without waiting; whatever it says afterwards is ignored. */
function terminate(ws: WebSocket): void {
  ws.removeAllListeners();
  ws.on('error', () => undefined);
  ws.terminate();
}

/** Closes a socket politely (the broker lets go of its subscription at once), then for good after `timeoutMs`. */
function closePolitely(ws: WebSocket, timeoutMs: number): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      terminate(ws);
      resolve();
    }, timeoutMs).unref();
    ws.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    ws.close();
  });
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** idle (never asked) -> connecting -> open <-> reconnecting -> closed (closed, or gave up). */
export type SocketState = 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface SocketOptions {
  /** The producer, consumer or reader URL; a function when it changes between connections (a reader's start). */
  url: string | (() => string);
  /** Sent as `Authorization: Bearer`; never logged. */
  token?: string | undefined;
  /** How long opening the socket may take. */
  connectTimeoutMs: number;
  /** A ping unanswered by the next one counts as a lost connection (default 30 s). */
  pingIntervalMs?: number;
  /** The first and the longest delay between attempts (default 250 ms to 10 s). */
  backoff?: { minMs?: number | undefined; maxMs?: number | undefined };
  /**
   * 'always' (the default): after any close or failed attempt, reconnect in the background.
   * 'on-demand': only when ready() is next called (a producer nobody publishes to needs no socket).
   */
  reconnect?: 'always' | 'on-demand';
  /** Failed attempts in a row after which the socket gives up and closes (default: never). */
  maxRetries?: number;
  /**
   * Whether a pending reconnection keeps the process alive: yes for a tool service, whose process
   * exists to serve; no for the registry's sockets, which must not hold up its exit.
   */
  holdsProcess?: boolean;
  /**
   * Work that must succeed, once the socket is open, before it counts as open (the toolkit opens
   * its request subscription here, so that it listens only with somewhere to answer); a failure
   * is a failed attempt.
   */
  whenOpen?: () => Promise<void>;
}

export interface RetryInfo {
  /** An open connection dropped (true), or an attempt failed (false). */
  dropped: boolean;
  /** Failed attempts in a row so far (0 after a drop). */
  attempt: number;
  delayMs: number;
  reason: string;
}

export interface SocketEvents {
  frame?(frame: Record<string, unknown>): void;
  /** The socket is open (the first time or again). */
  open?(): void;
  /** An open socket closed, or restart() closed it; not called for close(). */
  drop?(err: BrokerUnavailableError): void;
  /** The next attempt is due in `delayMs` ('always' sockets only). */
  retry?(info: RetryInfo): void;
  /** `maxRetries` attempts in a row failed: the socket is closed. */
  giveUp?(err: unknown, attempts: number): void;
}

export class ReconnectingSocket {
  readonly #options: SocketOptions;
  readonly #events: SocketEvents;
  readonly #backoff: Backoff;
  /** The socket once opened; during `whenOpen` it is here but the state is not yet 'open'. */
  #ws: WebSocket | null = null;
  #state: SocketState = 'idle';
  #connecting: Promise<void> | null = null;
  #timer: NodeJS.Timeout | undefined;
  #stopPing = () => undefined as void;
  #failures = 0;
  #generation = 0;

  constructor(options: SocketOptions, events: SocketEvents = {}) {
    this.#options = options;
    this.#events = events;
    this.#backoff = new Backoff(options.backoff?.minMs ?? 250, options.backoff?.maxMs ?? 10_000);
  }

  get state(): SocketState {
    return this.#state;
  }

  get open(): boolean {
    return this.#state === 'open' && this.#ws?.readyState === WebSocket.OPEN;
  }

  /** Counts connections, so that what was received on one is never acknowledged on the next. */
  get generation(): number {
    return this.#generation;
  }

  /** Connects in the background unless open or connecting. */
  start(): void {
    this.ready().catch(() => undefined);
  }

  /** Resolves when the socket is open; starts an attempt now (before a pending retry) if none is under way. */
  ready(): Promise<void> {
    if (this.#state === 'closed') return Promise.reject(new BrokerUnavailableError('the connection to the broker is closed'));
    if (this.open) return Promise.resolve();
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = null;
    });
    return this.#connecting;
  }

  /** Connects now with the backoff from its start: the caller has reason to think the broker is back. */
  retryNow(): void {
    if (this.#state === 'closed' || this.#connecting || this.open) return;
    this.#backoff.reset();
    this.start();
  }

  /** Sends on the current connection (or on connection `generation` only); false when it cannot. */
  send(text: string, generation = this.#generation): boolean {
    const ws = this.#ws;
    if (!ws || generation !== this.#generation || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(text);
    return true;
  }

  /** Drops an open connection as if it had closed; an 'always' socket then reconnects after the backoff's delay. */
  restart(): void {
    if (this.#state === 'open') this.#lost(new BrokerUnavailableError('the connection to the broker dropped'));
  }

  close(): void {
    this.#state = 'closed';
    clearTimeout(this.#timer);
    const ws = this.#detach();
    if (ws) terminate(ws);
  }

  /** Closes politely, waiting up to `timeoutMs` for the broker to close too. */
  async closeGently(timeoutMs: number): Promise<void> {
    this.#state = 'closed';
    clearTimeout(this.#timer);
    const ws = this.#detach();
    if (ws) await closePolitely(ws, timeoutMs);
  }

  async #connect(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const { url, token, connectTimeoutMs, whenOpen } = this.#options;
    if (this.#state === 'idle') this.#state = 'connecting';
    let ws: WebSocket | undefined;
    try {
      ws = await openSocket(typeof url === 'string' ? url : url(), token, connectTimeoutMs);
      if (this.#isClosed()) throw new BrokerUnavailableError('the connection to the broker is closed');
      this.#attach(ws);
      if (whenOpen) {
        await whenOpen();
        if (this.#isClosed()) throw new BrokerUnavailableError('the connection to the broker is closed');
        if (this.#ws !== ws || ws.readyState !== WebSocket.OPEN)
          throw new BrokerUnavailableError('the connection to the broker dropped while it opened');
      }
    } catch (err) {
      if (ws && this.#ws === ws) this.#detach();
      if (ws) terminate(ws);
      if (!this.#isClosed()) this.#failed(err);
      throw err;
    }
    this.#state = 'open';
    this.#failures = 0;
    this.#backoff.reset();
    this.#events.open?.();
  }

  /** A function, not a comparison: close() may run during any await. */
  #isClosed(): boolean {
    return this.#state === 'closed';
  }

  #attach(ws: WebSocket): void {
    this.#ws = ws;
    this.#generation++;
    ws.on('message', (data) => {
      const frame = parseFrame(String(data));
      if (frame) this.#events.frame?.(frame);
    });
    // Pulsar closes with codes 1-8, which ws reports as errors: the close that follows is what counts.
    ws.on('error', () => undefined);
    ws.on('close', () => {
      // During whenOpen, #connect sees the close itself.
      if (this.#ws === ws && this.#state === 'open') this.#lost(new BrokerUnavailableError('the connection to the broker dropped'));
    });
    this.#stopPing = keepAlive(ws, this.#options.pingIntervalMs ?? 30_000);
  }

  /** Forgets the socket (its listeners and pings) and returns it for closing. */
  #detach(): WebSocket | null {
    const ws = this.#ws;
    this.#ws = null;
    this.#stopPing();
    this.#stopPing = () => undefined;
    if (ws) {
      ws.removeAllListeners();
      ws.on('error', () => undefined);
    }
    return ws;
  }

  #lost(err: BrokerUnavailableError): void {
    const ws = this.#detach();
    if (ws) terminate(ws);
    this.#state = 'reconnecting';
    this.#events.drop?.(err);
    if (!this.#isClosed()) this.#schedule(true, err.message);
  }

  #failed(err: unknown): void {
    this.#failures++;
    if (this.#failures > (this.#options.maxRetries ?? Infinity)) {
      this.close();
      this.#events.giveUp?.(err, this.#failures);
      return;
    }
    this.#schedule(false, reasonOf(err));
  }

  #schedule(dropped: boolean, reason: string): void {
    if ((this.#options.reconnect ?? 'always') !== 'always' || this.#timer) return;
    const delayMs = this.#backoff.next();
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.start();
    }, delayMs);
    if (!this.#options.holdsProcess) this.#timer.unref();
    this.#events.retry?.({ dropped, attempt: dropped ? 0 : this.#failures, delayMs, reason });
  }
}
