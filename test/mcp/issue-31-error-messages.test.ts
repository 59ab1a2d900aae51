/**
 * Issue 31: a JSON-RPC error's `message` is the registry's text, without the SDK's
 * "MCP error -32602: " prefix, which a client SDK adds again when it builds its own error.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { mcpUrl } from './support.js';

type Message = { id?: number; error?: { code: number; message: string } };

/** The JSON-RPC message of an answer, whether sent as JSON or as one SSE event. */
async function messageOf(res: Response): Promise<Message> {
  const text = await res.text();
  const data = /^data: (.+)$/m.exec(text)?.[1];
  return JSON.parse(data ?? text) as Message;
}

describe('JSON-RPC error messages on /mcp (issue 31)', () => {
  let t: TestApp;
  let url: URL;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    url = await mcpUrl(t.app);
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends an unknown tool as -32602 whose message has no "MCP error" prefix', async () => {
    const base = {
      authorization: `Bearer ${t.token([], { sub: 'prefix-tester' })}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const revision = '2025-11-25';
    const init = await fetch(url, {
      method: 'POST',
      headers: base,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const headers = { ...base, 'mcp-session-id': init.headers.get('mcp-session-id') ?? '', 'mcp-protocol-version': revision };
    const initialized = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    expect(initialized.status).toBe(202);

    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }),
    });
    const message = await messageOf(res);
    expect(message.id).toBe(1);
    expect(message.error?.code).toBe(-32602);
    expect(message.error?.message).toBe('Unknown tool: no_such_tool');
  });
});
