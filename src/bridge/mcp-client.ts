/**
 * One connection to an upstream MCP server over Streamable HTTP, with the official SDK's
 * `Client`: connect, list every tool (all pages, bounded), call a tool, hear `list_changed`.
 * What the SDK does not tell in structured form is watched at its `fetch`: a request that
 * cannot reach the server, a session the server no longer knows (it restarted), and the end of
 * the stream that carries its notifications all mark the connection lost, once, so that its
 * owner (src/registry/mcp-sync.ts) reconnects and lists the tools again.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ListToolsResultSchema,
  type CallToolResult,
  type JSONRPCMessage,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import type { UpstreamTool } from '../model/mcp-tools.js';
import { refusalOf, type OutboundFetch } from './outbound-fetch.js';
import { annotateActive } from './tracing.js';

export interface McpClientOptions {
  /** The registered URL: the only one this connection sends requests to. */
  url: string;
  /** Sent as `Authorization: Bearer` to that URL; never the caller's token. */
  bearer: string | undefined;
  /** Bound on connecting and on each page of the tool list. */
  requestTimeoutMs: number;
  maxTools: number;
  /** Bound on the JSON text of the whole tool list. */
  maxListBytes: number;
  /** The server said its tool list changed (debounced). */
  onToolsChanged: () => void;
  /**
   * The connection is gone; called at most once, never after close(). `refused`: the outbound
   * address policy refused the server's address.
   */
  onLost: (reason: string, refused: boolean) => void;
  version: string;
  /** The outbound address policy's fetch (src/bridge/outbound-fetch.ts): every connection's address is checked. */
  fetch: OutboundFetch;
}

/** The tool list broke a bound: the listing fails, and nothing of it is stored. */
class UpstreamListError extends Error {
  override readonly name = 'UpstreamListError';
}

/** `list_changed` notifications often come in bursts (a server adding several tools). */
const LIST_CHANGED_DEBOUNCE_MS = 200;
/** Calls are bounded by the bridge's own timer (at most 600 s); the SDK's must never fire first. */
const CALL_TIMEOUT_MS = 601_000;
/** Pages of one listing: with the byte bound, it stops a server that pages forever. */
const MAX_PAGES = 10_000;

/**
 * The SDK's transport, noting each `tools/call` request's JSON-RPC id on the active span (the
 * call's MCP client span, src/bridge/mcp-transport.ts): the SDK numbers requests itself.
 */
class TracedTransport extends StreamableHTTPClientTransport {
  override send(message: JSONRPCMessage | JSONRPCMessage[], options?: Parameters<StreamableHTTPClientTransport['send']>[1]): Promise<void> {
    if (!Array.isArray(message) && 'method' in message && 'id' in message && message.method === 'tools/call')
      annotateActive('jsonrpc.request.id', String(message.id));
    return super.send(message, options);
  }
}

export class McpUpstreamClient {
  readonly #options: McpClientOptions;
  readonly #url: URL;
  readonly #client: Client;
  readonly #transport: TracedTransport;
  #closing = false;
  #lost: string | null = null;
  #refused = false;

  constructor(options: McpClientOptions) {
    this.#options = options;
    this.#url = new URL(options.url);
    this.#transport = new TracedTransport(this.#url, {
      fetch: (url, init) => this.#fetch(url, init),
      ...(options.bearer !== undefined && { requestInit: { headers: { authorization: `Bearer ${options.bearer}` } } }),
      // The stream of notifications is not resumed by the SDK: its end marks the connection
      // lost, and a new one lists the tools again (a list_changed may have been missed).
      reconnectionOptions: { initialReconnectionDelay: 1000, maxReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
    });
    this.#client = new Client(
      { name: 'tool-registry', version: options.version },
      {
        listChanged: {
          tools: { autoRefresh: false, debounceMs: LIST_CHANGED_DEBOUNCE_MS, onChanged: () => this.#options.onToolsChanged() },
        },
      },
    );
    // Errors the SDK reports without a caller to throw to; the fetch above notes the ones that matter.
    this.#client.onerror = () => undefined;
  }

  /** Why the connection was lost, or null while it is usable. */
  get lost(): string | null {
    return this.#lost;
  }

  /** Whether the connection was lost to the outbound address policy (its `lost` says why). */
  get refused(): boolean {
    return this.#refused;
  }

  /** The registered URL (its host and port name the server in spans). */
  get url(): URL {
    return this.#url;
  }

  /** The session the server gave, and the protocol version agreed, once connected. */
  get session(): { id: string | undefined; protocolVersion: string | undefined } {
    return { id: this.#transport.sessionId, protocolVersion: this.#transport.protocolVersion };
  }

  async connect(): Promise<void> {
    await this.#client.connect(this.#transport, { timeout: this.#options.requestTimeoutMs });
  }

  /**
   * Every tool the server lists, following `nextCursor`. Requested directly rather than with
   * `Client.listTools`, which compiles output validators for each page: calls are passed on as
   * answered (the agent validates), so that work would be wasted.
   */
  async listTools(): Promise<UpstreamTool[]> {
    const { maxTools, maxListBytes, requestTimeoutMs } = this.#options;
    const tools: UpstreamTool[] = [];
    const cursors = new Set<string>();
    let bytes = 0;
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await this.#client.request(
        { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
        ListToolsResultSchema,
        { timeout: requestTimeoutMs },
      );
      bytes += Buffer.byteLength(JSON.stringify(result.tools));
      if (bytes > maxListBytes)
        throw new UpstreamListError(`the tool list is larger than ${maxListBytes} bytes (MCP_UPSTREAM_MAX_LIST_BYTES)`);
      for (const tool of result.tools) {
        tools.push({
          name: tool.name,
          title: tool.title,
          description: tool.description,
          inputSchema: tool.inputSchema,
          outputSchema: tool.outputSchema,
        });
      }
      if (tools.length > maxTools) throw new UpstreamListError(`the server lists more than ${maxTools} tools (MCP_UPSTREAM_MAX_TOOLS)`);
      cursor = result.nextCursor;
      if (cursor === undefined) return tools;
      if (cursors.has(cursor)) throw new UpstreamListError('the server gave the same cursor twice');
      cursors.add(cursor);
    }
    throw new UpstreamListError(`the tool list has more than ${MAX_PAGES} pages`);
  }

  /**
   * `tools/call`; aborting `signal` cancels the call upstream (`notifications/cancelled`).
   * `traceContext` (`traceparent`, `tracestate`) goes in `params._meta`, unprefixed, as the MCP
   * conventions of OpenTelemetry and SEP-414 have it. With `onProgress`, the SDK asks for
   * progress (a `progressToken` of its own in `params._meta`) and hands each notification on.
   */
  callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    traceContext: Record<string, string> = {},
    onProgress?: (progress: Progress) => void,
  ): Promise<CallToolResult> {
    const params = { name, arguments: args, ...(Object.keys(traceContext).length > 0 && { _meta: traceContext }) };
    return this.#client.request({ method: 'tools/call', params }, CallToolResultSchema, {
      signal,
      timeout: CALL_TIMEOUT_MS,
      ...(onProgress !== undefined && { onprogress: onProgress }),
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.#client.close();
  }

  #markLost(reason: string, refused = false): void {
    if (this.#closing || this.#lost !== null) return;
    this.#lost = reason;
    this.#refused = refused;
    this.#options.onLost(reason, refused);
  }

  /** Every request of the SDK: only to the registered URL, and watched for a lost connection. */
  async #fetch(input: string | URL, init?: RequestInit): Promise<Response> {
    const target = new URL(input);
    if (target.origin !== this.#url.origin || target.pathname !== this.#url.pathname || target.search !== this.#url.search) {
      // A redirect elsewhere: the credential goes to the registered URL only.
      throw new Error(`refused a request to ${target.origin}${target.pathname}: only the registered URL is reached`);
    }
    let response: Response;
    try {
      response = await this.#options.fetch(target, init);
    } catch (err) {
      const refused = refusalOf(err);
      if (refused) this.#markLost(refused.message, true);
      else if (!init?.signal?.aborted) this.#markLost(`cannot reach the server${causeCode(err)}`);
      throw err;
    }
    if (response.status === 404 && new Headers(init?.headers).has('mcp-session-id')) {
      this.#markLost('the server no longer knows the session (did it restart?)');
    }
    if (!response.ok || !response.body) return response;
    const notifications = (init?.method ?? 'GET') === 'GET';
    const body = watched(response.body, (ended) => {
      if (!ended) this.#markLost('the connection broke during an answer');
      else if (notifications) this.#markLost('the server ended its notification stream');
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
}

/** A body that tells how it ended: `true` at its end, `false` when it broke; nothing when its reader cancels it. */
function watched(body: ReadableStream<Uint8Array>, onEnd: (ended: boolean) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let cancelled = false;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (cancelled) return;
        onEnd(false);
        controller.error(err);
        return;
      }
      if (cancelled) return;
      if (!chunk.done) return controller.enqueue(chunk.value);
      onEnd(true);
      controller.close();
    },
    cancel: (reason) => {
      cancelled = true;
      return reader.cancel(reason);
    },
  });
}

/** ` (ECONNREFUSED)` from undici's `fetch failed`, or nothing. */
function causeCode(err: unknown): string {
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return typeof code === 'string' ? ` (${code})` : '';
}

export type { CallToolResult };
