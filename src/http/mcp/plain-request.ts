/**
 * The one shape nearly every JSON-RPC request of MCP arrives in, recognised without zod: an
 * object of `jsonrpc: "2.0"`, a string or integer `id`, a string `method` and, optionally,
 * `params` as an object without `_meta`. The SDK's `JSONRPCRequestSchema` accepts every value
 * this does (it is strict in the same four keys, and its params are a loose object whose only
 * declared field is `_meta`), so a request of this shape needs no schema check; anything else
 * (a `_meta`, an extra key, a fractional id) still goes through the SDK's schemas, whose
 * refusals stay exactly what they are. Three zod parses took ~27 us of each `tools/list` page
 * of the issue-31 walk (a `readMessage`, `isJSONRPCRequest`, `ListToolsRequestSchema`).
 */
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';

const REQUEST_KEYS: ReadonlySet<string> = new Set(['jsonrpc', 'id', 'method', 'params']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` as a request of the plain shape above, or undefined. */
export function plainRequest(value: unknown): JSONRPCRequest | undefined {
  if (!isPlainObject(value)) return undefined;
  const { jsonrpc, id, method, params } = value;
  if (jsonrpc !== '2.0' || typeof method !== 'string') return undefined;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  for (const key of Object.keys(value)) if (!REQUEST_KEYS.has(key)) return undefined;
  if (params !== undefined && (!isPlainObject(params) || Object.hasOwn(params, '_meta'))) return undefined;
  return value as JSONRPCRequest;
}

/**
 * Whether a plain request's params are ones `ListToolsRequestSchema` surely accepts: none, or
 * only a string `cursor`.
 */
export function plainListParams(request: JSONRPCRequest): boolean {
  const params = request.params;
  if (params === undefined) return true;
  const keys = Object.keys(params);
  return keys.length === 0 || (keys.length === 1 && typeof params['cursor'] === 'string');
}
