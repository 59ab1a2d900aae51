/**
 * Issue 31, "upstream content passed through whole": a real upstream MCP server (the SDK's, on
 * 127.0.0.1) answers with image, audio, resource and resource-link content, structured content
 * beside its own text, and progress; the official SDK client calls it through the registry's
 * /mcp and sees each as the upstream sent it, invoke carries the blocks in `content`, and a
 * client's cancellation (its AbortSignal, or its request closed) reaches the upstream.
 */
import { CallToolResultSchema, type CallToolResult, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';
import { connect, mcpUrl, type McpTestClient } from './support.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex').toString('base64');
const WAV = Buffer.from('RIFF$\u0000\u0000\u0000WAVEfmt ').toString('base64');
const BLOB = Buffer.from([0, 1, 2, 3, 254, 255]).toString('base64');

const BLOCKS: CallToolResult['content'] = [
  { type: 'text', text: 'a red dot' },
  { type: 'image', data: PNG, mimeType: 'image/png', annotations: { audience: ['user'], priority: 0.5 } },
  { type: 'audio', data: WAV, mimeType: 'audio/wav' },
  { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'the notes' } },
  { type: 'resource', resource: { uri: 'file:///bytes.bin', mimeType: 'application/octet-stream', blob: BLOB }, _meta: { 'x.test/k': 1 } },
  { type: 'resource_link', uri: 'https://example.com/report.pdf', name: 'report', mimeType: 'application/pdf', description: 'The report.' },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const schema = { type: 'object' as const };

const TOOLS: UpstreamToolDef[] = [
  { tool: { name: 'picture', description: 'Draws.', inputSchema: schema }, handler: () => ({ content: [...BLOCKS] }) },
  {
    tool: {
      name: 'measure',
      description: 'Measures.',
      inputSchema: schema,
      outputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] },
    },
    handler: () => ({ content: [{ type: 'text', text: 'Counted 42, in my own words.' }], structuredContent: { count: 42 } }),
  },
  {
    tool: { name: 'count', description: 'Counts slowly.', inputSchema: schema },
    handler: async (_args, _signal, _meta, progress) => {
      for (let i = 1; i <= 3; i++) {
        await progress(i, 3, `step ${i}`);
        await sleep(50);
      }
      return { content: [{ type: 'text', text: 'counted' }] };
    },
  },
  {
    tool: { name: 'flood', description: 'Floods.', inputSchema: schema },
    handler: async (_args, _signal, _meta, progress) => {
      for (let i = 1; i <= 2000; i++) await progress(i);
      await sleep(150);
      return { content: [{ type: 'text', text: 'flooded' }] };
    },
  },
  {
    tool: { name: 'wait', description: 'Waits to be cancelled.', inputSchema: schema },
    handler: (_args, signal) =>
      new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true })),
  },
];

let upstream: McpUpstream;
let registry: TestApp;
let client: McpTestClient;

beforeAll(async () => {
  upstream = await startMcpUpstream({ tools: TOOLS });
  // No interval, so that the count's bound is what shows (the interval: test/mcp/progress-relay.test.ts).
  registry = await createTestApp({ MCP_PROGRESS_INTERVAL_MS: '0', MCP_PROGRESS_MAX: '25' });
  const synced = new Promise<void>((resolve) =>
    registry.app.changes.subscribe((_i, changes) => changes.some((c) => c.name === 'up_wait') && resolve()),
  );
  const put = await registry.app.inject({
    method: 'PUT',
    url: '/mcp-servers/up',
    headers: bearer(registry.token(['registry:write'])),
    payload: { url: upstream.url, policy: 'auto' },
  });
  expect(put.statusCode).toBeLessThan(300);
  await synced;
  client = await connect(await mcpUrl(registry.app), registry.token([]));
  // The SDK client checks structured content against the output schemas it listed.
  await client.client.listTools();
});

afterAll(async () => {
  await client.close();
  await registry.close();
  await upstream.stop();
});

describe('upstream MCP content through the registry (issue 31)', () => {
  it('passes image, audio, resource and resource_link content through /mcp unchanged', async () => {
    const result = await client.client.callTool({ name: 'up_picture', arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual(BLOCKS);
  });

  it('carries the same blocks in the content of an invoke answer, the text naming them', async () => {
    const res = await registry.app.inject({ method: 'POST', url: '/tools/up_picture/invoke', headers: bearer(registry.token([])) });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { result: string; content: unknown };
    expect(body.content).toEqual(BLOCKS);
    expect(body.result).toContain('a red dot\n[image image/png, 20 bytes]');
  });

  it("keeps the upstream's own text beside its structured content", async () => {
    const result = await client.client.callTool({ name: 'up_measure', arguments: {} });
    expect(result).toMatchObject({ structuredContent: { count: 42 }, content: [{ type: 'text', text: 'Counted 42, in my own words.' }] });
    const res = await registry.app.inject({ method: 'POST', url: '/tools/up_measure/invoke', headers: bearer(registry.token([])) });
    expect(res.json()).toMatchObject({ result: '{"count":42}', content: [{ type: 'text', text: 'Counted 42, in my own words.' }] });
  });

  it("relays the upstream's progress to the client's progress token", async () => {
    const seen: Progress[] = [];
    const result = await client.client.callTool({ name: 'up_count', arguments: {} }, CallToolResultSchema, {
      onprogress: (p) => seen.push(p),
    });
    expect(result.content).toEqual([{ type: 'text', text: 'counted' }]);
    expect(seen).toEqual([
      { progress: 1, total: 3, message: 'step 1' },
      { progress: 2, total: 3, message: 'step 2' },
      { progress: 3, total: 3, message: 'step 3' },
    ]);
  });

  it('bounds the progress an upstream floods to MCP_PROGRESS_MAX', async () => {
    const seen: number[] = [];
    await client.client.callTool({ name: 'up_flood', arguments: {} }, CallToolResultSchema, {
      onprogress: (p) => seen.push(p.progress),
    });
    // MCP_PROGRESS_MAX: the first 25 of the 2000, then nothing.
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  it("passes a client's cancellation (notifications/cancelled) on to the upstream", async () => {
    const controller = new AbortController();
    const call = client.client.callTool({ name: 'up_wait', arguments: {} }, CallToolResultSchema, { signal: controller.signal });
    await vi.waitFor(() => expect(upstream.calls.filter((c) => c.name === 'wait')).toHaveLength(1), { timeout: 5000, interval: 10 });
    controller.abort();
    await expect(call).rejects.toThrow();
    await vi.waitFor(() => expect(upstream.cancelled.filter((n) => n === 'wait')).toHaveLength(1), { timeout: 5000, interval: 10 });
  });

  it('cancels the upstream call when the client closes its request', async () => {
    const url = await mcpUrl(registry.app);
    const headers = {
      authorization: `Bearer ${registry.token([])}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const session = init.headers.get('mcp-session-id') ?? '';
    await init.text();
    const inSession = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    await (
      await fetch(url, {
        method: 'POST',
        headers: inSession,
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      })
    ).text();
    const controller = new AbortController();
    const before = upstream.calls.filter((c) => c.name === 'wait').length;
    // The answer's headers come with its first event: the request is closed before that.
    const response = fetch(url, {
      method: 'POST',
      headers: inSession,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'up_wait', arguments: {} } }),
      signal: controller.signal,
    });
    await vi.waitFor(() => expect(upstream.calls.filter((c) => c.name === 'wait')).toHaveLength(before + 1), {
      timeout: 5000,
      interval: 10,
    });
    const cancelledBefore = upstream.cancelled.filter((n) => n === 'wait').length;
    controller.abort();
    await expect(response).rejects.toThrow();
    await vi.waitFor(() => expect(upstream.cancelled.filter((n) => n === 'wait')).toHaveLength(cancelledBefore + 1), {
      timeout: 5000,
      interval: 10,
    });
  });
});
