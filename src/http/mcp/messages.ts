/**
 * The JSON-RPC messages of a POST /mcp body, read through one schema (JsonRpcMessageSchema)
 * rather than picked apart by casts, and the refusals the route makes before the SDK sees
 * them: a batch where the protocol revision has none, a message the transport cannot take,
 * two requests of one id.
 */
import type { z } from 'zod';
import { JsonRpcMessageSchema } from '../../model/api.js';
import { RegistryError } from '../../model/errors.js';
import { describeMalformedMessage } from './invalid-params.js';

type JsonRpcMessage = z.infer<typeof JsonRpcMessageSchema>;

/** The protocol revision that removed JSON-RPC batches. */
const BATCHLESS_REVISION = '2025-06-18';

/** The body's messages, one for a single message, each as sent (a batch's items in order). */
export function messagesOf(body: unknown): readonly unknown[] {
  return Array.isArray(body) ? body : [body];
}

/** The message as JSON-RPC, or undefined for one that is not (describeMalformedMessage says why). */
function parsed(message: unknown): JsonRpcMessage | undefined {
  const result = JsonRpcMessageSchema.safeParse(message);
  return result.success ? result.data : undefined;
}

/** A request's id as JSON text (1 and "1" are two ids); undefined for notifications and responses. */
export function requestIdOf(message: unknown): string | undefined {
  const m = parsed(message);
  return m?.method !== undefined && m.id !== undefined ? JSON.stringify(m.id) : undefined;
}

/** The tool a `tools/call` message names; undefined for any other message, or one that names none. */
export function calledToolOf(message: unknown): string | undefined {
  const m = parsed(message);
  const name = m?.method === 'tools/call' ? m.params?.name : undefined;
  return typeof name === 'string' ? name : undefined;
}

/**
 * JSON-RPC batches: MCP 2025-06-18 removed them, so a request of that revision or later (its
 * `MCP-Protocol-Version` header) may not send one; an empty batch is never a request
 * (JSON-RPC 2.0 section 6).
 */
export function refuseBatch(version: string | string[] | undefined, body: unknown): void {
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
 * A message the SDK's transport cannot take, though its JSON parsed: the transport refuses the
 * whole POST as `-32700` (Parse error), naming nothing. Refused here as it would be (400, the
 * whole POST), with the field named and the JSON-RPC code for the fault.
 */
export function refuseMalformedMessages(body: unknown): void {
  for (const [i, message] of messagesOf(body).entries()) {
    const malformed = describeMalformedMessage(message);
    if (malformed === undefined) continue;
    const detail = Array.isArray(body) ? `message ${i + 1} of the batch: ${malformed.message}` : malformed.message;
    throw new RegistryError('TR_ERR_BAD_REQUEST', detail, {
      extra: { jsonrpc: '2.0', error: { code: malformed.code, message: detail }, id: null },
    });
  }
}

/**
 * Answers go by request id: of two requests of a batch with one id, the SDK ran both and
 * answered one, and the second answer had nowhere to go. The batch is refused whole, before
 * anything in it runs, as JSON-RPC's Invalid Request.
 */
export function refuseRepeatedIds(body: unknown): void {
  if (!Array.isArray(body)) return;
  const seen = new Set<string>();
  for (const message of body) {
    const id = requestIdOf(message);
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
