/**
 * tool-registry/client (issue 12) against a real listening registry and a loopback HTTP tool.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RegistryClient,
  RegistryClientError,
  toAgUi,
  toAnthropic,
  toMcp,
  toOpenAI,
  toPromptContext,
  type PublicTool,
} from '../../src/client/index.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

describe('RegistryClient', () => {
  let t: TestApp;
  let tool: Server;
  let baseUrl: string;
  let toolPort: number;
  let admin: Record<string, string>;
  /** Every request the client sent to the registry, with its If-None-Match. */
  const sent: { url: string; ifNoneMatch: string | null; status: number }[] = [];
  const countingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    const headers = new Headers(init?.headers);
    sent.push({ url: String(input), ifNoneMatch: headers.get('if-none-match'), status: response.status });
    return response;
  };

  const register = async (extra: Record<string, unknown>) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { ...seed('calculator'), host: '127.0.0.1', port: toolPort, ...extra },
    });
    expect(res.statusCode, res.body).toBe(201);
  };

  beforeAll(async () => {
    tool = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString() || 'null') as { expression?: string };
        if (req.url === '/tools/calculator')
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(`${body.expression} = 42`));
        if (req.url === '/tools/broken') return res.writeHead(500, { 'content-type': 'text/plain' }).end('kaputt');
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    toolPort = (tool.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    await register({});
    await register({ scopes: [], parameters: {}, name: 'broken', endpoint: '/tools/broken', description: 'Always fails' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => tool.close(() => resolve()));
  });

  const agent = (scopes = ['calculator:use']) =>
    new RegistryClient({ baseUrl, token: () => Promise.resolve(t.token(scopes, { sub: 'safecracker' })), fetch: countingFetch });

  it('discovers, then reuses the list on a 304 sent for its If-None-Match', async () => {
    const client = agent();
    sent.length = 0;
    const first = await client.discover();
    expect(first.notModified).toBe(false);
    expect(first.tools.map((tool) => tool.name)).toEqual(['broken', 'calculator']);
    expect(first.index).toBe(2);
    expect(first.hidden).toBe(0);
    const second = await client.discover();
    expect(second).toMatchObject({ notModified: true, index: 2 });
    expect(second.tools).toBe(first.tools);
    expect(sent.map((s) => s.status)).toEqual([200, 304]);
    expect(sent[0]?.ifNoneMatch).toBeNull();
    expect(sent[1]?.ifNoneMatch).toMatch(/^"/u);
  });

  it('watches with blocking queries and sees a registration, then stops on abort', async () => {
    const client = agent();
    await client.discover();
    const controller = new AbortController();
    const seen: { names: string[]; index: number }[] = [];
    let changed!: () => void;
    const change = new Promise<void>((resolve) => (changed = resolve));
    const watching = client.watch(
      (tools, index) => {
        seen.push({ names: tools.map((tool) => tool.name), index });
        changed();
      },
      { signal: controller.signal, waitS: 30 },
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await register({ scopes: [], parameters: {}, name: 'weather_forecast', endpoint: '/tools/weather', description: 'Get weather data' });
    await change;
    expect(seen).toEqual([{ names: ['broken', 'calculator', 'weather_forecast'], index: 3 }]);
    expect(client.tools).toHaveLength(3);
    controller.abort();
    await watching;
  });

  it('invokes a tool with a JSON answer and streamed, counting usage', async () => {
    const client = agent();
    await client.discover();
    const result = await client.invoke('calculator', { expression: '6*7' });
    expect(result).toMatchObject({ tool: 'calculator', result: '6*7 = 42' });
    const chunks: string[] = [];
    const streamed = await client.invoke('calculator', { expression: '2+2' }, { onChunk: (text) => chunks.push(text) });
    expect(streamed).toMatchObject({ tool: 'calculator', result: '2+2 = 42' });
    expect(chunks.join('')).toBe('2+2 = 42');
    await expect(client.invoke('broken')).rejects.toMatchObject({ status: 502, code: 'TR_ERR_TOOL_SERVICE' });
    await expect(client.invoke('broken', {}, { onChunk: () => {} })).rejects.toMatchObject({ code: 'TR_ERR_TOOL_SERVICE' });
    expect(client.usage()).toEqual({
      total_tools_available: 3,
      total_tool_calls: 4,
      usage_by_tool: { calculator: 2, broken: 2 },
      failures_by_tool: { broken: 2 },
      total_failures: 2,
      most_used_tool: 'calculator',
    });
  });

  it("throws RegistryClientError with the problem's status, code, detail and errors", async () => {
    const anonymous = new RegistryClient({ baseUrl });
    const unauthenticated = await anonymous.invoke('calculator', { expression: '1' }).catch((error: unknown) => error);
    expect(unauthenticated).toBeInstanceOf(RegistryClientError);
    expect(unauthenticated).toMatchObject({ status: 401, code: 'TR_ERR_UNAUTHENTICATED' });
    const client = agent();
    await expect(client.invoke('nope', {})).rejects.toMatchObject({ status: 404, code: 'TR_ERR_NOT_FOUND' });
    const bad = (await client.invoke('calculator', { expression: 7 }).catch((error: unknown) => error)) as RegistryClientError;
    expect(bad).toMatchObject({ status: 400, code: 'TR_ERR_INVALID_ARGUMENTS' });
    expect(bad.detail).toEqual(expect.any(String));
    expect(bad.errors).toEqual([expect.objectContaining({ path: '/expression' })]);
    await expect(agent([]).invoke('calculator', { expression: '1' })).rejects.toMatchObject({
      status: 403,
      code: 'TR_ERR_INSUFFICIENT_SCOPE',
    });
  });

  it('carries Retry-After into retryAfterS', async () => {
    const refusing: typeof fetch = () =>
      Promise.resolve(
        new Response(
          JSON.stringify({
            type: 'urn:tool-registry:error:too-many-calls',
            title: 'Too many calls in flight',
            status: 503,
            detail: 'busy',
            code: 'TR_ERR_TOO_MANY_CALLS',
          }),
          {
            status: 503,
            headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
          },
        ),
      );
    const client = new RegistryClient({ baseUrl, token: 'x', fetch: refusing });
    await expect(client.invoke('calculator', {})).rejects.toMatchObject({
      status: 503,
      code: 'TR_ERR_TOO_MANY_CALLS',
      detail: 'busy',
      retryAfterS: 1,
    });
  });

  it('converts discovered tools to the shapes GET /?format= serves', async () => {
    const client = agent();
    const { tools } = await client.discover();
    const exported = async (format: string) => {
      const res = await fetch(`${baseUrl}/?format=${format}`, { headers: bearer(t.token(['calculator:use'])) });
      expect(res.status).toBe(200);
      return format === 'prompt' ? res.text() : res.json();
    };
    expect(toOpenAI(tools)).toEqual(await exported('openai'));
    expect(toAnthropic(tools)).toEqual(await exported('anthropic'));
    expect({ tools: toMcp(tools) }).toEqual(await exported('mcp'));
    expect(toAgUi(tools)).toEqual(await exported('ag-ui'));
    expect(toPromptContext(tools)).toBe(await exported('prompt'));
    const calculator = tools.find((tool) => tool.name === 'calculator') as PublicTool;
    expect(toPromptContext([calculator])).toBe('Available tools:\n- calculator(expression): Perform mathematical calculations\n');
    expect(toOpenAI([calculator])[0]).toEqual({
      type: 'function',
      function: { name: 'calculator', description: 'Perform mathematical calculations', parameters: calculator.inputSchema },
    });
    expect(toPromptContext([])).toBe('');
  });
});
