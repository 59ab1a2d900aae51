/**
 * An agent's side of the registry: discovery with ETags, rediscovery by blocking queries,
 * calls (JSON or streamed) with typed errors, and per-tool usage counts. Runtime dependencies:
 * none; `fetch` is Node's (or one passed in).
 */
import type { PublicTool } from '../model/public-view.js';
import { RegistryClientError, errorOf, problemError, retryAfterOf } from './errors.js';
import { readSse } from './sse.js';
import type { BinaryContent, Problem } from '../model/api.js';
import type { McpContentBlock } from '../model/mcp-content.js';

export type TokenSource = string | (() => string | Promise<string>);

export interface RegistryClientOptions {
  /** Where the registry answers, e.g. `http://127.0.0.1:8006` (a path prefix is kept). */
  baseUrl: string | URL;
  /** A bearer token, or a function giving one per request (so a refreshed token is picked up). */
  token?: TokenSource;
  fetch?: typeof globalThis.fetch;
}

export interface Discovery {
  tools: PublicTool[];
  /** `X-Registry-Index`: the registry's index when the view was served. */
  index: number;
  /** Tools the token cannot see (`X-Hidden-Tools`), when a token was sent. */
  hidden: number | undefined;
  /** True when the registry answered `304` and the cached list was reused. */
  notModified: boolean;
}

export interface InvokeResult {
  tool: string;
  id: string;
  result: string;
  /** An HTTP tool's bytes; for an mcp tool, its upstream's content blocks as sent (issue 31). */
  content?: BinaryContent | McpContentBlock[];
  durationMs: number;
}

export interface InvokeOptions {
  signal?: AbortSignal;
  /** Streams the call (`Accept: text/event-stream`); called with each piece of the observation. */
  onChunk?: (text: string) => void;
}

export interface WatchOptions {
  signal: AbortSignal;
  /** How long one blocking query may be held, in seconds (the registry allows at most 600). */
  waitS?: number;
  /** First and largest delay between retries after a failure, in ms. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** Told of each failed attempt before the client backs off and tries again. */
  onError?: (error: unknown) => void;
}

export interface UsageStats {
  total_tools_available: number;
  total_tool_calls: number;
  usage_by_tool: Record<string, number>;
  failures_by_tool: Record<string, number>;
  total_failures: number;
  most_used_tool: string | null;
}

interface Cached {
  etag: string;
  tools: PublicTool[];
}

export class RegistryClient {
  readonly #base: URL;
  readonly #token: TokenSource | undefined;
  readonly #fetch: typeof globalThis.fetch;
  #cached: Cached | undefined;
  #index = 0;
  readonly #calls = new Map<string, number>();
  readonly #failures = new Map<string, number>();

  constructor(options: RegistryClientOptions) {
    const base = new URL(String(options.baseUrl));
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    this.#base = base;
    this.#token = options.token;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The tools of the last discovery (empty before the first). */
  get tools(): PublicTool[] {
    return this.#cached?.tools ?? [];
  }

  /** The registry index of the last discovery. */
  get index(): number {
    return this.#index;
  }

  /** `GET /`, sending the last ETag: a `304` reuses the cached list without a body. */
  async discover(options: { signal?: AbortSignal } = {}): Promise<Discovery> {
    return this.#discover(new URL('./', this.#base), options.signal);
  }

  async #discover(url: URL, signal: AbortSignal | undefined): Promise<Discovery> {
    const headers = await this.#headers({ accept: 'application/json' });
    if (this.#cached) headers['if-none-match'] = this.#cached.etag;
    const response = await this.#fetch(url, { headers, ...(signal && { signal }) });
    const indexHeader = response.headers.get('x-registry-index');
    const hiddenHeader = response.headers.get('x-hidden-tools');
    const hidden = hiddenHeader !== null ? Number(hiddenHeader) : undefined;
    if (response.status === 304 && this.#cached) {
      await response.body?.cancel();
      if (indexHeader !== null) this.#index = Number(indexHeader);
      return { tools: this.#cached.tools, index: this.#index, hidden, notModified: true };
    }
    if (!response.ok) throw await errorOf(response);
    const body = (await response.json()) as { tools: PublicTool[] };
    const etag = response.headers.get('etag');
    this.#cached = etag !== null ? { etag, tools: body.tools } : undefined;
    if (indexHeader !== null) this.#index = Number(indexHeader);
    return { tools: body.tools, index: this.#index, hidden, notModified: false };
  }

  /**
   * Rediscovery by blocking queries (`GET /?index=&wait=`): each answer is the whole new list,
   * so no second request follows a change, and the ETag makes a wait that ends unchanged a
   * bodiless `304`. `onChange` gets the list whenever the caller's view changed (not on the
   * first discovery, which `discover()` gives). Failures back off exponentially with jitter
   * (honouring `Retry-After`); resolves when `signal` aborts.
   */
  async watch(onChange: (tools: PublicTool[], index: number) => void | Promise<void>, options: WatchOptions): Promise<void> {
    const { signal, waitS = 300, minBackoffMs = 250, maxBackoffMs = 30_000 } = options;
    let backoffMs = minBackoffMs;
    while (!signal.aborted) {
      try {
        if (!this.#cached) await this.#discover(new URL('./', this.#base), signal);
        const before = this.#cached?.etag;
        const url = new URL('./', this.#base);
        url.searchParams.set('index', String(this.#index));
        url.searchParams.set('wait', `${waitS}s`);
        const found = await this.#discover(url, signal);
        backoffMs = minBackoffMs;
        if (!found.notModified && this.#cached?.etag !== before) await onChange(found.tools, found.index);
      } catch (error) {
        if (signal.aborted) return;
        options.onError?.(error);
        const retryAfterMs = error instanceof RegistryClientError && error.retryAfterS !== undefined ? error.retryAfterS * 1000 : 0;
        await sleep(Math.max(retryAfterMs, backoffMs * (0.5 + Math.random() / 2)), signal);
        backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
      }
    }
  }

  /**
   * `POST /tools/{name}/invoke`. With `onChunk` the call is streamed and each `chunk` event is
   * handed over as it arrives; either way the result is the `result` event's (or the JSON
   * answer's) `InvokeResult`. Refusals and failures throw `RegistryClientError`.
   */
  async invoke(name: string, args: Record<string, unknown> = {}, options: InvokeOptions = {}): Promise<InvokeResult> {
    this.#calls.set(name, (this.#calls.get(name) ?? 0) + 1);
    try {
      return await this.#invoke(name, args, options);
    } catch (error) {
      this.#failures.set(name, (this.#failures.get(name) ?? 0) + 1);
      throw error;
    }
  }

  async #invoke(name: string, args: Record<string, unknown>, { signal, onChunk }: InvokeOptions): Promise<InvokeResult> {
    const url = new URL(`./tools/${encodeURIComponent(name)}/invoke`, this.#base);
    const headers = await this.#headers({ 'content-type': 'application/json', accept: onChunk ? 'text/event-stream' : 'application/json' });
    const response = await this.#fetch(url, { method: 'POST', headers, body: JSON.stringify(args), ...(signal && { signal }) });
    if (!response.ok) throw await errorOf(response);
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return (await response.json()) as InvokeResult;
    if (!response.body) throw new RegistryClientError(response.status, 'TR_CLIENT_BAD_STREAM', 'the stream has no body');
    for await (const event of readSse(response.body)) {
      if (event.event === 'chunk') onChunk?.((JSON.parse(event.data) as { text: string }).text);
      else if (event.event === 'result') return JSON.parse(event.data) as InvokeResult;
      else if (event.event === 'error')
        throw problemError(response.status, JSON.parse(event.data) as Problem, retryAfterOf(response.headers));
    }
    throw new RegistryClientError(response.status, 'TR_CLIENT_BAD_STREAM', 'the stream ended without a result');
  }

  /** Calls and failures per tool, counted by this client, in the article's `get_tool_usage_stats` shape. */
  usage(): UsageStats {
    const usage_by_tool: Record<string, number> = Object.create(null) as Record<string, number>;
    const failures_by_tool: Record<string, number> = Object.create(null) as Record<string, number>;
    let total = 0;
    let failures = 0;
    let most: string | null = null;
    for (const [name, count] of this.#calls) {
      usage_by_tool[name] = count;
      total += count;
      if (most === null || count > (this.#calls.get(most) ?? 0)) most = name;
    }
    for (const [name, count] of this.#failures) {
      failures_by_tool[name] = count;
      failures += count;
    }
    return {
      total_tools_available: this.tools.length,
      total_tool_calls: total,
      usage_by_tool,
      failures_by_tool,
      total_failures: failures,
      most_used_tool: most,
    };
  }

  async #headers(base: Record<string, string>): Promise<Record<string, string>> {
    const token = typeof this.#token === 'function' ? await this.#token() : this.#token;
    return token ? { ...base, authorization: `Bearer ${token}` } : { ...base };
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
