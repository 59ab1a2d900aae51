/**
 * Prometheus metrics (issue 13): `GET /metrics` through the real app, read with a Prometheus
 * text parser, after discovery requests, writes and calls to an HTTP tool on a loopback
 * server; who may read it (operators on the main port, anyone on METRICS_PORT); call counters
 * that never shrink when old call records are pruned; bounded labels.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { OTHER_LABEL } from '../../src/http/metrics/registry-metrics.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { parseMetrics, sampleValue, type Family } from '../helpers/prometheus.js';
import { connect, mcpUrl, untilStreamsOpen, type McpTestClient } from '../mcp/support.js';

const DAY_MS = 86_400_000;

/** A tool host: /ok answers JSON, /fail answers 500. */
async function toolHost(): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/ok') res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('fine'));
      else res.writeHead(500, { 'content-type': 'text/plain' }).end('broken');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      // The bridge's fetch keeps connections alive; close would wait for them to time out.
      server.closeAllConnections();
    });
  return { server, port: (server.address() as AddressInfo).port, close };
}

const httpTool = (name: string, port: number) => ({
  name,
  description: `${name}, a test tool`,
  endpoint: `/${name}`,
  host: '127.0.0.1',
  port,
  scopes: ['echo:use'],
  parameters: {},
});

describe('GET /metrics', () => {
  let t: TestApp;
  let host: Awaited<ReturnType<typeof toolHost>>;
  let admin: Record<string, string>;
  let user: Record<string, string>;

  const scrape = async (): Promise<Map<string, Family>> => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: admin });
    expect(res.statusCode, res.body).toBe(200);
    return parseMetrics(res.body);
  };
  const invoke = (name: string, headers = user) => t.app.inject({ method: 'POST', url: `/tools/${name}/invoke`, headers, payload: {} });

  beforeAll(async () => {
    host = await toolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0', USAGE_RETENTION_DAYS: '1', STATS_READ_SCOPE: 'dashboard:read' });
    admin = bearer(t.token(['registry:write']));
    user = bearer(t.token(['echo:use']));
  });

  afterAll(async () => {
    await t.close();
    await host.close();
  });

  it('is refused to anonymous callers and ordinary tokens, and served to the admin and dashboard scopes', async () => {
    const anonymous = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(anonymous.json()).toMatchObject({ code: 'TR_ERR_UNAUTHENTICATED' });
    expect(anonymous.headers['www-authenticate']).toContain('scope="registry:write dashboard:read"');
    const ordinary = await t.app.inject({ method: 'GET', url: '/metrics', headers: user });
    expect(ordinary.statusCode).toBe(403);
    expect(ordinary.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(ordinary.json()).toMatchObject({ code: 'TR_ERR_INSUFFICIENT_SCOPE' });
    for (const headers of [admin, bearer(t.token(['dashboard:read']))]) {
      const res = await t.app.inject({ method: 'GET', url: '/metrics', headers });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    }
  });

  it('has the families and labels after discovery requests, writes and calls', async () => {
    // Writes: two tools, and a refused one.
    for (const name of ['ok', 'fail']) {
      expect(
        (await t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: httpTool(name, host.port) })).statusCode,
      ).toBe(201);
    }
    expect((await t.app.inject({ method: 'PUT', url: '/tools/bad', headers: admin, payload: { name: 'bad' } })).statusCode).toBe(400);
    // Discovery: the whole view, a 304, a token's view, a page (not a whole view), an unknown path.
    const first = await t.app.inject({ method: 'GET', url: '/' });
    expect((await t.app.inject({ method: 'GET', url: '/', headers: { 'if-none-match': String(first.headers['etag']) } })).statusCode).toBe(
      304,
    );
    expect((await t.app.inject({ method: 'GET', url: '/', headers: user })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/?limit=1' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/no/such/path' })).statusCode).toBe(404);
    // Calls: two answered, one the tool fails, one refused at the scope check.
    expect((await invoke('ok')).statusCode).toBe(200);
    expect((await invoke('ok')).statusCode).toBe(200);
    expect((await invoke('fail')).statusCode).toBe(502);
    expect((await invoke('ok', bearer(t.token(['other:use'])))).statusCode).toBe(403);
    // Held while scraped: a blocking query, and an MCP session with its event stream.
    const index = Number(first.headers['x-registry-index']);
    const held = t.app.inject({ method: 'GET', url: `/?index=${index}&wait=10s` });
    const mcp: McpTestClient = await connect(await mcpUrl(t.app), t.token(['echo:use']));
    await untilStreamsOpen(t.app, 2);

    const metrics = await scrape();
    for (const family of metrics.values()) {
      expect(family.help, `${family.name} has help`).not.toBe('');
      expect(family.type, `${family.name} has a type`).not.toBe('UNTYPED');
    }
    const value = (name: string, labels: Record<string, string> = {}) => sampleValue(metrics, name, labels);

    // Requests, by route pattern (never a URL) and status; the histogram's _count counts them.
    const requests = 'tool_registry_http_request_duration_seconds_count';
    expect(metrics.get('tool_registry_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(value(requests, { method: 'PUT', route: '/tools/:name', status_code: '201' })).toBe(2);
    expect(value(requests, { method: 'PUT', route: '/tools/:name', status_code: '400' })).toBe(1);
    expect(value(requests, { method: 'GET', route: '/', status_code: '304' })).toBe(1);
    expect(value(requests, { method: 'GET', route: '/', status_code: '200' })).toBe(3);
    expect(value(requests, { method: 'POST', route: '/tools/:name/invoke', status_code: '200' })).toBe(2);
    expect(value(requests, { method: 'POST', route: '/tools/:name/invoke', status_code: '502' })).toBe(1);
    expect(value(requests, { method: 'POST', route: '/tools/:name/invoke', status_code: '403' })).toBe(1);
    expect(value(requests, { method: 'GET', route: '(unmatched)', status_code: '404' })).toBe(1);
    const routes = new Set(metrics.get('tool_registry_http_request_duration_seconds')?.samples.map((s) => s.labels['route']));
    const isRoute = (url: string) => (['GET', 'POST', 'PUT'] as const).some((method) => t.app.hasRoute({ url, method }));
    expect([...routes].filter((route) => route !== '(unmatched)' && !isRoute(route ?? ''))).toEqual([]);
    expect(
      [...routes].filter((route) => /\/(ok|fail|bad|no)\b/u.test(route ?? '')),
      'no URL as a route',
    ).toEqual([]);
    expect(value('tool_registry_http_request_duration_seconds_bucket', { method: 'GET', route: '/', status_code: '304', le: '+Inf' })).toBe(
      1,
    );

    // Whole discovery views (the page is not one) and their 304s.
    expect(value('tool_registry_discovery_views_total', { view: 'all', status: '200' })).toBe(1);
    expect(value('tool_registry_discovery_views_total', { view: 'all', status: '304' })).toBe(1);
    expect(value('tool_registry_discovery_views_total', { view: 'scopes', status: '200' })).toBe(1);
    expect(value('tool_registry_discovery_views_total', { view: 'public', status: '200' })).toBe(0);

    // The catalogue, held queries, streams and sessions.
    expect(value('tool_registry_tools', { kind: 'http' })).toBe(2);
    expect(value('tool_registry_tools', { kind: 'tool-service' })).toBe(0);
    expect(value('tool_registry_tools', { kind: 'mcp' })).toBe(0);
    expect(value('tool_registry_tool_services')).toBe(0);
    expect(value('tool_registry_index')).toBe(t.app.catalog.index);
    expect(value('tool_registry_search_backlog')).toBe(0);
    expect(value('tool_registry_blocking_queries')).toBe(1);
    expect(value('tool_registry_streams')).toBe(1);
    expect(value('tool_registry_mcp_sessions')).toBe(1);

    // Calls by tool and outcome; latency of those that got past the scope check.
    expect(value('tool_registry_tool_calls_total', { tool: 'ok', outcome: 'ok' })).toBe(2);
    expect(value('tool_registry_tool_calls_total', { tool: 'fail', outcome: 'service-error' })).toBe(1);
    expect(value('tool_registry_tool_calls_total', { tool: 'ok', outcome: 'denied' })).toBe(1);
    expect(value('tool_registry_tool_call_duration_seconds_count', { tool: 'ok' })).toBe(2);
    expect(value('tool_registry_tool_call_duration_seconds_count', { tool: 'fail' })).toBe(1);
    expect(value('tool_registry_tool_calls_in_flight')).toBe(0);
    // Token subjects are no label unless an operator turns that on.
    expect(metrics.has('tool_registry_tool_calls_by_subject_total')).toBe(false);
    expect([...metrics.values()].some((f) => f.samples.some((s) => 'sub' in s.labels))).toBe(false);

    // The bus (none configured), the key set (none: an HS256 secret), group commits.
    expect(value('tool_registry_bus_state', { state: 'not-configured' })).toBe(1);
    expect(value('tool_registry_bus_state', { state: 'connected' })).toBe(0);
    expect(value('tool_registry_bus_state', { state: 'disconnected' })).toBe(0);
    expect(value('tool_registry_jwks_fetches_total')).toBe(0);
    expect(value('tool_registry_jwks_fetch_failures_total')).toBe(0);
    const commits = value('tool_registry_commit_writes_count') ?? 0;
    expect(commits).toBeGreaterThanOrEqual(1);
    // The two written: the refused body was refused on its route and never queued for a commit.
    expect(value('tool_registry_commit_writes_sum')).toBe(2);
    expect(value('tool_registry_commit_duration_seconds_count')).toBe(commits);
    expect(value('tool_registry_commit_failures_total')).toBe(0);

    // The process's own.
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(metrics.has(name), name).toBe(true);
    }

    // Every series examples/grafana-dashboard.json queries is one this scrape has.
    const dashboard = readFileSync(join(import.meta.dirname, '..', '..', 'examples', 'grafana-dashboard.json'), 'utf8');
    const queried = new Set(dashboard.match(/\b(?:tool_registry|process|nodejs)_[a-z0-9_]+/gu));
    const scraped = new Set([...metrics.values()].flatMap((f) => f.samples.map((s) => s.name)));
    expect(queried.size).toBeGreaterThan(20);
    expect([...queried].filter((name) => !scraped.has(name))).toEqual([]);

    // Ended, not only closed: a session left open holds app.close for the client's 4 s keep-alive.
    await mcp.transport.terminateSession();
    await mcp.close();
    // A write wakes the held query.
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/fail', headers: admin })).statusCode).toBe(200);
    expect((await held).statusCode).toBe(200);
  });

  it('counts calls from process start: pruning old call records leaves the counters as they were', async () => {
    const calls = (metrics: Map<string, Family>) =>
      sampleValue(metrics, 'tool_registry_tool_calls_total', { tool: 'ok', outcome: 'ok' }) ?? 0;
    const before = calls(await scrape());
    expect(before).toBeGreaterThan(0);
    t.app.usage.flush();
    expect(t.app.usageStore.counts().length).toBeGreaterThan(0);
    // Two days on, with records kept for one: the hourly prune deletes every record there is.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 2 * DAY_MS });
    try {
      t.app.usage.prune();
    } finally {
      vi.useRealTimers();
    }
    expect(t.app.usageStore.counts()).toEqual([]);
    expect(calls(await scrape())).toBe(before);
    expect((await invoke('ok')).statusCode).toBe(200);
    expect(calls(await scrape())).toBe(before + 1);
  });
});

describe('metrics labels', () => {
  it('caps the tool names labelled apart, and labels token subjects only when turned on', async () => {
    const host = await toolHost();
    const t = await createTestApp({ RATE_LIMIT_MAX: '0', METRICS_MAX_TOOL_LABELS: '1', METRICS_SUBJECT_LABELS: 'true' });
    try {
      const admin = bearer(t.token(['registry:write']));
      for (const name of ['ok', 'other']) {
        expect(
          (
            await t.app.inject({
              method: 'PUT',
              url: `/tools/${name}`,
              headers: admin,
              payload: { ...httpTool(name, host.port), endpoint: '/ok' },
            })
          ).statusCode,
        ).toBe(201);
        const caller = bearer(t.token(['echo:use'], { sub: `agent-${name}` }));
        expect((await t.app.inject({ method: 'POST', url: `/tools/${name}/invoke`, headers: caller, payload: {} })).statusCode).toBe(200);
      }
      const metrics = parseMetrics((await t.app.inject({ method: 'GET', url: '/metrics', headers: admin })).body);
      const tools = metrics.get('tool_registry_tool_calls_total')?.samples.map((s) => s.labels['tool']);
      expect(tools).toEqual(['ok', OTHER_LABEL]);
      expect(sampleValue(metrics, 'tool_registry_tool_calls_by_subject_total', { sub: 'agent-ok', outcome: 'ok' })).toBe(1);
      expect(sampleValue(metrics, 'tool_registry_tool_calls_by_subject_total', { sub: OTHER_LABEL, outcome: 'ok' })).toBe(1);
    } finally {
      await t.close();
      await host.close();
    }
  });
});

describe('METRICS_PORT', () => {
  it('serves /metrics on its own port, open, and nothing else; the main port no longer serves it', async () => {
    const t = await createTestApp({ METRICS_PORT: '0' });
    let base = '';
    try {
      await t.app.ready();
      const address = t.app.metrics.listenAddress;
      expect(address?.port).toBeGreaterThan(0);
      base = `http://127.0.0.1:${address?.port}`;
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      const metrics = parseMetrics(await res.text());
      expect(sampleValue(metrics, 'tool_registry_bus_state', { state: 'not-configured' })).toBe(1);
      const other = await fetch(`${base}/`);
      expect(other.status).toBe(404);
      expect(other.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(await other.json()).toMatchObject({ code: 'TR_ERR_ROUTE_NOT_FOUND' });
      const posted = await fetch(`${base}/metrics`, { method: 'POST' });
      expect(posted.status).toBe(405);
      expect(posted.headers.get('allow')).toBe('GET, HEAD');
      expect((await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(t.token(['registry:write'])) })).statusCode).toBe(404);
    } finally {
      await t.close();
    }
    // Closed with the app.
    await expect(fetch(`${base}/metrics`)).rejects.toThrow();
  });

  it('counts key-set (JWKS) fetches and their failures', async () => {
    // A key endpoint that fails: the fetch at startup counts, and so does its failure.
    const keys = createServer((_req, res) => res.writeHead(500).end());
    await new Promise<void>((resolve) => keys.listen(0, '127.0.0.1', resolve));
    const t = await createTestApp({
      JWT_SECRET: '',
      JWKS_URL: `http://127.0.0.1:${(keys.address() as AddressInfo).port}/jwks`,
      METRICS_PORT: '0',
    });
    try {
      await t.app.ready();
      for (let i = 0; i < 100 && (t.app.jwks?.failedFetches ?? 0) === 0; i++) await new Promise((r) => setTimeout(r, 10));
      const res = await fetch(`http://127.0.0.1:${t.app.metrics.listenAddress?.port}/metrics`);
      const metrics = parseMetrics(await res.text());
      expect(sampleValue(metrics, 'tool_registry_jwks_fetches_total')).toBe(1);
      expect(sampleValue(metrics, 'tool_registry_jwks_fetch_failures_total')).toBe(1);
    } finally {
      await t.close();
      await new Promise((resolve) => keys.close(resolve));
    }
  });

  it('must differ from PORT', () => {
    expect(() => loadConfig({}, { PORT: '9000', METRICS_PORT: '9000' })).toThrow(
      'METRICS_PORT: must differ from PORT (unset it to serve /metrics on PORT) (got "9000")',
    );
    expect(loadConfig({}, { METRICS_PORT: '9464' }).metrics).toMatchObject({ port: 9464, host: '127.0.0.1' });
  });
});
