/**
 * Issue 12 and MCP: tools of an upstream MCP server pass the same schema check as operators'
 * tools (a tool whose schema fails is skipped, with the reason), and `tools/call` on `/mcp`
 * answers arguments that do not fit with an `isError` result naming the paths (MCP 2025-11-25:
 * input validation errors are tool execution errors, so that the model can correct itself).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';
import { connect, mcpUrl, type McpTestClient } from './support.js';
import { ORDER_INPUT, startToolHost, type ToolHost } from '../schemas/support.js';

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

const TOOLS: UpstreamToolDef[] = [
  {
    tool: {
      name: 'search',
      description: 'Searches.',
      inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
    },
    handler: (args) => text(`found ${String(args['query'])}`),
  },
  {
    // As the MCP TypeScript SDK's McpServer sends zod schemas: draft-07, declared.
    tool: {
      name: 'sdk_style',
      description: 'Declares draft-07.',
      inputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { n: { type: 'number' } },
        required: ['n'],
        additionalProperties: false,
      },
      outputSchema: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { doubled: { type: 'number' } },
        required: ['doubled'],
        additionalProperties: false,
      },
    },
    handler: (args) => ({
      ...text(JSON.stringify({ doubled: Number(args['n']) * 2 })),
      structuredContent: { doubled: Number(args['n']) * 2 },
    }),
  },
  {
    tool: { name: 'bad_input', description: 'Misspelt type.', inputSchema: { type: 'object', properties: { q: { type: 'strnig' } } } },
    handler: () => text('never'),
  },
  {
    tool: {
      name: 'bad_output',
      description: 'Remote reference.',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { r: { $ref: 'https://example.com/r.json' } } },
    },
    handler: () => text('never'),
  },
];

describe('schemas and MCP (issue 12)', () => {
  let t: TestApp;
  let upstream: McpUpstream;
  let host: ToolHost;
  let mcp: McpTestClient;
  let admin: Record<string, string>;

  beforeAll(async () => {
    upstream = await startMcpUpstream({ tools: TOOLS });
    host = await startToolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    const put = await t.app.inject({
      method: 'PUT',
      url: '/mcp-servers/up',
      headers: admin,
      payload: { url: upstream.url, policy: 'auto', prefix: 'up_' },
    });
    expect(put.statusCode, put.body).toBe(201);
    const order = {
      name: 'place_order',
      endpoint: '/tools/order',
      description: 'Places an order',
      host: '127.0.0.1',
      port: host.port,
      inputSchema: ORDER_INPUT,
    };
    expect((await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: order })).statusCode).toBe(201);
    mcp = await connect(await mcpUrl(t.app), t.token([], { sub: 'mcp-agent' }));
  });
  afterAll(async () => {
    await mcp.close();
    await t.close();
    await upstream.stop();
    await host.close();
  });

  const status = async () =>
    (await t.app.inject({ method: 'GET', url: '/mcp-servers/up', headers: admin })).json().upstream as {
      state: string;
      tools: number;
      skipped: { name: string; reason: string }[];
    };

  it('skips upstream tools whose schemas fail the check, with the reason, and lists the rest', async () => {
    await vi.waitFor(async () => expect((await status()).tools).toBe(2), { timeout: 10_000, interval: 20 });
    const { skipped } = await status();
    expect(skipped).toEqual([
      { name: 'bad_input', reason: expect.stringMatching(/^inputSchema\.properties\.q\.type: must be one of "array", "boolean"/) },
      {
        name: 'bad_output',
        reason:
          'outputSchema.properties.r.$ref: must be a local JSON pointer ("#" or "#/...") or name an anchor of this schema ("#name"): remote references are refused',
      },
    ]);
    const names = (await t.app.inject({ method: 'GET', url: '/', headers: admin })).json().tools.map((x: { name: string }) => x.name);
    expect(names).toEqual(['place_order', 'up_sdk_style', 'up_search']);
    const entry = (await t.app.inject({ method: 'GET', url: '/tools/up_sdk_style', headers: bearer(t.token([])) })).json();
    expect(entry.inputSchema).toEqual(TOOLS[1]?.tool.inputSchema);
    expect(entry.outputSchema).toEqual(TOOLS[1]?.tool.outputSchema);
  });

  it('answers tools/call with arguments that do not fit as an isError result naming the paths; nothing is forwarded', async () => {
    const received = host.received.length;
    const result = await mcp.client.callTool({
      name: 'place_order',
      arguments: { customer: { id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70' }, items: [{ name: 3, quantity: 1 }], extra: 1 },
    });
    expect(result.isError).toBe(true);
    const message = (result.content as { text: string }[])[0]?.text ?? '';
    expect(message).toContain('/items/0/name: must be string');
    expect(message).toContain('/extra: is not in the input schema');
    expect(host.received.length).toBe(received);

    const calls = upstream.calls.length;
    const upstreamResult = await mcp.client.callTool({ name: 'up_sdk_style', arguments: { n: 'two' } });
    expect(upstreamResult.isError).toBe(true);
    expect((upstreamResult.content as { text: string }[])[0]?.text).toContain('/n: must be number');
    expect(upstream.calls.length).toBe(calls);
  });

  it('answers an answer that does not fit the output schema as an isError result, not as structured content', async () => {
    // The host answers {"ok": true, "got": ...}.
    const fits = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
    const breaks = { type: 'object', properties: { ok: { type: 'string' } }, required: ['ok'] };
    for (const [name, outputSchema] of [
      ['fits_output', fits],
      ['breaks_output', breaks],
    ] as const) {
      const tool = { name, endpoint: '/tools/out', description: 'Answers an object', host: '127.0.0.1', port: host.port, outputSchema };
      expect((await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool })).statusCode).toBe(201);
    }
    await mcp.client.listTools();
    const good = await mcp.client.callTool({ name: 'fits_output', arguments: {} });
    expect(good.isError).toBeFalsy();
    expect(good.structuredContent).toEqual({ ok: true, got: {} });
    // The official client would refuse structured content that breaks the schema (-32602).
    const bad = await mcp.client.callTool({ name: 'breaks_output', arguments: {} });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect((bad.content as { text: string }[])[0]?.text).toMatch(
      /^breaks_output failed: the answer does not fit the output schema of breaks_output: \/ok: /,
    );
  });

  it('forwards arguments that fit, through both kinds', async () => {
    const ok = await mcp.client.callTool({
      name: 'place_order',
      arguments: { customer: { id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70' }, items: [{ name: 'bolt', quantity: 1 }] },
    });
    expect(ok.isError).toBeFalsy();
    expect(host.received.at(-1)?.body).toEqual({
      customer: { id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70' },
      items: [{ name: 'bolt', quantity: 1 }],
    });
    const doubled = await mcp.client.callTool({ name: 'up_sdk_style', arguments: { n: 21 } });
    expect(doubled.structuredContent).toEqual({ doubled: 42 });
    expect(upstream.calls.at(-1)).toEqual({ name: 'sdk_style', arguments: { n: 21 } });
  });
});
