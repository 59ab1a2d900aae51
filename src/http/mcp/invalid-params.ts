/**
 * What is wrong with a JSON-RPC message, in words a person can act on, from the SDK's own zod
 * schemas. The SDK checks each request against its method's schema and, when that fails,
 * answers `-32603` (Internal error) with zod's issues as JSON for a message; the server checks
 * first (src/http/mcp/server.ts) and answers `-32602` (Invalid params) with this text instead:
 * `tools/call: "name" is required and must be a string`. Its transport refuses a POST with a
 * message that is no JSON-RPC message of MCP's as `-32700` (Parse error), though the JSON
 * parsed; the route refuses it first with these words (`readMessage`).
 */
import {
  ErrorCode,
  JSONRPCErrorResponseSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResultResponseSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { plainRequest } from './plain-request.js';

/** The parts of a zod issue read here (zod 3 and 4 issues both have them). */
export interface ParamsIssue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly expected?: unknown;
  readonly errors?: readonly (readonly ParamsIssue[])[];
  readonly values?: readonly unknown[];
  readonly keys?: readonly string[];
}

/** Issues named in one message; a request as wrong as that gets the first ones. */
const MAX_ISSUES = 5;

/** Zod's names of JSON types, as a sentence says them. */
const JSON_TYPES: Readonly<Record<string, string>> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  record: 'an object',
  array: 'an array',
  tuple: 'an array',
  null: 'null',
};

const typeName = (expected: unknown): string => (typeof expected === 'string' ? (JSON_TYPES[expected] ?? expected) : 'of another type');

/** The value at `path` inside `data`, or undefined where the path leaves it. */
function valueAt(data: unknown, path: readonly PropertyKey[]): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== 'object' || value === null || typeof key === 'symbol' || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string | number, unknown>)[key];
  }
  return value;
}

/** `"name"`, `"_meta.progressToken"`, `"params"` for params itself: paths inside params drop it. */
function nameOf(path: readonly PropertyKey[]): string {
  const inner = path[0] === 'params' && path.length > 1 ? path.slice(1) : path;
  if (inner.length === 0) return 'the message';
  return `"${inner.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('')}"`;
}

/** The JSON types a union would have taken, when each branch failed on the value's type alone. */
function unionTypes(issue: ParamsIssue): string[] | undefined {
  const types = new Set<string>();
  for (const branch of issue.errors ?? []) {
    const [only, ...more] = branch;
    if (only === undefined || more.length > 0 || only.code !== 'invalid_type' || only.path.length > 0) return undefined;
    types.add(typeName(only.expected));
  }
  return types.size > 0 ? [...types] : undefined;
}

/** What one issue asks of the value at its path: `must be a string`, `is required and must be an object`. */
function requirement(issue: ParamsIssue, given: unknown): string {
  const required = given === undefined ? 'is required and ' : '';
  switch (issue.code) {
    case 'invalid_type':
      return `${required}must be ${typeName(issue.expected)}`;
    case 'invalid_union': {
      const types = unionTypes(issue);
      return types ? `${required}must be ${types.join(' or ')}` : `${required}is none of the forms it may take`;
    }
    case 'invalid_value':
    case 'invalid_literal':
    case 'invalid_enum_value': {
      const values = (issue.values ?? []).map((v) => JSON.stringify(v)).join(', ');
      return values === ''
        ? `${required}is not a value it may take`
        : `${required}must be ${issue.values?.length === 1 ? '' : 'one of '}${values}`;
    }
    case 'unrecognized_keys':
      return `has unknown keys: ${(issue.keys ?? []).map((k) => `"${k}"`).join(', ')}`;
    default:
      // too_big, too_small, invalid_format and the like: zod's own words are plain enough.
      return `is not valid: ${issue.message.charAt(0).toLowerCase()}${issue.message.slice(1)}`;
  }
}

/** One line naming what is wrong with `request`'s params, from its method's schema's issues. */
export function describeInvalidParams(method: string, request: unknown, issues: readonly ParamsIssue[]): string {
  const parts = issues.slice(0, MAX_ISSUES).map((issue) => `${nameOf(issue.path)} ${requirement(issue, valueAt(request, issue.path))}`);
  const more = issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '';
  return `${method}: ${parts.join('; ')}${more}`;
}

/** A message of a POST as the SDK's transport takes it, or why it would not, with the JSON-RPC code for that. */
export type ReadMessage = { ok: true; message: JSONRPCMessage } | { ok: false; code: number; message: string };

/**
 * `message` read through the one JSON-RPC shape it means (the SDK's schema of a request, a
 * notification, a result or an error), or why it is none MCP takes: `-32602` when the fault is
 * in a request's or notification's params (`"_meta" must be an object`, or params that are not
 * an object: MCP names its params), `-32600` (Invalid Request) otherwise.
 */
export function readMessage(message: unknown): ReadMessage {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) {
    return { ok: false, code: ErrorCode.InvalidRequest, message: 'Invalid Request: a JSON-RPC message is an object' };
  }
  // The shape nearly every request has, which the request schema surely accepts (plain-request.ts).
  const plain = plainRequest(message);
  if (plain !== undefined) return { ok: true, message: plain };
  const fields = message as Record<string, unknown>;
  // The one shape the message means, so that its issues are that shape's and not a union's.
  const schema =
    'method' in fields
      ? fields['id'] === undefined
        ? JSONRPCNotificationSchema
        : JSONRPCRequestSchema
      : 'error' in fields
        ? JSONRPCErrorResponseSchema
        : JSONRPCResultResponseSchema;
  const parsed = schema.safeParse(message);
  if (parsed.success) return { ok: true, message: parsed.data };
  const issues = parsed.error.issues as readonly ParamsIssue[];
  const method = typeof fields['method'] === 'string' ? fields['method'] : undefined;
  if (method !== undefined && issues.every((issue) => issue.path[0] === 'params')) {
    return { ok: false, code: ErrorCode.InvalidParams, message: describeInvalidParams(method, message, issues) };
  }
  return { ok: false, code: ErrorCode.InvalidRequest, message: describeInvalidParams('Invalid Request', message, issues) };
}
