/**
 * Issue 28: a request whose params its method's schema refuses is `-32602` (Invalid params)
 * with a message a person can read, for every method the server handles, not `-32603`
 * (Internal error) carrying zod's issues as JSON; and nothing runs. Sent by the official SDK
 * client (whose `request` sends what it is given), and by raw POSTs for batches and for
 * messages the client would not send.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  McpError,
  CallToolResultSchema,
  EmptyResultSchema,
  InitializeResultSchema,
  ListToolsResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { connect, mcpUrl, type McpTestClient } from './support.js';

describe('invalid params on /mcp (issue 28)', () => {
  let t: TestApp;
  let url: URL;
  let toolHost: Server;
  let toolCalls = 0;
  let c: McpTestClient;

  beforeAll(async () => {
    toolHost = createServer((req, res) => {
      toolCalls++;
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ran'));
    });
    await new Promise<void>((resolve) => toolHost.listen(0, '127.0.0.1', resolve));
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(t.token(['registry:write'], { sub: 'operator' })),
      payload: {
        name: 'echo',
        endpoint: '/echo',
        scopes: [],
        description: 'Echoes',
        parameters: { text: { type: 'string', description: 'What to echo' } },
        host: '127.0.0.1',
        port: (toolHost.address() as AddressInfo).port,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    url = await mcpUrl(t.app);
    c = await connect(url, t.token([], { sub: 'params-tester' }));
  });

  afterAll(async () => {
    await c?.close();
    await t?.close();
    await new Promise((resolve) => toolHost?.close(resolve));
  });

  /** What the server answers a request: the JSON-RPC error's code and message. */
  const refusalOf = async (request: { method: string; params?: unknown }) => {
    const schema =
      { 'tools/call': CallToolResultSchema, 'tools/list': ListToolsResultSchema, initialize: InitializeResultSchema }[request.method] ??
      EmptyResultSchema;
    const err = await c.client.request(request as never, schema).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err, JSON.stringify(request)).toBeInstanceOf(McpError);
    return { code: (err as McpError).code, message: (err as McpError).message.replace(/^MCP error -?\d+: /, '') };
  };

  const cases: [string, { method: string; params?: unknown }, string][] = [
    ['tools/call without a name', { method: 'tools/call', params: {} }, 'tools/call: "name" is required and must be a string'],
    ['tools/call without params', { method: 'tools/call' }, 'tools/call: "params" is required and must be an object'],
    ['tools/call with a number for a name', { method: 'tools/call', params: { name: 5 } }, 'tools/call: "name" must be a string'],
    ['tools/call with null for a name', { method: 'tools/call', params: { name: null } }, 'tools/call: "name" must be a string'],
    [
      'tools/call with an array of arguments',
      { method: 'tools/call', params: { name: 'echo', arguments: [1, 2] } },
      'tools/call: "arguments" must be an object',
    ],
    [
      'tools/call with a string of arguments',
      { method: 'tools/call', params: { name: 'echo', arguments: 'text=hi' } },
      'tools/call: "arguments" must be an object',
    ],
    [
      'tools/call with two things wrong',
      { method: 'tools/call', params: { name: [], arguments: 1 } },
      'tools/call: "name" must be a string; "arguments" must be an object',
    ],
    ['tools/list with a number for a cursor', { method: 'tools/list', params: { cursor: 5 } }, 'tools/list: "cursor" must be a string'],
    [
      'initialize again, malformed',
      { method: 'initialize', params: { protocolVersion: 20250326 } },
      'initialize: "protocolVersion" must be a string; "capabilities" is required and must be an object; "clientInfo" is required and must be an object',
    ],
  ];

  it.each(cases)('%s: -32602 Invalid params, in words', async (_, request, message) => {
    const before = toolCalls;
    expect(await refusalOf(request)).toEqual({ code: -32602, message });
    expect(toolCalls).toBe(before);
  });

  /** A raw POST on the client's session: the status, and the JSON-RPC error of a refusal. */
  const postRaw = async (body: unknown, revision = '2025-03-26') => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.token([], { sub: 'params-tester' })}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': c.transport.sessionId ?? '',
        'mcp-protocol-version': revision,
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };

  // The SDK's transport refuses these whole (its JSON-RPC message schema covers `_meta` and
  // params that are not an object) as -32700 "Parse error", naming nothing.
  const envelopes: [string, unknown, number, string][] = [
    [
      'an object for a progress token',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', _meta: { progressToken: {} } } },
      -32602,
      'tools/call: "_meta.progressToken" must be a string or a number',
    ],
    [
      'a string for _meta',
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: 'x' } },
      -32602,
      'tools/list: "_meta" must be an object',
    ],
    [
      'params by position',
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: ['echo', {}] },
      -32602,
      'tools/call: "params" must be an object',
    ],
    ['a number for params', { jsonrpc: '2.0', id: 1, method: 'ping', params: 5 }, -32602, 'ping: "params" must be an object'],
    ['an object for an id', { jsonrpc: '2.0', id: {}, method: 'ping' }, -32600, 'Invalid Request: "id" must be a string or a number'],
    ['JSON-RPC 1.0', { jsonrpc: '1.0', id: 1, method: 'ping' }, -32600, 'Invalid Request: "jsonrpc" must be "2.0"'],
    [
      'a member JSON-RPC has not',
      { jsonrpc: '2.0', id: 1, method: 'ping', extra: true },
      -32600,
      'Invalid Request: the message has unknown keys: "extra"',
    ],
    ['a string for a message', 'ping', -32600, 'Invalid Request: a JSON-RPC message is an object'],
  ];

  it.each(envelopes)(
    'a message the transport cannot take (%s) is refused whole, in words, with the code for its fault',
    async (_, message, code, text) => {
      const before = toolCalls;
      const single = await postRaw(message);
      expect(single.status).toBe(400);
      expect(JSON.parse(single.text)).toMatchObject({
        code: 'TR_ERR_BAD_REQUEST',
        detail: text,
        jsonrpc: '2.0',
        error: { code, message: text },
        id: null,
      });
      const batch = await postRaw([
        { jsonrpc: '2.0', id: 'fine', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
        message,
      ]);
      expect(batch.status).toBe(400);
      expect(JSON.parse(batch.text)).toMatchObject({ error: { code, message: `message 2 of the batch: ${text}` } });
      expect(toolCalls).toBe(before);
    },
  );

  it('a request that fits its schema still runs, and one for a method with no handler is still -32601', async () => {
    const result = await c.client.request(
      { method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } },
      CallToolResultSchema,
    );
    expect(result.content).toEqual([{ type: 'text', text: 'ran' }]);
    expect(await refusalOf({ method: 'prompts/list', params: { cursor: 5 } })).toEqual({ code: -32601, message: 'Method not found' });
  });

  it('in a batch (2025-03-26), each request is answered on its own: the malformed one -32602, the others as ever', async () => {
    const headers = {
      authorization: `Bearer ${t.token([], { sub: 'params-tester' })}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': c.transport.sessionId ?? '',
      'mcp-protocol-version': '2025-03-26',
    };
    const before = toolCalls;
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { arguments: { text: 'no name' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } },
        { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { cursor: false } },
      ]),
    });
    expect(res.status).toBe(200);
    const answers = [...(await res.text()).matchAll(/^data: (.+)$/gm)].map(
      (m) => JSON.parse(m[1] ?? 'null') as { id: number; error?: { code: number; message: string } },
    );
    const byId = new Map(answers.map((a) => [a.id, a]));
    expect(byId.get(1)?.error).toEqual({ code: -32602, message: 'tools/call: "name" is required and must be a string' });
    expect(byId.get(2)?.error).toBeUndefined();
    expect(byId.get(3)?.error).toEqual({ code: -32602, message: 'tools/list: "cursor" must be a string' });
    expect(toolCalls).toBe(before + 1);
  });
});
