import { describe, expect, it } from 'vitest';
import { JSONRPCRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { plainListParams, plainRequest } from '../../src/http/mcp/plain-request.js';

const base = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

/** Values near the plain shape: every one plainRequest takes must be one the SDK's schema takes. */
const CASES: unknown[] = [
  base,
  { ...base, id: 'a' },
  { ...base, id: -0 },
  { ...base, id: 1.5 },
  { ...base, id: 2 ** 60 },
  { ...base, id: null },
  { ...base, id: true },
  { jsonrpc: '2.0', method: 'tools/list' },
  { ...base, jsonrpc: '1.0' },
  { ...base, method: 7 },
  { ...base, extra: 1 },
  { ...base, params: {} },
  { ...base, params: { cursor: 'abc' } },
  { ...base, params: { cursor: 7 } },
  { ...base, params: { cursor: 'abc', other: [1] } },
  { ...base, params: { _meta: { progressToken: 1 } } },
  { ...base, params: { _meta: 'not an object' } },
  { ...base, params: [] },
  { ...base, params: null },
  { ...base, params: 'text' },
  { ...base, method: 'tools/call', params: { name: 'echo', arguments: { a: 1 } } },
  [base],
  null,
  'text',
];

describe('plainRequest', () => {
  it('takes only requests the SDK request schema accepts, as they are', () => {
    let taken = 0;
    for (const value of CASES) {
      const plain = plainRequest(value);
      if (plain === undefined) continue;
      taken++;
      expect(plain).toBe(value);
      expect(JSONRPCRequestSchema.safeParse(value).success, JSON.stringify(value)).toBe(true);
    }
    expect(taken).toBe(8);
  });

  it('leaves to the schemas whatever is not the plain shape', () => {
    for (const value of [
      { ...base, params: { _meta: { progressToken: 1 } } },
      { ...base, extra: 1 },
      { ...base, id: 1.5 },
      { ...base, id: 2 ** 60 },
      { ...base, params: [] },
      { jsonrpc: '2.0', method: 'tools/list' },
    ])
      expect(plainRequest(value), JSON.stringify(value)).toBeUndefined();
  });

  it('says which list params the list schema surely accepts', () => {
    for (const value of CASES) {
      const plain = plainRequest(value);
      if (plain === undefined || plain.method !== 'tools/list') continue;
      if (plainListParams(plain)) expect(ListToolsRequestSchema.safeParse(value).success, JSON.stringify(value)).toBe(true);
    }
    expect(plainListParams({ ...base, params: { cursor: 7 } } as never)).toBe(false);
    expect(plainListParams({ ...base, params: { cursor: 'abc', other: [1] } } as never)).toBe(false);
    expect(plainListParams({ ...base, params: { cursor: 'abc' } } as never)).toBe(true);
    expect(plainListParams(base as never)).toBe(true);
  });
});
