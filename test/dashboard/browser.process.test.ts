/**
 * The dashboard in real headless Chromium (issue 13), driven by playwright-core, against the
 * registry listening on a loopback port: the figures shown are those of /stats, an operator
 * signs in by pasting a token, and registrations and calls show up without a reload. The
 * token stays out of the URL and out of the server's logs. Saves a screenshot to
 * .cache/dashboard.png, and to docs/dashboard.png with UPDATE_SCREENSHOT=1.
 *
 * Needs Chromium (Debian's `chromium`, or CHROMIUM_PATH): without it the file is skipped with a
 * printed reason, and under CI=true it fails (.ci/run installs it).
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createSigner } from 'fast-jwt';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { REPO_ROOT } from '../helpers/process.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
if (missing) {
  if (process.env['CI'] === 'true') throw new Error(`the dashboard's browser test must run under CI=true, but there is ${missing}`);
  console.warn(`\n[dashboard] skipping the browser test: ${missing}\n`);
}

const ADMIN = 'registry:write';
const TOKEN_KEY = 'tool-registry.dashboard.token';
/** How long the page may take to show a change: its refresh is set to 1 s in the test. */
const SHOWN_WITHIN = { timeout: 10_000, interval: 100 };
const format = (n: number) => new Intl.NumberFormat('en-US').format(n);
/** Arguments the tools' input schemas require. */
const ARGUMENTS = new Map<string, unknown>([
  ['calculator', { expression: '6 * 7' }],
  ['tell-joke', { topic: 'cats' }],
]);

interface Stats {
  total_tools: number;
  total_tool_services: number;
  registry_index: number;
  total_tool_calls: number;
  most_used_tool: string | null;
  tools_by_kind: Record<string, number>;
  errors_by_class: Record<string, number>;
  usage_by_agent: Record<string, Record<string, number>>;
}

/** The tools' host: answers after a delay typical of each tool; /fail answers 500. */
function toolHost(): Promise<Server> {
  const typicalMs = new Map([
    ['/calc', 3],
    ['/weather', 45],
    ['/files', 15],
    ['/db', 80],
    ['/sim', 25],
  ]);
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const typical = typicalMs.get(req.url ?? '');
      if (typical === undefined) return void res.writeHead(500, { 'content-type': 'text/plain' }).end('the tool failed');
      setTimeout(
        () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(`done by ${req.url}`)),
        typical * (0.5 + Math.random()),
      );
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe.skipIf(missing !== undefined)('the dashboard in Chromium', () => {
  let t: TestApp;
  let host: Server;
  let browser: Browser;
  let page: Page;
  let base: string;
  let admin: string;
  const pageErrors: string[] = [];
  /** Every URL the page requested. */
  const requested: string[] = [];

  const stats = async (token?: string): Promise<Stats> =>
    (await fetch(`${base}/stats`, { headers: token ? bearer(token) : {} })).json() as Promise<Stats>;
  const put = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.text()).toBe(201);
  };
  const call = (tool: string, token: string) =>
    fetch(`${base}/tools/${tool}/invoke`, {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify(ARGUMENTS.get(tool) ?? {}),
    }).then((res) => res.arrayBuffer());
  const shown = (stat: string) => page.locator(`[data-stat="${stat}"]`).textContent();
  const storedToken = () => page.evaluate(`sessionStorage.getItem(${JSON.stringify(TOKEN_KEY)})`);

  beforeAll(async () => {
    host = await toolHost();
    const port = (host.address() as AddressInfo).port;
    t = await createTestApp({}, { keepLogs: true });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    admin = t.token([ADMIN], { sub: 'dashboard-operator' });
    const http = (name: string, endpoint: string, scopes: string[], description: string) => ({
      name,
      description,
      endpoint,
      host: '127.0.0.1',
      port,
      scopes,
      parameters: {},
    });
    await put('/tools/calculator', { ...seed('calculator'), endpoint: '/calc', host: '127.0.0.1', port });
    await put('/tools/weather_forecast', http('weather_forecast', '/weather', ['weather:read'], 'Forecast for a city'));
    await put('/tools/file_reader', http('file_reader', '/files', ['file_reader:use'], 'Read a file'));
    await put('/tools/database_query', http('database_query', '/db', ['database:read'], 'Query the database'));
    await put('/tools/simulation_data', http('simulation_data', '/sim', ['simulation:read'], 'Simulation results'));
    await put('/tools/flaky_search', http('flaky_search', '/fail', [], 'A search that fails'));
    await put('/tool-services/joke-service', seed('joke-service'));
    await put('/tools/tell-joke', seed('tell-joke'));

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await (await browser.newContext({ viewport: { width: 1360, height: 900 }, locale: 'en-US', colorScheme: 'light' })).newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('request', (request) => requested.push(request.url()));
    // Script errors and CSP violations; refused requests (401, 403) are logged too, and expected.
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    host?.closeAllConnections();
    await new Promise((resolve) => host?.close(resolve));
  });

  it('shows anonymous visitors the figures /stats shows them', async () => {
    await page.goto(`${base}/dashboard`);
    const expected = await stats();
    await expect.poll(() => shown('total_tools'), SHOWN_WITHIN).toBe(format(expected.total_tools));
    expect(await shown('total_tool_services')).toBe(format(expected.total_tool_services));
    expect(await shown('registry_index')).toBe(format(expected.registry_index));
    expect(await shown('total_tool_calls')).toBe('0');
    expect(await shown('bus')).toBe('not-configured');
    // Tools by kind, as the chart's table gives them; the chart itself is described to readers.
    const kinds = await page.locator('#chart-kinds tbody tr').allTextContents();
    expect(kinds).toEqual(Object.entries(expected.tools_by_kind).map(([kind, n]) => `${kind}${format(n)}`));
    expect(await page.locator('#chart-kinds [role="img"]').getAttribute('aria-label')).toContain(
      `http ${expected.tools_by_kind['http']} tools`,
    );
    // Operators' figures are not for anonymous visitors; the change feed runs without a token.
    expect(await page.locator('#services-note').textContent()).toContain('Sign in');
    await expect.poll(() => page.locator('#feed').getAttribute('data-state'), SHOWN_WITHIN).toBe('live');
    expect(pageErrors).toEqual([]);
  });

  it('reaches every control from the keyboard', async () => {
    const reached: string[] = [];
    for (let i = 0; i < 14; i++) {
      await page.keyboard.press('Tab');
      reached.push(String(await page.evaluate('document.activeElement?.id || document.activeElement?.textContent?.trim()')));
    }
    expect(reached.slice(0, 9)).toEqual([
      'Skip to the figures',
      // The console's pages (issue 34).
      'Status',
      'Tools',
      'Sources',
      'token',
      'Sign in',
      'refresh',
      'refresh-now',
      expect.stringContaining('as a table'),
    ]);
  });

  it('signs an operator in with a pasted token and follows writes and calls without a reload', async () => {
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));
    await page.evaluate('window.loadedOnce = true');
    await page.fill('#token', admin);
    await page.click('#sign-in button[type="submit"]');
    await expect.poll(() => page.locator('#identity').textContent(), SHOWN_WITHIN).toContain('Signed in as dashboard-operator');
    expect(await storedToken()).toBe(admin);
    expect(await page.inputValue('#token')).toBe('');
    await page.selectOption('#refresh', '1');
    // Operators see the services, and admins the audit log.
    await expect.poll(() => page.locator('#services tbody').textContent(), SHOWN_WITHIN).toContain('joke-service');
    await expect.poll(() => page.locator('#audit tbody').textContent(), SHOWN_WITHIN).toContain('tool.put');

    // A registration reaches the page through the change feed.
    const before = await stats(admin);
    await put('/tools/unit_converter', {
      ...seed('calculator'),
      name: 'unit_converter',
      description: 'Convert units',
      endpoint: '/calc',
      host: '127.0.0.1',
      port: (host.address() as AddressInfo).port,
      scopes: [],
    });
    await expect.poll(() => shown('total_tools'), SHOWN_WITHIN).toBe(format(before.total_tools + 1));
    await expect.poll(() => page.locator('#changes').textContent(), SHOWN_WITHIN).toContain('upsert tool unit_converter');

    // Calls by several agents, in bursts, each shown by the next refresh.
    const agents = {
      planner: t.token(['calculator:use', 'weather:read'], { sub: 'planner' }),
      'research-agent': t.token(['database:read', 'simulation:read', 'file_reader:use', 'weather:read'], { sub: 'research-agent' }),
      'support-bot': t.token(['calculator:use'], { sub: 'support-bot' }),
    };
    const bursts: [string, keyof typeof agents, number][][] = [
      [
        ['calculator', 'planner', 12],
        ['weather_forecast', 'planner', 6],
        ['database_query', 'research-agent', 4],
      ],
      [
        ['calculator', 'support-bot', 8],
        ['simulation_data', 'research-agent', 5],
        ['flaky_search', 'support-bot', 3],
        ['tell-joke', 'support-bot', 2],
      ],
      [
        ['file_reader', 'research-agent', 7],
        ['weather_forecast', 'research-agent', 4],
        ['database_query', 'planner', 2],
        ['calculator', 'planner', 5],
      ],
    ];
    // For the picture in the README and docs/running.md, a few more refreshes' worth of traffic in the activity chart.
    if (process.env['UPDATE_SCREENSHOT'] === '1') {
      for (const n of [9, 14, 6, 11, 18, 8, 13])
        bursts.push([
          ['calculator', 'support-bot', n],
          ['file_reader', 'research-agent', n % 5],
          ['weather_forecast', 'planner', n % 3],
        ]);
    }
    for (const burst of bursts) {
      await Promise.all(burst.flatMap(([tool, agent, n]) => Array.from({ length: n }, () => call(tool, agents[agent]))));
      const now = await stats(admin);
      await expect.poll(() => shown('total_tool_calls'), SHOWN_WITHIN).toBe(format(now.total_tool_calls));
      expect(await shown('errors')).toBe(format(Object.values(now.errors_by_class).reduce((a, b) => a + b, 0)));
    }
    const after = await stats(admin);
    expect(await shown('most_used_tool')).toBe(after.most_used_tool);
    // flaky_search's host fails, no bus is configured for tell-joke, planner lacks database:read.
    expect(after.errors_by_class).toEqual({ denied: 2, 'service-error': 3, unavailable: 2 });
    // Per-agent figures, as /stats gives them to operators.
    await expect
      .poll(() => page.locator('#agents tbody tr').count(), SHOWN_WITHIN)
      .toBe(Object.values(after.usage_by_agent).reduce((n, tools) => n + Object.keys(tools).length, 0));
    expect(await page.locator('#agents tbody').textContent()).toContain('research-agent');
    await expect.poll(() => page.locator('#chart-latency tbody tr').count(), SHOWN_WITHIN).toBeGreaterThanOrEqual(6);
    await expect.poll(() => page.locator('#chart-errors tbody').textContent(), SHOWN_WITHIN).toContain('service-error');
    // The activity chart gets a point per refresh.
    await expect.poll(() => page.locator('#chart-activity tbody tr').count(), SHOWN_WITHIN).toBeGreaterThanOrEqual(3);

    // Every chart is an image with a description, and has its table.
    for (const plot of await page.locator('.plot').all()) {
      expect(await plot.getAttribute('role')).toBe('img');
      expect(await plot.getAttribute('aria-label')).toMatch(/: .+/);
    }
    expect(await page.locator('details table').count()).toBe(5);

    // No reload happened; the token never reached a URL nor the server's logs.
    expect(await page.evaluate('window.loadedOnce')).toBe(true);
    expect(navigations).toEqual([]);
    expect(page.url()).toBe(`${base}/dashboard`);
    expect(requested.filter((url) => url.includes(admin) || url.includes(admin.split('.')[2] ?? '-'))).toEqual([]);
    // The change feed was read too, the token and the index in headers.
    expect(requested).toContain(`${base}/changes`);
    const logs = t.logs.join('\n');
    expect(logs).toContain('/stats');
    for (const secret of [admin, admin.split('.')[2] ?? '', ...Object.values(agents)]) expect(logs).not.toContain(secret);
    expect(pageErrors).toEqual([]);

    mkdirSync(join(REPO_ROOT, '.cache'), { recursive: true });
    const screenshot = join(REPO_ROOT, '.cache', 'dashboard.png');
    await page.evaluate('window.scrollTo(0, 0)');
    await page.screenshot({ path: screenshot, fullPage: true });
    if (process.env['UPDATE_SCREENSHOT'] === '1') {
      mkdirSync(join(REPO_ROOT, 'docs'), { recursive: true });
      copyFileSync(screenshot, join(REPO_ROOT, 'docs', 'dashboard.png'));
    }
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.screenshot({ path: join(REPO_ROOT, '.cache', 'dashboard-dark.png'), fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('tells anonymous visitors to sign in where the registry shows them nothing', async () => {
    const closed = await createTestApp({ ANONYMOUS_DISCOVERY: 'none', RATE_LIMIT_MAX: '0' });
    const other = await browser.newPage();
    try {
      await closed.app.listen({ port: 0, host: '127.0.0.1' });
      await other.goto(`http://127.0.0.1:${(closed.app.server.address() as AddressInfo).port}/dashboard`);
      await expect.poll(() => other.locator('#alert').textContent(), SHOWN_WITHIN).toContain('only to callers with a token');
      expect(await other.locator('#feed').getAttribute('data-state')).toBe('needs-token');
      await other.fill('#token', closed.token(['reader:use'], { sub: 'reader' }));
      await other.click('#sign-in button[type="submit"]');
      await expect.poll(() => other.locator('[data-stat="total_tools"]').textContent(), SHOWN_WITHIN).toBe('0');
      expect(await other.locator('#alert').isVisible()).toBe(false);
      await expect.poll(() => other.locator('#feed').getAttribute('data-state'), SHOWN_WITHIN).toBe('live');
      // Not an admin: the audit log says why it is empty.
      await expect.poll(() => other.locator('#audit-note').textContent(), SHOWN_WITHIN).toContain('lacks');
    } finally {
      await other.close();
      await closed.close();
    }
  });

  it('signs out, and drops a refused token with a message saying why', async () => {
    await page.click('#sign-out');
    await expect.poll(() => page.locator('#sign-in').isVisible(), SHOWN_WITHIN).toBe(true);
    expect(await storedToken()).toBeNull();
    await expect.poll(() => page.locator('#audit-note').textContent(), SHOWN_WITHIN).toContain('Sign in');

    // Expired two minutes ago, beyond the 30 s of clock tolerance.
    const sign = createSigner({ key: TEST_SECRET, header: { alg: 'HS256', typ: 'at+jwt' } });
    const expired = sign({ sub: 'dashboard-operator', scope: ADMIN, exp: Math.floor(Date.now() / 1000) - 120 });
    await page.fill('#token', expired);
    await page.click('#sign-in button[type="submit"]');
    await expect
      .poll(() => page.locator('#alert').textContent(), SHOWN_WITHIN)
      .toMatch(/Your token was refused \(.+\), so you are signed out/);
    expect(await storedToken()).toBeNull();
    expect(await page.locator('#sign-in').isVisible()).toBe(true);
    // Back to the anonymous view, still live.
    await expect.poll(() => page.locator('#feed').getAttribute('data-state'), SHOWN_WITHIN).toBe('live');
    expect(t.logs.join('\n')).not.toContain(expired);
    expect(pageErrors).toEqual([]);
  });
});
