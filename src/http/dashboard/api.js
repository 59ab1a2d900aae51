// @ts-check
/**
 * The dashboard's only way to the registry: JSON reads and review writes with fetch and the change feed read as a
 * stream, both sending the token in the Authorization header and nowhere else (EventSource
 * cannot send headers, so the feed is read with fetch and a ReadableStream). The token lives in
 * sessionStorage: it goes when the tab closes, and no other tab or later visit sees it.
 */

const TOKEN_KEY = 'tool-registry.dashboard.token';

/** The registry's base URL: this module is served at <base>/dashboard/assets/<version>/api.js. */
const API_BASE = new URL('../../../', import.meta.url);

/** The pasted token, kept for this tab only. */
export const session = {
  /** @returns {string | null} */
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  /** @param {string} token */
  signIn(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** A refusal from the registry, with its problem details (RFC 9457) when it sent them. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {{ detail?: string, code?: string, errors?: { path?: string, message?: string }[] } | null} problem
   * @param {number | undefined} retryAfterS
   */
  constructor(status, problem, retryAfterS) {
    super(typeof problem?.detail === 'string' ? problem.detail : `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code;
    this.retryAfterS = retryAfterS;
    /** The problem's field errors (a 409 of the review queue names each change that moved). */
    this.errors = Array.isArray(problem?.errors) ? problem.errors : [];
  }
}

/**
 * @param {string | null} token
 * @param {Record<string, string>} [extra]
 * @returns {Record<string, string>}
 */
function headersFor(token, extra = {}) {
  return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
}

/**
 * @param {Response} res
 * @returns {Promise<ApiError>}
 */
async function refusal(res) {
  const problem = await res.json().catch(() => null);
  const retryAfter = Number(res.headers.get('retry-after'));
  return new ApiError(res.status, problem, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined);
}

/**
 * GET a JSON route, relative to the registry's base (`stats`, `audit?limit=10`).
 * @param {string} path
 * @param {string | null} token  null for routes that ignore credentials, or when signed out
 * @returns {Promise<any>}
 */
export async function getJson(path, token) {
  const res = await fetch(new URL(path, API_BASE), {
    headers: headersFor(token, { accept: 'application/json' }),
    cache: 'no-store',
    credentials: 'omit',
  });
  if (!res.ok) throw await refusal(res);
  return res.json();
}

/**
 * POST a JSON body to a route, relative to the registry's base, and read its JSON answer.
 * @param {string} path
 * @param {unknown} body
 * @param {string | null} token
 * @returns {Promise<any>}
 */
export async function postJson(path, body, token) {
  const res = await fetch(new URL(path, API_BASE), {
    method: 'POST',
    headers: headersFor(token, { accept: 'application/json', 'content-type': 'application/json' }),
    body: JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
  });
  if (!res.ok) throw await refusal(res);
  return res.json();
}

/**
 * A URL of the registry (a page of the console, `dashboard/tools/calculator`), relative to its base.
 * @param {string} path
 */
export const registryUrl = (path) => new URL(path, API_BASE);

/**
 * @typedef {object} Answer
 * @property {number} status
 * @property {Headers} headers
 * @property {any} body  the JSON body, the text where it is not JSON, null where there is none
 * @property {number} ms  milliseconds from sending to the whole answer read
 */

/**
 * Any request, answered or refused: what the caller gets, as it got it (the console's Try it
 * and its writes show refusals whole, problem+json and all).
 * @param {string} method
 * @param {string} path  relative to the registry's base
 * @param {{ token: string | null, body?: unknown, headers?: Record<string, string> }} options
 * @returns {Promise<Answer>}
 */
export async function request(method, path, { token, body, headers = {} }) {
  const started = performance.now();
  const res = await fetch(new URL(path, API_BASE), {
    method,
    headers: headersFor(token, {
      accept: 'application/json',
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...headers,
    }),
    ...(body !== undefined && { body: JSON.stringify(body) }),
    cache: 'no-store',
    credentials: 'omit',
  });
  const text = await res.text();
  const ms = performance.now() - started;
  let parsed = text === '' ? null : text;
  if (text !== '' && /json/.test(res.headers.get('content-type') ?? '')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      // Shown as the text it is.
    }
  }
  return { status: res.status, headers: res.headers, body: parsed, ms };
}

/** @param {Answer} answer */
export const refusalOf = (answer) =>
  new ApiError(answer.status, answer.body && typeof answer.body === 'object' ? answer.body : null, undefined);

/**
 * What the token says of itself, for display only: the registry is what checks it.
 * @param {string} token
 * @returns {{ sub?: string, scopes: string[], exp?: number }}
 */
export function claimsOf(token) {
  try {
    const part = (token.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/');
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    const scope =
      typeof claims.scope === 'string'
        ? claims.scope.split(' ')
        : Array.isArray(claims.scp)
          ? claims.scp
          : typeof claims.scp === 'string'
            ? claims.scp.split(' ')
            : [];
    return {
      sub: typeof claims.sub === 'string' ? claims.sub : undefined,
      scopes: scope.filter((/** @type {unknown} */ s) => typeof s === 'string' && s !== ''),
      exp: typeof claims.exp === 'number' ? claims.exp : undefined,
    };
  } catch {
    return { scopes: [] };
  }
}

/** @typedef {{ index: number, op: 'upsert' | 'delete', kind: 'tool' | 'tool-service', name: string }} ChangeEvent */
/** @typedef {'connecting' | 'live' | 'reconnecting' | 'needs-token' | 'stopped'} FeedState */

/** Waits that grow after failed connects, up to half a minute. */
const BACKOFF_MS = [1000, 2000, 5000, 10_000, 30_000];

/**
 * `GET /changes`, followed for as long as the page wants it: reconnects with Last-Event-ID
 * after a drop (the registry replays what was missed), and stops on a 401.
 */
export class ChangeFeed {
  /** @type {AbortController | null} */
  #abort = null;
  /** @type {string | null} */
  #lastId = null;

  /**
   * @param {{ onChange: (event: ChangeEvent) => void, onState: (state: FeedState) => void, onUnauthorized: (error: ApiError) => void }} handlers
   */
  constructor(handlers) {
    this.handlers = handlers;
  }

  /**
   * (Re)starts the feed for this token, from the registry index the page's figures are at.
   * @param {string | null} token
   * @param {number} since
   */
  start(token, since) {
    this.stop();
    this.#lastId = String(since);
    const abort = new AbortController();
    this.#abort = abort;
    void this.#run(token, abort.signal);
  }

  stop() {
    this.#abort?.abort();
    this.#abort = null;
  }

  /**
   * @param {string | null} token
   * @param {AbortSignal} signal
   */
  async #run(token, signal) {
    let failures = 0;
    while (!signal.aborted) {
      this.handlers.onState(failures === 0 ? 'connecting' : 'reconnecting');
      try {
        const res = await fetch(new URL('changes', API_BASE), {
          headers: headersFor(token, { accept: 'text/event-stream', ...(this.#lastId !== null && { 'last-event-id': this.#lastId }) }),
          cache: 'no-store',
          credentials: 'omit',
          signal,
        });
        if (res.status === 401) {
          const error = await refusal(res);
          this.handlers.onState(token ? 'stopped' : 'needs-token');
          if (token) this.handlers.onUnauthorized(error);
          return;
        }
        if (!res.ok || !res.body) throw await refusal(res);
        failures = 0;
        this.handlers.onState('live');
        await this.#read(res.body, signal);
      } catch (err) {
        if (signal.aborted) return;
        failures += 1;
        const retryAfterS = err instanceof ApiError ? err.retryAfterS : undefined;
        await sleep(retryAfterS ? retryAfterS * 1000 : (BACKOFF_MS[Math.min(failures, BACKOFF_MS.length) - 1] ?? 30_000), signal);
        continue;
      }
      // The registry ended the stream (a restart, the token's expiry): reconnect at once.
      failures = 1;
    }
  }

  /**
   * Server-sent events: blocks separated by a blank line, `id:`, `event:` and `data:` lines,
   * `:` comments (heartbeats).
   * @param {ReadableStream<Uint8Array>} body
   * @param {AbortSignal} signal
   */
  async #read(body, signal) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || signal.aborted) return;
        buffered += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffered.indexOf('\n\n')) >= 0) {
          const block = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          let event = 'message';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) this.#lastId = line.slice(4);
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (event === 'change' && data !== '') this.handlers.onChange(JSON.parse(data));
        }
      }
    } finally {
      reader.releaseLock();
    }
  }
}

/**
 * @param {number} ms
 * @param {AbortSignal} signal
 * @returns {Promise<void>}
 */
function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });
}
