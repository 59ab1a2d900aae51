/**
 * The messages of a POST /mcp body (src/http/mcp/messages.ts): each read once, giving the
 * request ids and called tools the route checks, and the refusals the route makes before the
 * SDK sees them. The HTTP side of the same is test/mcp/batches.test.ts's.
 */
import {
  JSONRPCErrorResponseSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResultResponseSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { readMessages } from '../../src/http/mcp/messages.js';
import { RegistryError } from '../../src/model/errors.js';

const call = (id: string | number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

/** The refusal `run` throws: its code and message. */
function refusal(run: () => unknown): { code: string; message: string } {
  try {
    run();
  } catch (err) {
    if (err instanceof RegistryError) return { code: err.code, message: err.message };
    throw err;
  }
  throw new Error('not refused');
}

describe('readMessages', () => {
  it('parses each message at most once, for its request id and the tool it calls', () => {
    const spies = [
      vi.spyOn(JSONRPCRequestSchema, 'safeParse'),
      vi.spyOn(JSONRPCNotificationSchema, 'safeParse'),
      vi.spyOn(JSONRPCResultResponseSchema, 'safeParse'),
      vi.spyOn(JSONRPCErrorResponseSchema, 'safeParse'),
    ];
    try {
      const messages = readMessages('2025-03-26', [
        call(1, 'echo'),
        call('1', 'other'),
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
        { jsonrpc: '2.0', id: 7, result: {} },
        { jsonrpc: '2.0', id: 8, error: { code: -32601, message: 'no such method' } },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      ]);
      expect(messages).toEqual([
        { requestId: '1', calledTool: 'echo' },
        // 1 and "1" are two ids.
        { requestId: '"1"', calledTool: 'other' },
        { requestId: undefined, calledTool: undefined },
        { requestId: undefined, calledTool: undefined },
        { requestId: undefined, calledTool: undefined },
        { requestId: '2', calledTool: undefined },
      ]);
      // Requests of the plain shape need no schema (src/http/mcp/plain-request.ts); the others are parsed once.
      expect(spies.map((spy) => spy.mock.calls.length)).toEqual([0, 1, 1, 1]);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(readMessages(undefined, call('a', 'echo'))).toEqual([{ requestId: '"a"', calledTool: 'echo' }]);
  });

  it('refuses the whole POST for a batch the revision has none of, a malformed message, or two requests of one id', () => {
    expect(refusal(() => readMessages('2025-06-18', [call(1, 'echo')]))).toMatchObject({ code: 'TR_ERR_BAD_REQUEST' });
    expect(refusal(() => readMessages(undefined, []))).toEqual({
      code: 'TR_ERR_BAD_REQUEST',
      message: 'an empty JSON-RPC batch is not a request',
    });
    expect(
      refusal(() => readMessages(undefined, [call(1, 'echo'), { jsonrpc: '2.0', id: 2, method: 'tools/call', params: 3 }])).message,
    ).toMatch(/^message 2 of the batch: /);
    expect(refusal(() => readMessages(undefined, [call(1, 'echo'), call(1, 'other')])).message).toMatch(
      /more than one request of the batch has id 1/,
    );
    // One id again, but a malformed message first: the malformed one is named.
    expect(refusal(() => readMessages(undefined, [call(1, 'echo'), call(1, 'other'), 'no'])).message).toMatch(/^message 3 of the batch: /);
  });
});
