/**
 * Issue 34, usage over time: `GET /stats?window=1h|24h` after real calls through the registry to
 * HTTP tools on a loopback server, under the caller's view, `400` for another window, `/stats`
 * without `window` as before, and the window still there after the app is closed and built
 * again on the same SQLite file.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

interface Bucket {
  start: string;
  calls: number;
  errors: number;
  p50_ms: number | null;
  p95_ms: number | null;
}
interface WindowStats {
  window: string;
  total_tool_calls: number;
  usage_by_tool: Record<string, number>;
  most_used_tool: string | null;
  errors_by_class: Record<string, number>;
  latency_ms_by_tool: Record<string, { p50: number; p95: number; p99: number; samples: number }>;
  buckets: Bucket[];
}

const STATS_FIELDS = [
  'deprecated_calls_by_tool',
  'deprecated_tool_calls',
  'errors_by_class',
  'latency_ms_by_tool',
  'most_used_tool',
  'registry_index',
  'scope_usage',
  'tools_by_kind',
  'tools_by_mcp_server',
  'tools_by_name',
  'tools_by_service',
  'total_tool_calls',
  'total_tool_services',
  'total_tools',
  'unique_scopes',
  'usage_by_agent',
  'usage_by_tool',
];

describe('GET /stats?window= (issue 34)', () => {
  let server: Server;
  let port: number;
  let t: TestApp;
  let admin: Record<string, string>;

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/tools/echo') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('ok'));
        if (req.url === '/tools/broken') return res.writeHead(500, { 'content-type': 'text/plain' }).end('kaputt');
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    const register = async (name: string, endpoint: string, scopes: string[]) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: { name, description: `The ${name} tool`, host: '127.0.0.1', port, endpoint, scopes, parameters: {} },
      });
      expect(res.statusCode, res.body).toBe(201);
    };
    await register('echo', '/tools/echo', []);
    await register('broken', '/tools/broken', []);
    await register('secret_echo', '/tools/echo', ['secret:use']);
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const invoke = (name: string, scopes: string[] = []) =>
    t.app.inject({ method: 'POST', url: `/tools/${name}/invoke`, headers: bearer(t.token(scopes)), payload: {} });
  const stats = (query: string, headers: Record<string, string> = admin) => t.app.inject({ method: 'GET', url: `/stats${query}`, headers });

  it('answers the usage fields over the last hour, with a bucket per minute, after real calls', async () => {
    for (let i = 0; i < 3; i++) expect((await invoke('echo')).statusCode).toBe(200);
    expect((await invoke('broken')).statusCode).toBe(502);
    expect((await invoke('secret_echo')).statusCode).toBe(403); // denied: an error, not a call
    expect((await invoke('secret_echo', ['secret:use'])).statusCode).toBe(200);

    const res = await stats('?window=1h');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<WindowStats>();
    expect(Object.keys(body).sort()).toEqual([
      'buckets',
      'errors_by_class',
      'latency_ms_by_tool',
      'most_used_tool',
      'total_tool_calls',
      'usage_by_tool',
      'window',
    ]);
    expect(body.window).toBe('1h');
    expect(body.total_tool_calls).toBe(5);
    expect(body.usage_by_tool).toEqual({ broken: 1, echo: 3, secret_echo: 1 });
    expect(body.most_used_tool).toBe('echo');
    expect(body.errors_by_class).toEqual({ denied: 1, 'service-error': 1 });
    expect(body.latency_ms_by_tool['echo']!.samples).toBe(3);
    expect(body.latency_ms_by_tool['echo']!.p50).toBeGreaterThan(0);
    expect(body.buckets).toHaveLength(60);
    const starts = body.buckets.map((b) => Date.parse(b.start));
    starts.forEach((start, i) => i > 0 && expect(start - starts[i - 1]!).toBe(60_000));
    expect(body.buckets[0]!.start).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:00Z$/);
    expect(Date.now() - starts.at(-1)!).toBeLessThan(120_000);
    // The calls were made within the last minute or two: the buckets hold them all.
    const sum = (key: 'calls' | 'errors') => body.buckets.reduce((n, b) => n + b[key], 0);
    expect(sum('calls')).toBe(5);
    expect(sum('errors')).toBe(2);
    const busy = body.buckets.filter((b) => b.calls > 0);
    for (const b of busy) expect(b.p95_ms!).toBeGreaterThanOrEqual(b.p50_ms!);
    for (const b of body.buckets.filter((b) => b.calls === 0)) expect([b.p50_ms, b.p95_ms]).toEqual([null, null]);

    const day = (await stats('?window=24h')).json<WindowStats>();
    expect(day.window).toBe('24h');
    expect(day.buckets).toHaveLength(1440);
    expect(day.usage_by_tool).toEqual(body.usage_by_tool);
  });

  it("follows the caller's view: a tool its scopes hide counts nowhere in the window", async () => {
    const agent = bearer(t.token([]));
    const body = (await stats('?window=1h', agent)).json<WindowStats>();
    expect(body.usage_by_tool).toEqual({ broken: 1, echo: 3 });
    expect(body.total_tool_calls).toBe(4);
    expect(body.errors_by_class).toEqual({ 'service-error': 1 });
    expect(Object.keys(body.latency_ms_by_tool).sort()).toEqual(['broken', 'echo']);
    expect(body.buckets.reduce((n, b) => n + b.calls, 0)).toBe(4);
    // The same rule as /stats without a window.
    const plain = (await stats('', agent)).json<{ usage_by_tool: Record<string, number> }>();
    expect(plain.usage_by_tool).toEqual(body.usage_by_tool);
  });

  it('answers /stats without window as before: the same fields, no buckets', async () => {
    const res = await stats('');
    expect(res.statusCode).toBe(200);
    const body = res.json<Record<string, unknown>>();
    expect(Object.keys(body).sort()).toEqual(STATS_FIELDS);
    expect(body['total_tool_calls']).toBe(5);
    expect(body['usage_by_agent']).toEqual({ 'test-agent': { broken: 1, echo: 3, secret_echo: 1 } });
    // Unknown query parameters are still ignored, as they were before the route took a query.
    expect((await stats('?colour=blue')).json()).toEqual(body);
  });

  it('refuses any other window with a 400 naming `window`', async () => {
    for (const query of ['?window=7d', '?window=', '?window=1h&window=24h']) {
      const res = await stats(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      const problem = res.json<{ code: string; detail: string; errors: { path: string }[] }>();
      expect(problem.code).toBe('TR_ERR_BAD_REQUEST');
      expect(problem.detail).toBe('invalid stats query');
      expect(problem.errors.map((e) => e.path)).toEqual(['window']);
    }
  });

  it('keeps the window across a restart on the same database file', async () => {
    const before = (await stats('?window=24h')).json<WindowStats>();
    await t.restart();
    const after = (await stats('?window=24h')).json<WindowStats>();
    expect(after.total_tool_calls).toBe(5);
    expect(after.usage_by_tool).toEqual(before.usage_by_tool);
    expect(after.errors_by_class).toEqual(before.errors_by_class);
    expect(after.latency_ms_by_tool).toEqual(before.latency_ms_by_tool);
    // The same minutes, moved on by however many minutes the restart took.
    const busy = (w: WindowStats) => w.buckets.filter((b) => b.calls > 0 || b.errors > 0);
    expect(busy(after)).toEqual(busy(before));
    // Calls after the restart add to what was loaded.
    expect((await invoke('echo')).statusCode).toBe(200);
    expect((await stats('?window=1h')).json<WindowStats>().usage_by_tool['echo']).toBe(4);
  });
});
