/**
 * A POST that holds one `tools/list` request alone, answered from the page's precomputed
 * result bytes (src/http/mcp/tool-lists.ts) with the request's id spliced in, in the framing
 * the SDK's transport gives a POST's answer (an event stream: its priming event and event ids
 * from the session's event store, so Last-Event-ID replay works as for any answer). Everything
 * the transport and the SDK's server would check first is checked here, and anything else (a
 * header they refuse, params the method's schema refuses, a cursor the listing refuses, a
 * batch) is left to them, so that their refusals stay exactly what they are.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { safeParse } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  isJSONRPCRequest,
  ListToolsRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { SessionEventStore } from './event-store.js';
import { plainListParams, plainRequest } from './plain-request.js';

/** The revision from which the SDK's transport primes a POST's stream with an event id. */
const PRIMING_REVISION = '2025-11-25';

/** A `tools/list` request the route may answer itself. */
export interface ListRequest {
  id: RequestId;
  cursor: string | undefined;
  /** The request's protocol revision: its MCP-Protocol-Version, or the transport's default. */
  revision: string;
}

/**
 * The body's `tools/list` request, when it is one alone and the SDK's transport and server
 * would take it: `Accept` listing both types, a JSON `Content-Type`, a supported
 * `MCP-Protocol-Version` (or none), and params its schema accepts. Undefined otherwise.
 */
export function soleListRequest(
  headers: IncomingHttpHeaders,
  body: unknown,
  revisions: readonly string[] = SUPPORTED_PROTOCOL_VERSIONS,
): ListRequest | undefined {
  const plain = plainRequest(body);
  const request = plain ?? (isJSONRPCRequest(body) ? body : undefined);
  if (request === undefined || request.method !== 'tools/list') return undefined;
  const accept = headers.accept;
  if (typeof accept !== 'string' || !accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined;
  if (!isJsonContentType(headers['content-type'])) return undefined;
  const version = headers['mcp-protocol-version'];
  if (Array.isArray(version) || (version !== undefined && !revisions.includes(version))) return undefined;
  if (!(plain !== undefined && plainListParams(plain)) && !safeParse(ListToolsRequestSchema, request).success) return undefined;
  const cursor = request.params?.['cursor'];
  return {
    id: request.id,
    cursor: typeof cursor === 'string' ? cursor : undefined,
    revision: version ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  };
}

/**
 * The answer, as the SDK's transport frames it: its headers, a priming event where it primes,
 * then one `message` event of `{"result":<result>,"jsonrpc":"2.0","id":<id>}` (the SDK's own
 * key order, so that the bytes are the ones it would have sent), each event with an id from
 * the session's store where it has one; the stream then ends, as it does once a POST's
 * requests are answered.
 */
export function sendListAnswer(
  reply: FastifyReply,
  sessionId: string,
  events: SessionEventStore | undefined,
  request: ListRequest,
  result: Buffer,
): FastifyReply {
  const tail = `,"jsonrpc":"2.0","id":${JSON.stringify(request.id)}}`;
  let before = '';
  let eventId: string | undefined;
  if (events) {
    const streamId = randomUUID();
    if (request.revision >= PRIMING_REVISION) before = `id: ${events.storePriming(streamId)}\ndata: \n\n`;
    eventId = events.storeAnswer(streamId, result, tail);
  }
  before += `event: message\n${eventId === undefined ? '' : `id: ${eventId}\n`}data: {"result":`;
  return sendPieces(
    reply,
    {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'mcp-session-id': sessionId,
    },
    [before, result, `${tail}\n\n`],
  );
}

/**
 * A 200 of `pieces` in order, without copying them into one buffer for reply.send: Node sends
 * them in one writev (a response corks its socket until the next tick). The copy of a 353 KiB
 * page (Buffer.concat) and its garbage were ~90 us of each request of the issue-31 walk.
 * Hijacked, so the head carries what the hooks set on the reply (request id, nosniff, rate
 * limit, CORS) with `headers` over them; the onResponse hooks (metrics, logs) still run when
 * the response finishes.
 */
export function sendPieces(reply: FastifyReply, headers: Record<string, string>, pieces: readonly (string | Buffer)[]): FastifyReply {
  const head: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) head[name] = value;
  Object.assign(head, headers);
  let length = 0;
  for (const piece of pieces) length += typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length;
  head['content-length'] = length;
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, head);
  for (const piece of pieces.slice(0, -1)) raw.write(piece);
  raw.end(pieces.at(-1));
  return reply;
}
