/**
 * A bench client's MCP session over plain `fetch` (bench/mcp.ts, bench/mcp-pages.ts): `initialize`
 * and `notifications/initialized`, POSTs with their own JSON-RPC ids, and load specs that send
 * each request with its own id (the SDK's transport routes each answer by its request id).
 */
import type autocannon from 'autocannon';
import type { LoadSpec } from './measure.js';

const PROTOCOL_VERSION = '2025-11-25';

export interface RpcAnswer {
  status: number;
  bytes: number;
  contentType: string;
  message: { jsonrpc?: string; id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } } | null;
}

/** The JSON-RPC message of an answer: the body as JSON, or the `data` of its `message` event. */
function parseRpc(contentType: string, text: string): RpcAnswer['message'] {
  try {
    if (contentType.includes('text/event-stream')) {
      const data = text
        .split('\n\n')
        .map((event) =>
          event
            .split('\n')
            .filter((line) => line.startsWith('data:'))
            .map((line) => line.slice(5).trimStart())
            .join('\n'),
        )
        .filter((d) => d !== '');
      // Progress notifications may come first; the response is the last event.
      const last = data.at(-1);
      return last === undefined ? null : (JSON.parse(last) as RpcAnswer['message']);
    }
    return text === '' ? null : (JSON.parse(text) as RpcAnswer['message']);
  } catch {
    return null;
  }
}

export class McpSession {
  #nextId = 1;
  constructor(
    readonly base: string,
    readonly authorization: string,
    public id = '',
  ) {}

  headers(): Record<string, string> {
    return {
      authorization: this.authorization,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': PROTOCOL_VERSION,
      ...(this.id !== '' && { 'mcp-session-id': this.id }),
    };
  }

  body(method: string, params?: unknown, id: number | null = this.#nextId++): string {
    return JSON.stringify({ jsonrpc: '2.0', ...(id !== null && { id }), method, ...(params !== undefined && { params }) });
  }

  async post(body: string, base = this.base): Promise<RpcAnswer & { headers: Headers; text: string }> {
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: this.headers(), body });
    const text = await res.text();
    const contentType = res.headers.get('content-type') ?? '';
    return {
      status: res.status,
      bytes: Buffer.byteLength(text),
      contentType,
      message: parseRpc(contentType, text),
      headers: res.headers,
      text,
    };
  }

  /** `initialize`, then `notifications/initialized`; keeps the session id the server gave. */
  async open(): Promise<void> {
    const init = await this.post(
      this.body('initialize', {
        protocolVersion: PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'tool-registry-bench', version: '1.0.0' },
      }),
    );
    const id = init.headers.get('mcp-session-id');
    if (init.status !== 200 || id === null || !init.message?.result) {
      throw new Error(`MCP initialize answered ${init.status} (session id ${id ?? 'none'}): ${JSON.stringify(init.message).slice(0, 300)}`);
    }
    const version = init.message.result['protocolVersion'];
    if (version !== PROTOCOL_VERSION) throw new Error(`MCP initialize negotiated ${String(version)}, not ${PROTOCOL_VERSION}`);
    this.id = id;
    const done = await this.post(this.body('notifications/initialized', undefined, null));
    if (done.status !== 202) throw new Error(`notifications/initialized answered ${done.status}`);
  }

  /**
   * A load spec that posts `method` on this session, each request with its own JSON-RPC id
   * (concurrent requests with one id would have their answers mixed up by the transport).
   */
  spec(method: string, params: unknown, connections: number): LoadSpec {
    const tail = params === undefined ? '' : `,"params":${JSON.stringify(params)}`;
    let id = 1_000_000;
    return {
      path: '/mcp',
      connections,
      method: 'POST',
      headers: this.headers(),
      expectStatus: 200,
      setupRequest: (request: autocannon.Request) => {
        request.body = `{"jsonrpc":"2.0","id":${++id},"method":"${method}"${tail}}`;
        return request;
      },
    };
  }
}

/** The names of the tools `GET /` (with `query`, e.g. `?limit=1000`) shows a token, and its body bytes. */
export async function viewNames(base: string, authorization: string, query = ''): Promise<{ names: string[]; bytes: number }> {
  const res = await fetch(`${base}/${query}`, { headers: { authorization } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /${query} answered ${res.status}: ${text.slice(0, 300)}`);
  const tools = (JSON.parse(text) as { tools?: { name: string }[] }).tools ?? [];
  return { names: tools.map((t) => t.name), bytes: Buffer.byteLength(text) };
}
