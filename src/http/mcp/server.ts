/**
 * One MCP server per session, built on the SDK's own `Server`: `tools/list` from the catalogue's
 * pages in the caller's view, `tools/call` through the same bridge as
 * `POST /tools/{name}/invoke`. Who is asking comes with every HTTP request (its verified
 * token), not from the session: a session outlives tokens, and a refreshed token may see more.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { safeParse, type AnyObjectSchema, type SchemaOutput } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { getMethodLiteral } from '@modelcontextprotocol/sdk/server/zod-json-schema-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isJSONRPCRequest,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type JSONRPCErrorResponse,
  type JSONRPCRequest,
  type Notification,
  type Request,
  type Result,
  type ServerNotification,
  type ServerRequest,
  type ServerResult,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { ToolBridge } from '../../bridge/bridge.js';
import type { BinaryContent } from '../../model/api.js';
import type { Caller } from '../../model/caller.js';
import { RegistryError } from '../../model/errors.js';
import { mcpResultOf } from '../../model/mcp-tool.js';
import { viewKeyFor, type VisibilityPolicy } from '../../model/visibility.js';
import { describeInvalidParams, type ParamsIssue } from './invalid-params.js';
import { progressRelay, type ProgressLimits } from './progress.js';
import { refusedCall } from './refusals.js';
import type { McpToolLists } from './tool-lists.js';

/** What the route knows about the HTTP request a message came in. */
export interface McpRequestContext {
  caller: Caller;
  /** Whose share of the in-flight calls a call uses. */
  callerKey: string;
  /** The request's Authorization header, forwarded to HTTP tools only when the operator allows it. */
  authorization: string | undefined;
  /** Aborted when the HTTP request's client goes away. */
  signal: AbortSignal;
  /** Called when a call fails, with the refusal's code and HTTP status, for the audit log. */
  onCallFailed: (toolName: string, code: string, status: number) => void;
  /** The request's protocol revision where it is one the SDK does not know (2026-07-28). */
  revision?: string | undefined;
}

export interface McpServerDeps {
  toolLists: McpToolLists;
  bridge: ToolBridge;
  visibility: VisibilityPolicy;
  knownScopes: () => Iterable<string>;
  forwardAuthorization: boolean;
  /** Bounds on an upstream's progress relayed to a client (MCP_PROGRESS_INTERVAL_MS, MCP_PROGRESS_MAX). */
  progress: ProgressLimits;
  version: string;
}

export const SERVER_NAME = 'tool-registry';
export const SERVER_TITLE = 'Tool registry';

export const INSTRUCTIONS =
  'A registry of tools. tools/list shows the tools your token may use; tools/call runs one through the registry, which checks your scopes again at call time. The list changes at runtime: follow notifications/tools/list_changed.';

/** The elicitation validator the SDK builds per server; nothing here elicits, so one is shared. */
let sharedValidator: AjvJsonSchemaValidator | undefined;

type RequestHandler<T extends AnyObjectSchema> = (
  request: SchemaOutput<T>,
  extra: RequestHandlerExtra<ServerRequest | Request, ServerNotification | Notification>,
) => ServerResult | Result | Promise<ServerResult | Result>;

/** Each server's request schemas by method, recorded as handlers are registered. */
const requestSchemas = new WeakMap<Server, Map<string, AnyObjectSchema>>();

/**
 * The SDK's `Server`, answering a request whose params its method's schema refuses with
 * `-32602` (Invalid params) and a message a person can read. The SDK parses params inside the
 * handler it registers (`Protocol.setRequestHandler`) and answers any failure there, zod's
 * included, with `-32603` (Internal error) and the zod issues as JSON for its message. So each
 * method's schema is recorded as its handler is registered (the SDK's own `initialize` and
 * `ping` too, which its constructors register through this method), and every request is
 * checked against it before the SDK sees it. Methods without a handler stay the SDK's
 * `-32601` (Method not found).
 */
class RegistryMcpServer extends Server {
  override setRequestHandler<T extends AnyObjectSchema>(schema: T, handler: RequestHandler<T>): void {
    // Called from the SDK's constructors, before this class's fields exist: hence the WeakMap.
    let schemas = requestSchemas.get(this);
    if (!schemas) requestSchemas.set(this, (schemas = new Map()));
    schemas.set(getMethodLiteral(schema), schema);
    super.setRequestHandler(schema, handler);
  }

  override async connect(transport: Transport): Promise<void> {
    await super.connect(transport);
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const refusal = isJSONRPCRequest(message) ? this.#invalidParams(message) : undefined;
      if (refusal === undefined) return deliver?.(message, extra);
      // Sent as the SDK sends its answers, so the response stream counts it as this request's.
      transport.send(refusal).catch((err: unknown) => this.onerror?.(err instanceof Error ? err : new Error(String(err))));
    };
  }

  /** The `-32602` answer to a request its method's schema refuses; undefined when it passes. */
  #invalidParams(request: JSONRPCRequest): JSONRPCErrorResponse | undefined {
    const schema = requestSchemas.get(this)?.get(request.method);
    if (schema === undefined) return undefined;
    const parsed = safeParse(schema, request);
    if (parsed.success) return undefined;
    const issues = (parsed.error as { issues?: ParamsIssue[] }).issues ?? [];
    const message = describeInvalidParams(request.method, request, issues);
    return { jsonrpc: '2.0', id: request.id, error: { code: ErrorCode.InvalidParams, message } };
  }
}

export function createMcpServer(deps: McpServerDeps, contextOf: (authInfo: unknown) => McpRequestContext | undefined): Server {
  sharedValidator ??= new AjvJsonSchemaValidator();
  const server = new RegistryMcpServer(
    { name: SERVER_NAME, title: SERVER_TITLE, version: deps.version },
    { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS, jsonSchemaValidator: sharedValidator },
  );
  const context = (authInfo: unknown): McpRequestContext => {
    const found = contextOf(authInfo);
    if (!found) throw rpcError(ErrorCode.InternalError, 'no request context');
    return found;
  };

  server.setRequestHandler(ListToolsRequestSchema, (request, extra) => {
    // Reached for tools/list in a batch (revisions before 2025-06-18); a tools/list alone is
    // answered from the same page's bytes before the SDK sees it (src/http/mcp/list-answer.ts).
    const { caller } = context(extra.authInfo);
    const key = viewKeyFor(caller, deps.visibility, deps.knownScopes);
    try {
      return { ...deps.toolLists.page(key, request.params?.cursor) };
    } catch (err) {
      if (err instanceof RegistryError) throw rpcError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
  });

  const callTool = async (
    params: { name: string; arguments?: Record<string, unknown> | undefined },
    extra: RequestHandlerExtra<ServerRequest | Request, ServerNotification | Notification>,
    ctx: McpRequestContext,
  ): Promise<CallToolResult> => {
    const name = params.name;
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    const sendProgress = (values: { progress: number; total?: number | undefined; message?: string | undefined }) => {
      if (progressToken === undefined) return;
      extra
        .sendNotification({ method: 'notifications/progress', params: { progressToken, ...withoutUndefined(values) } })
        .catch(() => undefined);
    };
    // An upstream MCP server's own progress, bounded (src/http/mcp/progress.ts).
    const upstreamProgress = progressToken === undefined ? undefined : progressRelay(sendProgress, deps.progress);
    try {
      const { tool } = deps.bridge.admit(name, ctx.caller);
      const upstream = tool.kind === 'mcp';
      const result = await deps.bridge.invoke({
        toolName: name,
        arguments: params.arguments ?? {},
        caller: ctx.caller,
        authorization: deps.forwardAuthorization ? ctx.authorization : undefined,
        callerKey: ctx.callerKey,
        signal: AbortSignal.any([extra.signal, ctx.signal]),
        // Streamed output becomes progress notifications, on this request's own stream; an mcp
        // tool's answer comes whole in the result, and its upstream's progress is relayed instead.
        onChunk: progressToken === undefined || upstream ? undefined : (text) => sendProgress({ progress: ++progress, message: text }),
        ...(upstreamProgress !== undefined && upstream && { onProgress: (values) => upstreamProgress.relay(values) }),
      });
      upstreamProgress?.end();
      // An answer of bytes is MCP image content, or an embedded resource named by the call's id.
      if (result.content !== undefined && !Array.isArray(result.content) && tool.outputSchema === undefined)
        return { content: [binaryContentOf(result.content, result.id)] };
      const parsed = mcpResultOf(tool, result.result);
      // An mcp tool's own blocks go on whole (issue 31): its text stays beside its structured content.
      const answer: CallToolResult | null =
        parsed && Array.isArray(result.content) ? { ...parsed, content: result.content as CallToolResult['content'] } : parsed;
      // Structured content must conform to the output schema (MCP 2025-06-18); a clients' SDK
      // refuses the whole result otherwise, so a tool that breaks its schema is a failed call.
      const problem = answer?.structuredContent && (await deps.bridge.outputProblem(tool, answer.structuredContent));
      if (answer && !problem) return answer;
      ctx.onCallFailed(name, 'TR_ERR_TOOL_SERVICE', 502);
      return failed(
        problem
          ? `${name} failed: ${problem}`
          : `${name} answered with something other than the JSON object its output schema describes: ${result.result.slice(0, 1000)}`,
      );
    } catch (err) {
      upstreamProgress?.end();
      if (!(err instanceof RegistryError)) throw err;
      const status = err.status;
      ctx.onCallFailed(name, err.code, status);
      // A name the caller may not know of is a protocol error, as for any unknown tool.
      if (err.code === 'TR_ERR_NOT_FOUND' || err.code === 'TR_ERR_GONE') throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      // Refused calls too (no token, a missing scope): a result the client keeps its session with.
      return refusedCall(err);
    }
  };

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const ctx = context(extra.authInfo);
    const result = await callTool(request.params, extra, ctx);
    // Revision 2026-07-28 requires every result to say what it is; nothing here asks for input.
    return ctx.revision === undefined ? result : { ...result, resultType: 'complete' };
  });

  return server;
}

/**
 * A JSON-RPC error whose wire `message` is the text itself (issue 31): the SDK's `McpError`
 * prefixes its message with "MCP error <code>: ", the server sends `error.message` as is, and a
 * client SDK building its own McpError from the answer prefixes it again.
 */
function rpcError(code: ErrorCode, message: string): McpError {
  const err = new McpError(code, message);
  err.message = message;
  return err;
}

/** Bytes as MCP content: an image as image content, anything else as an embedded resource's blob. */
function binaryContentOf(binary: BinaryContent, callId: string): CallToolResult['content'][number] {
  if (binary.type === 'image') return { type: 'image', data: binary.data, mimeType: binary.mimeType };
  return { type: 'resource', resource: { uri: `urn:uuid:${callId}`, mimeType: binary.mimeType, blob: binary.data } };
}

/** The object without its undefined fields (the SDK's notification schema refuses them under exactOptionalPropertyTypes). */
function withoutUndefined<T extends Record<string, unknown>>(values: T): T {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as T;
}

/** A call that failed, as MCP reports it to the model: a readable message and `isError`. */
function failed(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}
