/**
 * MCP revision 2026-07-28 on `POST /mcp` (issue 31), which the TypeScript SDK 1.32 does not
 * speak. A request of that revision is a self-contained POST: no `initialize`, no session; its
 * `params._meta` carries the protocol version (which must equal the `MCP-Protocol-Version`
 * header) and the client's capabilities. What is ours and what is the SDK's:
 *
 * - Ours (this file): telling a 2026-07-28 request from an older one, the header and `_meta`
 *   checks and their errors (`-32020` HeaderMismatch, `-32022` UnsupportedProtocolVersion, both
 *   400; `-32601` with 404 for methods not offered), `server/discover`, `tools/list` from the
 *   page's precomputed bytes with the revision's `resultType`, `ttlMs` and `cacheScope`, and
 *   the checks of `subscriptions/listen`, whose stream is src/http/mcp/listen.ts.
 * - The SDK's: `tools/call` (and `ping`), run by a server and transport of the SDK made for the
 *   one request, stateless (no session id), handed the request as revision 2025-11-25, the
 *   newest its transport knows; the call handler (server.ts) adds `resultType`. A call's answer
 *   is the same JSON-RPC result at both revisions but for that field.
 *
 * Not offered at 2026-07-28: multi round-trip input requests (nothing here asks the client for
 * input), logging, and the prompts and resources a listen filter may name (the registry has none).
 */
import type { FastifyReply } from 'fastify';
import { safeParse } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import {
  ErrorCode,
  isJSONRPCNotification,
  isJSONRPCRequest,
  ListToolsRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCRequest,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { IncomingHttpHeaders } from 'node:http';
import { RegistryError } from '../../model/errors.js';
import type { ViewKey } from '../../model/visibility.js';
import { SubscriptionsListenRequestSchema, type SubscriptionFilter } from '../../model/mcp-listen.js';
import { describeInvalidParams, type ParamsIssue } from './invalid-params.js';
import type { McpToolLists } from './tool-lists.js';

export const MODERN_REVISION = '2026-07-28';
/** Every revision /mcp speaks, newest first: this one, then the SDK's. */
const SERVED_REVISIONS: readonly string[] = [MODERN_REVISION, ...SUPPORTED_PROTOCOL_VERSIONS];

const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';
/** The revision's error codes (schema/2026-07-28/schema.ts). */
const HEADER_MISMATCH = -32020;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** Methods the SDK's server answers at this revision, through a stateless server of its own. */
const SDK_METHODS: ReadonlySet<string> = new Set(['tools/call', 'ping']);

export interface ModernDeps {
  toolLists: McpToolLists;
  /** `ttlMs` of the anonymous view's list, which is `public`: ANONYMOUS_MAX_AGE_S, as `GET /` gives shared caches. */
  publicTtlMs: number;
  name: string;
  title: string;
  version: string;
  instructions: string;
}

/** The version a request's `_meta` names, if it names one. */
function metaVersion(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const params = (body as { params?: unknown }).params;
  if (typeof params !== 'object' || params === null) return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  return typeof meta === 'object' && meta !== null ? (meta as Record<string, unknown>)[PROTOCOL_VERSION_META] : undefined;
}

/**
 * Whether a POST is of the 2026-07-28 kind: its `MCP-Protocol-Version` says so, or it has no
 * session and its `_meta` names a protocol version (which older revisions never put there).
 */
export function isModernPost(headers: IncomingHttpHeaders, body: unknown): boolean {
  if (headers['mcp-protocol-version'] === MODERN_REVISION) return true;
  return headers['mcp-session-id'] === undefined && metaVersion(body) !== undefined;
}

function refusal(code: 'TR_ERR_BAD_REQUEST' | 'TR_ERR_NOT_FOUND', rpcCode: number, message: string, id: RequestId | null, data?: unknown) {
  return new RegistryError(code, message, {
    extra: { jsonrpc: '2.0', error: { code: rpcCode, message, ...(data !== undefined && { data }) }, id },
  });
}

/**
 * The request a 2026-07-28 POST holds, checked as the revision's transport rules say; throws
 * the refusal otherwise. Undefined for a notification (202, nothing to answer).
 */
export function modernRequest(headers: IncomingHttpHeaders, body: unknown): JSONRPCRequest | undefined {
  if (isJSONRPCNotification(body)) return undefined;
  if (!isJSONRPCRequest(body)) {
    throw refusal('TR_ERR_BAD_REQUEST', ErrorCode.InvalidRequest, `MCP ${MODERN_REVISION}: the body must be one JSON-RPC request`, null);
  }
  const header = headers['mcp-protocol-version'];
  const named = metaVersion(body);
  if (typeof header !== 'string' || named !== header) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      HEADER_MISMATCH,
      `the MCP-Protocol-Version header (${JSON.stringify(header ?? null).slice(0, 100)}) must equal params._meta["${PROTOCOL_VERSION_META}"] (${JSON.stringify(named ?? null).slice(0, 100)})`,
      body.id,
    );
  }
  if (header !== MODERN_REVISION) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      UNSUPPORTED_PROTOCOL_VERSION,
      `protocol version ${header.slice(0, 100)} is not supported here (supported: ${SERVED_REVISIONS.join(', ')})`,
      body.id,
      { supported: [...SERVED_REVISIONS], requested: header },
    );
  }
  const method = headers['mcp-method'];
  if (method !== undefined && method !== body.method) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      HEADER_MISMATCH,
      `the Mcp-Method header (${JSON.stringify(method).slice(0, 100)}) must equal the request's method (${JSON.stringify(body.method).slice(0, 100)})`,
      body.id,
    );
  }
  return body;
}

/** Whether the SDK's server answers this method (through a stateless transport of its own). */
export const answeredBySdk = (request: JSONRPCRequest): boolean => SDK_METHODS.has(request.method);

/** A JSON-RPC answer as a plain JSON body, which the revision lets a server choose per request. */
function sendJson(reply: FastifyReply, text: string | Buffer): FastifyReply {
  return reply
    .code(200)
    .header('content-type', 'application/json')
    .send(typeof text === 'string' ? Buffer.from(text) : text);
}

/**
 * Answers `server/discover` and `tools/list`; refuses any other method but the SDK's as not
 * found (the revision's 404 with `-32601`).
 */
export function answerModern(
  reply: FastifyReply,
  deps: ModernDeps,
  request: JSONRPCRequest,
  view: { key: ViewKey; anonymous: boolean },
): FastifyReply {
  const tail = `,"jsonrpc":"2.0","id":${JSON.stringify(request.id)}}`;
  // The anonymous view is what anyone gets: `public`. A token's view is its own: `private`, never shared.
  const cacheScope = view.anonymous ? 'public' : 'private';
  const ttlMs = view.anonymous ? deps.publicTtlMs : 0;
  switch (request.method) {
    case 'server/discover': {
      const result = {
        resultType: 'complete',
        supportedVersions: [...SERVED_REVISIONS],
        // Tool-list changes reach a 2026-07-28 client through subscriptions/listen (listen.ts).
        capabilities: { tools: { listChanged: true } },
        instructions: deps.instructions,
        // The same for every caller.
        ttlMs: deps.publicTtlMs,
        cacheScope: 'public',
        _meta: { [SERVER_INFO_META]: { name: deps.name, title: deps.title, version: deps.version } },
      };
      return sendJson(reply, `{"result":${JSON.stringify(result)}${tail}`);
    }
    case 'tools/list': {
      const parsed = safeParse(ListToolsRequestSchema, request);
      if (!parsed.success) {
        const issues = (parsed.error as { issues?: ParamsIssue[] }).issues ?? [];
        return sendJson(reply, rpcError(request.id, ErrorCode.InvalidParams, describeInvalidParams(request.method, request, issues)));
      }
      const cursor = parsed.data.params?.cursor;
      let result: Buffer;
      try {
        result = deps.toolLists.resultBytes(view.key, cursor, {
          key: `${MODERN_REVISION}\u0000${cacheScope}\u0000${ttlMs}`,
          text: `,"resultType":"complete","ttlMs":${ttlMs},"cacheScope":"${cacheScope}"`,
        });
      } catch (err) {
        if (err instanceof RegistryError) return sendJson(reply, rpcError(request.id, ErrorCode.InvalidParams, err.message));
        throw err;
      }
      return sendJson(reply, Buffer.concat([RESULT_HEAD, result, Buffer.from(tail)]));
    }
    default:
      throw refusal(
        'TR_ERR_NOT_FOUND',
        ErrorCode.MethodNotFound,
        `Method not found: ${request.method.slice(0, 100)} is not offered at MCP ${MODERN_REVISION}`,
        request.id,
      );
  }
}

/** The revision's method for a stream of change notifications. */
export const LISTEN_METHOD = 'subscriptions/listen';

/**
 * The filter of a `subscriptions/listen` request. Its answer is an event stream and nothing
 * else, so an `Accept` without `text/event-stream` is refused (406, as the Python SDK's server
 * does); params that are not the revision's are answered `-32602` here, and undefined returned.
 */
export function listenFilter(reply: FastifyReply, request: JSONRPCRequest, accept: string | undefined): SubscriptionFilter | undefined {
  if (!/\btext\/event-stream\b/i.test(accept ?? '')) {
    const message = `${LISTEN_METHOD} answers with an event stream: Accept must list text/event-stream`;
    throw new RegistryError('TR_ERR_NOT_ACCEPTABLE', message, {
      extra: { jsonrpc: '2.0', error: { code: ErrorCode.InvalidRequest, message }, id: request.id },
    });
  }
  const parsed = SubscriptionsListenRequestSchema.safeParse(request);
  if (parsed.success) return parsed.data.params.notifications;
  sendJson(reply, rpcError(request.id, ErrorCode.InvalidParams, describeInvalidParams(request.method, request, parsed.error.issues)));
  return undefined;
}

const RESULT_HEAD = Buffer.from('{"result":');

function rpcError(id: RequestId, code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
}
