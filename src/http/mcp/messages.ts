/**
 * The JSON-RPC messages of a POST /mcp body, each read once through the SDK's schema of the
 * shape it means (readMessage) rather than picked apart by casts or parsed again for each
 * question the route asks of it, and the refusals the route makes before the SDK sees them: a
 * batch where the protocol revision has none, a message the transport cannot take, two
 * requests of one id.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { RegistryError } from '../../model/errors.js';
import { readMessage } from './invalid-params.js';

/** What the route needs of one message of the body. */
export interface McpMessage {
  /** A request's id as JSON text (1 and "1" are two ids); undefined for notifications and responses. */
  requestId: string | undefined;
  /** The tool a `tools/call` message names; undefined for any other message, or one that names none. */
  calledTool: string | undefined;
}

/** The protocol revision that removed JSON-RPC batches. */
const BATCHLESS_REVISION = '2025-06-18';

/**
 * The body's messages (one for a single message, a batch's items in order), each parsed once,
 * or the refusal of the whole POST: a batch the protocol revision (the `MCP-Protocol-Version`
 * header) has none of, a message the SDK's transport cannot take, two requests of one id.
 */
export function readMessages(version: string | string[] | undefined, body: unknown): McpMessage[] {
  refuseBatch(version, body);
  const batch = Array.isArray(body);
  const messages = (batch ? body : [body]).map((item: unknown, i) => {
    const read = readMessage(item);
    if (read.ok) return summaryOf(read.message);
    // The SDK's transport refuses the whole POST as `-32700` (Parse error), naming nothing.
    // Refused here as it would be (400, the whole POST), with the field named and the JSON-RPC
    // code for the fault.
    const detail = batch ? `message ${i + 1} of the batch: ${read.message}` : read.message;
    throw new RegistryError('TR_ERR_BAD_REQUEST', detail, {
      extra: { jsonrpc: '2.0', error: { code: read.code, message: detail }, id: null },
    });
  });
  if (batch) refuseRepeatedIds(messages);
  return messages;
}

function summaryOf(message: JSONRPCMessage): McpMessage {
  const requestId = 'method' in message && 'id' in message ? JSON.stringify(message.id) : undefined;
  const name = 'method' in message && message.method === 'tools/call' ? message.params?.['name'] : undefined;
  return { requestId, calledTool: typeof name === 'string' ? name : undefined };
}

/**
 * JSON-RPC batches: MCP 2025-06-18 removed them, so a request of that revision or later (its
 * `MCP-Protocol-Version` header) may not send one; an empty batch is never a request
 * (JSON-RPC 2.0 section 6).
 */
function refuseBatch(version: string | string[] | undefined, body: unknown): void {
  if (!Array.isArray(body)) return;
  if (body.length === 0) throw new RegistryError('TR_ERR_BAD_REQUEST', 'an empty JSON-RPC batch is not a request');
  if (typeof version === 'string' && version >= BATCHLESS_REVISION) {
    throw new RegistryError(
      'TR_ERR_BAD_REQUEST',
      `MCP ${version} has no JSON-RPC batches (removed in ${BATCHLESS_REVISION}); send one message per request`,
    );
  }
}

/**
 * Answers go by request id: of two requests of a batch with one id, the SDK ran both and
 * answered one, and the second answer had nowhere to go. The batch is refused whole, before
 * anything in it runs, as JSON-RPC's Invalid Request.
 */
function refuseRepeatedIds(messages: readonly McpMessage[]): void {
  const seen = new Set<string>();
  for (const { requestId: id } of messages) {
    if (id === undefined) continue;
    if (seen.has(id)) {
      const detail = `Invalid Request: more than one request of the batch has id ${id.slice(0, 100)}; each request needs an id of its own`;
      throw new RegistryError('TR_ERR_BAD_REQUEST', detail, {
        extra: { jsonrpc: '2.0', error: { code: -32600, message: detail }, id: null },
      });
    }
    seen.add(id);
  }
}
