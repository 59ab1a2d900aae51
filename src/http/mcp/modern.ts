/**
 * MCP revision 2026-07-28 on `POST /mcp` (issue 31), which the TypeScript SDK 1.32 does not
 * speak. A request of that revision is a self-contained POST: no `initialize`, no session; its
 * `params._meta` carries the protocol version (which must equal the `MCP-Protocol-Version`
 * header) and the client's capabilities. What is ours and what is the SDK's:
 *
 * - Ours (this file): telling a 2026-07-28 request from an older one, the `_meta` and header
 *   checks and their errors (`-32602` for a `_meta` without the protocol version or the client's
 *   capabilities, `-32020` HeaderMismatch for `MCP-Protocol-Version`, `Mcp-Method` or `Mcp-Name`
 *   missing or unequal to the body, `-32022` UnsupportedProtocolVersion, all 400; `-32601` with
 *   404 for methods not offered, `ping` among them), each a JSON-RPC answer in `application/json`,
 *   `server/discover`, `tools/list` from the
 *   page's precomputed bytes with the revision's `resultType`, `ttlMs` and `cacheScope`, and
 *   the checks of `subscriptions/listen`, whose stream is src/http/mcp/listen.ts.
 * - The SDK's: `tools/call`, run by a server and transport of the SDK made for the
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
import { sendPieces } from './list-answer.js';
import type { McpToolLists } from './tool-lists.js';

export const MODERN_REVISION = '2026-07-28';
/** Every revision /mcp speaks, newest first: this one, then the SDK's. */
const SERVED_REVISIONS: readonly string[] = [MODERN_REVISION, ...SUPPORTED_PROTOCOL_VERSIONS];

const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';
/** The revision's error codes (schema/2026-07-28/schema.ts). */
const HEADER_MISMATCH = -32020;
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/**
 * Methods the SDK's server answers at this revision, through a stateless server of its own.
 * Not `ping`, which the revision removed (changelog, major change 5): it is not found, as any
 * method not offered.
 */
const SDK_METHODS: ReadonlySet<string> = new Set(['tools/call']);

export interface ModernDeps {
  toolLists: McpToolLists;
  /** `ttlMs` of the anonymous view's list, which is `public`: ANONYMOUS_MAX_AGE_S, as `GET /` gives shared caches. */
  publicTtlMs: number;
  name: string;
  title: string;
  version: string;
  instructions: string;
}

/** A request's `params._meta`, if it is an object. */
function metaOf(body: unknown): Record<string, unknown> | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const params = (body as { params?: unknown }).params;
  if (typeof params !== 'object' || params === null) return undefined;
  const meta = (params as { _meta?: unknown })._meta;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

/** The version a request's `_meta` names, if it names one. */
const metaVersion = (body: unknown): unknown => metaOf(body)?.[PROTOCOL_VERSION_META];

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
    // The revision's transport answers a request with application/json or an event stream only.
    rpcAnswer: true,
  });
}

/** The request's parameter each method mirrors into `Mcp-Name` (the transport's "Standard Request Headers"). */
const NAMED_BY: ReadonlyMap<string, string> = new Map([
  ['tools/call', 'name'],
  ['prompts/get', 'name'],
  ['resources/read', 'uri'],
]);

const BASE64_SENTINEL = /^=\?base64\?(.*)\?=$/s;
const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * A header value as the revision's "Value Encoding" says to read it: `=?base64?...?=` is the
 * UTF-8 of its Base64 payload, anything else is itself. Undefined for a payload that is not
 * canonical Base64 or not UTF-8, which then matches no body value.
 */
function decodeHeaderValue(value: string): string | undefined {
  const payload = BASE64_SENTINEL.exec(value)?.[1];
  if (payload === undefined) return value;
  if (!CANONICAL_BASE64.test(payload)) return undefined;
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.toString('base64') !== payload) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

const quoted = (value: unknown) => (JSON.stringify(value ?? null) ?? 'null').slice(0, 100);

/**
 * The request a 2026-07-28 POST holds, checked as the revision says, first failure wins (the
 * order the Python SDK's server uses): `_meta` with the protocol version and the client's
 * capabilities (else `-32602`, basic/index "Per-request protocol fields"); the headers
 * `MCP-Protocol-Version`, `Mcp-Method` and, for a method that names something, `Mcp-Name`,
 * present and equal to the body (else `-32020`, transports "Server Validation"); a revision
 * served (else `-32022`). All are 400. Undefined for a notification (202, nothing to answer).
 */
export function modernRequest(headers: IncomingHttpHeaders, body: unknown): JSONRPCRequest | undefined {
  if (isJSONRPCNotification(body)) return undefined;
  if (!isJSONRPCRequest(body)) {
    throw refusal('TR_ERR_BAD_REQUEST', ErrorCode.InvalidRequest, `MCP ${MODERN_REVISION}: the body must be one JSON-RPC request`, null);
  }
  const meta = metaOf(body);
  const missing = [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META].filter((key) => meta?.[key] === undefined);
  if (missing.length > 0) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      ErrorCode.InvalidParams,
      `${body.method.slice(0, 100)}: params._meta must carry ${missing.map((key) => `"${key}"`).join(' and ')} (MCP ${MODERN_REVISION} requests are self-contained)`,
      body.id,
    );
  }
  const capabilities = meta?.[CLIENT_CAPABILITIES_META];
  if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      ErrorCode.InvalidParams,
      `${body.method.slice(0, 100)}: params._meta["${CLIENT_CAPABILITIES_META}"] must be an object`,
      body.id,
    );
  }
  const header = headers['mcp-protocol-version'];
  const named = meta?.[PROTOCOL_VERSION_META];
  if (typeof header !== 'string' || named !== header) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      HEADER_MISMATCH,
      `Header mismatch: the MCP-Protocol-Version header (${quoted(header)}) must equal params._meta["${PROTOCOL_VERSION_META}"] (${quoted(named)})`,
      body.id,
    );
  }
  const method = headers['mcp-method'];
  if (method !== body.method) {
    throw refusal(
      'TR_ERR_BAD_REQUEST',
      HEADER_MISMATCH,
      method === undefined
        ? `Header mismatch: the Mcp-Method header is required, and must equal the request's method (${quoted(body.method)})`
        : `Header mismatch: the Mcp-Method header (${quoted(method)}) must equal the request's method (${quoted(body.method)})`,
      body.id,
    );
  }
  const nameParam = NAMED_BY.get(body.method);
  const bodyName = nameParam === undefined ? undefined : (body.params as Record<string, unknown> | undefined)?.[nameParam];
  // A request without the name is the method's own -32602, answered as without the header.
  if (bodyName !== undefined && bodyName !== null) {
    const name = headers['mcp-name'];
    if (typeof name !== 'string' || decodeHeaderValue(name) !== bodyName) {
      throw refusal(
        'TR_ERR_BAD_REQUEST',
        HEADER_MISMATCH,
        name === undefined
          ? `Header mismatch: ${body.method} needs the Mcp-Name header, equal to params.${nameParam} (${quoted(bodyName)})`
          : `Header mismatch: the Mcp-Name header (${quoted(name)}) must equal params.${nameParam} (${quoted(bodyName)})`,
        body.id,
      );
    }
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
      return sendPieces(reply, { 'content-type': 'application/json' }, [RESULT_HEAD, result, tail]);
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
      rpcAnswer: true,
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
