/**
 * A real MCP server (the official SDK's low-level `Server` over Streamable HTTP, stateful
 * sessions) on 127.0.0.1, for tests of registered upstream MCP servers: tools listed in small
 * pages, a tool added at runtime with `notifications/tools/list_changed`, the Authorization
 * headers it received, and stop/start on the same port. A tool's handler may send progress to
 * the caller's progress token; calls whose cancellation the server saw are recorded (issue 31).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** Sends `notifications/progress` for the call, when its client asked for progress (false otherwise). */
export type SendProgress = (progress: number, total?: number, message?: string) => Promise<boolean>;

export interface UpstreamToolDef {
  tool: Tool;
  /** `meta` is the request's `params._meta` (where a client's trace context travels). */
  handler: (
    args: Record<string, unknown>,
    signal: AbortSignal,
    meta: Record<string, unknown> | undefined,
    progress: SendProgress,
  ) => Promise<CallToolResult> | CallToolResult;
}

export interface McpUpstream {
  url: string;
  port: number;
  /** Every Authorization header received (empty string when none). */
  authorizations: string[];
  /** Every tools/call, with its arguments. */
  calls: { name: string; arguments: Record<string, unknown> }[];
  /** The tools/call requests the server saw cancelled (`notifications/cancelled`), by tool name. */
  cancelled: string[];
  /** Adds a tool and tells every session its list changed. */
  addTool(def: UpstreamToolDef): Promise<void>;
  /** Removes a tool and tells every session its list changed. */
  removeTool(name: string): Promise<void>;
  /** Tells every session its list changed, without changing it. */
  listChanged(): Promise<void>;
  /** Stops listening and drops every connection and session, as a crash would. */
  stop(): Promise<void>;
  /** Listens again on the same port, with no sessions. */
  start(): Promise<void>;
}

export async function startMcpUpstream(options: { tools: UpstreamToolDef[]; pageSize?: number; bearer?: string }): Promise<McpUpstream> {
  const tools = [...options.tools];
  const pageSize = options.pageSize ?? 100;
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: Server }>();
  const authorizations: string[] = [];
  const calls: McpUpstream['calls'] = [];
  const cancelled: string[] = [];

  const session = async (): Promise<StreamableHTTPServerTransport> => {
    const server = new Server({ name: 'test-upstream', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const start = request.params?.cursor === undefined ? 0 : Number(request.params.cursor);
      const end = start + pageSize;
      return { tools: tools.slice(start, end).map((d) => d.tool), ...(end < tools.length && { nextCursor: String(end) }) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const args = request.params.arguments ?? {};
      calls.push({ name: request.params.name, arguments: args });
      const def = tools.find((d) => d.tool.name === request.params.name);
      if (!def) throw new McpError(ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
      extra.signal.addEventListener('abort', () => cancelled.push(request.params.name), { once: true });
      const progressToken = request.params._meta?.progressToken;
      const progress: SendProgress = async (value, total, message) => {
        if (progressToken === undefined) return false;
        const params = { progressToken, progress: value, ...(total !== undefined && { total }), ...(message !== undefined && { message }) };
        await extra.sendNotification({ method: 'notifications/progress', params });
        return true;
      };
      return def.handler(args, extra.signal, request.params._meta, progress);
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server });
      },
    });
    await server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    authorizations.push(req.headers.authorization ?? '');
    if (options.bearer !== undefined && req.headers.authorization !== `Bearer ${options.bearer}`) {
      res.writeHead(401).end();
      return;
    }
    const id = req.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const known = sessions.get(id);
      if (!known)
        res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}');
      else await known.transport.handleRequest(req, res);
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(400).end();
      return;
    }
    await (await session()).handleRequest(req, res);
  };

  const listChanged = async () => {
    await Promise.all([...sessions.values()].map(({ server }) => server.sendToolListChanged()));
  };

  let http: HttpServer | null = null;
  let port = 0;
  const start = async () => {
    const server = createServer((req, res) => void handle(req, res));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    http = server;
  };
  await start();

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    port,
    authorizations,
    calls,
    cancelled,
    async addTool(def) {
      tools.push(def);
      await listChanged();
    },
    async removeTool(name) {
      const at = tools.findIndex((d) => d.tool.name === name);
      if (at >= 0) tools.splice(at, 1);
      await listChanged();
    },
    listChanged,
    async stop() {
      const server = http;
      http = null;
      if (!server) return;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.all(open.map(({ server: s }) => s.close().catch(() => undefined)));
      await closed;
    },
    start,
  };
}
