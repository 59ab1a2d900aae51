/**
 * The operator's console (issue 34) in real headless Chromium, driven by playwright-core,
 * against the registry listening on a loopback port and a tool host behind it: the catalogue
 * paged with the registry's cursor, searched with its search, filtered, each row with the scope
 * rule, status and last-hour calls; a tool's page with its schemas, scopes, source and target,
 * usage and audit entries; Try it, answered and refused, audited as the console's; deprecating
 * from the page, with a field error first, and seeing it marked in `GET /` and `/mcp`; registering a tool
 * from the form (field errors at their fields, never a replacement) and editing one with
 * `If-Match` (a conflict shown when someone changed it meanwhile); deleting one from its page
 * after a confirmation, a stale `If-Match` shown as a conflict first; the kind filter walking
 * the registry's pages to find a tool past the first page it reads; and axe-core over
 * both pages with no serious or critical finding. Saves screenshots to .cache/, and to docs/
 * with UPDATE_SCREENSHOT=1.
 *
 * Needs Chromium (Debian's `chromium`, or CHROMIUM_PATH): without it the file is skipped with a
 * printed reason, and under CI=true it fails, as browser.process.test.ts does.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { connect, listAll } from '../mcp/support.js';
import { REPO_ROOT } from '../helpers/process.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
if (missing) {
  if (process.env['CI'] === 'true') throw new Error(`the console's browser test must run under CI=true, but there is ${missing}`);
  console.warn(`\n[dashboard] skipping the console's browser test: ${missing}\n`);
}

const SHOWN_WITHIN = { timeout: 10_000, interval: 100 };
/** Filler tools, so the catalogue has more than one page of 25. */
const FILLERS = 30;
/** axe-core's script, as its browser integrations inject it. */
const AXE_SOURCE = axe.source;

/** The tools' host: answers with what it was sent. */
function toolHost(): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(`done by ${req.url}: ${body}`)));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

interface AuditEntry {
  sub: string | null;
  action: string;
  target: string | null;
  outcome: string;
  status: number;
  detail: string | null;
}

describe.skipIf(missing !== undefined)('the operator’s console in Chromium (issue 34)', () => {
  let t: TestApp;
  let host: Server;
  let upstream: McpUpstream;
  let browser: Browser;
  let page: Page;
  let base: string;
  let admin: string;
  const pageErrors: string[] = [];

  const put = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.text()).toBe(201);
  };
  const audit = async (action: string): Promise<AuditEntry[]> => {
    const res = await fetch(`${base}/audit?action=${action}`, { headers: bearer(admin) });
    return ((await res.json()) as { entries: AuditEntry[] }).entries;
  };
  const rows = () => page.locator('#catalogue tbody tr');
  const row = (name: string) => page.locator(`#catalogue tbody tr[data-tool="${name}"]`);
  const cells = async (name: string) => (await row(name).locator('th, td').allTextContents()).map((s) => s.trim());
  /** axe-core over the page as it is now: its serious and critical findings. */
  const axeFindings = async () => {
    // Evaluated through the DevTools protocol, which the page's CSP does not govern.
    await page.evaluate(AXE_SOURCE);
    const { passes, violations } = (await page.evaluate(
      'axe.run(document).then((r) => ({ passes: r.passes.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) })) }))',
    )) as { passes: number; violations: { id: string; impact: string; nodes: string[] }[] };
    // It ran its rules over the page (labels, landmarks, contrast, names of links and buttons...).
    expect(passes).toBeGreaterThan(10);
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  };
  const screenshot = async (name: string) => {
    mkdirSync(join(REPO_ROOT, '.cache'), { recursive: true });
    const path = join(REPO_ROOT, '.cache', name);
    await page.screenshot({ path });
    if (process.env['UPDATE_SCREENSHOT'] === '1') copyFileSync(path, join(REPO_ROOT, 'docs', name));
  };

  beforeAll(async () => {
    host = await toolHost();
    const port = (host.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    admin = t.token(['registry:write'], { sub: 'console-operator' });
    const http = (name: string, description: string, scopes: string[], parameters: Record<string, unknown> = {}) => ({
      name,
      description,
      endpoint: `/${name}`,
      host: '127.0.0.1',
      port,
      scopes,
      parameters,
    });
    await put('/tools/calculator', { ...seed('calculator'), endpoint: '/calc', host: '127.0.0.1', port });
    await put(
      '/tools/pet_store',
      http('pet_store', 'Find and update pets', ['read:pets write:pets', 'api_key'], {
        species: { type: 'string', description: 'Which kind of pet' },
        count: { type: 'integer', description: 'How many' },
      }),
    );
    await put('/tool-services/joke-service', seed('joke-service'));
    await put('/tools/tell-joke', seed('tell-joke'));
    for (let i = 0; i < FILLERS; i++)
      await put(`/tools/filler_${String(i).padStart(2, '0')}`, http(`filler_${String(i).padStart(2, '0')}`, `Filler number ${i}`, []));
    // An upstream MCP server's tool, with a title, accepted from the review queue.
    upstream = await startMcpUpstream({
      tools: [
        {
          tool: {
            name: 'lookup',
            title: 'Dictionary lookup',
            description: 'Look a word up',
            inputSchema: { type: 'object', properties: { word: { type: 'string' } } },
          },
          handler: () => ({ content: [{ type: 'text', text: 'a meaning' }] }),
        },
      ],
    });
    await put('/mcp-servers/hub', { url: upstream.url, prefix: 'h_' });
    // The server's first sync puts its tool in the queue; expect.poll is for tests, not hooks.
    let pending: { tool: string; digest: string }[] = [];
    for (const deadline = Date.now() + SHOWN_WITHIN.timeout; pending.length === 0 && Date.now() < deadline;) {
      const res = await fetch(`${base}/mcp-servers/hub/pending`, { headers: bearer(admin) });
      pending = ((await res.json()) as { changes: { tool: string; digest: string }[] }).changes;
      if (pending.length === 0) await new Promise((resolve) => setTimeout(resolve, SHOWN_WITHIN.interval));
    }
    expect(pending.map((change) => change.tool)).toEqual(['h_lookup']);
    const accepted = await fetch(`${base}/mcp-servers/hub/accept`, {
      method: 'POST',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ changes: pending.map(({ tool, digest }) => ({ tool, digest })) }),
    });
    expect(accepted.status, await accepted.text()).toBe(200);
    // Last-hour calls, counted in /stats?window=1h.
    const agent = t.token(['calculator:use'], { sub: 'planner' });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/tools/calculator/invoke`, {
        method: 'POST',
        headers: { ...bearer(agent), 'content-type': 'application/json' },
        body: JSON.stringify({ expression: '1 + 1' }),
      });
      expect(res.status, await res.text()).toBe(200);
    }

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await (await browser.newContext({ viewport: { width: 1360, height: 900 }, locale: 'en-US', colorScheme: 'light' })).newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await upstream?.stop();
    host?.closeAllConnections();
    await new Promise((resolve) => host?.close(resolve));
  });

  it('shows an anonymous visitor the tools anonymous discovery shows, without sources', async () => {
    await page.goto(`${base}/dashboard/tools`);
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(25);
    // Anonymous visitors see every tool by default (ANONYMOUS_DISCOVERY=full), and its calls in /stats.
    expect(await cells('calculator')).toEqual(['calculator', '–', 'http', '–', 'calculator:use', 'active', '3']);
    expect(await page.locator('#f-source').isDisabled()).toBe(true);
    expect(await page.locator('#nav-tools').getAttribute('aria-current')).toBe('page');
    expect(pageErrors).toEqual([]);
  });

  it('signs an operator in, pages with the registry’s cursor, and shows each row’s rule, source and calls', async () => {
    // One rule on every page (sign-in.js): a paste with a space in it is no token, and a
    // leading "Bearer " (copied from a curl line) is dropped.
    await page.fill('#token', 'two words');
    await page.click('#sign-in button[type="submit"]');
    expect(await page.locator('#alert').textContent()).toBe('Paste a bearer token: one line, without spaces.');
    expect(await page.evaluate('document.activeElement?.id')).toBe('token');
    expect(await page.locator('#signed-in').isVisible()).toBe(false);
    await page.fill('#token', `Bearer ${admin}`);
    await page.click('#sign-in button[type="submit"]');
    await expect.poll(() => page.locator('#identity').textContent(), SHOWN_WITHIN).toContain('Signed in as console-operator');
    expect(await page.locator('#alert').isVisible()).toBe(false);
    expect(await page.evaluate('document.activeElement?.id')).toBe('sign-out');
    await expect
      .poll(() => cells('calculator'), SHOWN_WITHIN)
      .toEqual(['calculator', '–', 'http', 'registered by an operator', 'calculator:use', 'active', '3']);
    expect(await cells('filler_00')).toEqual(['filler_00', '–', 'http', 'registered by an operator', 'none needed', 'active', '0']);
    expect(await page.locator('#catalogue-summary').textContent()).toBe('Page 1: 25 tools.');
    await screenshot('console-catalogue.png');
    // The registry's own paging: the next page starts where the first ended, in name order.
    const firstPage = await rows().locator('th').allTextContents();
    await page.click('#page-next');
    await expect.poll(() => page.locator('#catalogue-summary').textContent(), SHOWN_WITHIN).toBe('Page 2: 9 tools, the last page.');
    const secondPage = await rows().locator('th').allTextContents();
    expect([...firstPage, ...secondPage]).toEqual([...firstPage, ...secondPage].toSorted());
    expect(new Set([...firstPage, ...secondPage]).size).toBe(FILLERS + 4);
    // The scope rule, alternatives and all, and the tool service as the source.
    expect(await cells('pet_store')).toEqual([
      'pet_store',
      '–',
      'http',
      'registered by an operator',
      '(read:pets AND write:pets) OR api_key',
      'active',
      '0',
    ]);
    expect((await cells('tell-joke')).slice(0, 4)).toEqual(['tell-joke', '–', 'tool-service', 'tool service joke-service']);
    // An upstream MCP server's tool: its title, and its server as its source.
    expect(await cells('h_lookup')).toEqual(['h_lookup', 'Dictionary lookup', 'mcp', 'MCP server hub', 'none needed', 'active', '0']);
    expect(await page.locator('#page-next').isDisabled()).toBe(true);
    await page.click('#page-prev');
    await expect.poll(() => page.locator('#catalogue-summary').textContent(), SHOWN_WITHIN).toBe('Page 1: 25 tools.');
    expect(await rows().locator('th').allTextContents()).toEqual(firstPage);
    expect(pageErrors).toEqual([]);
  });

  it('filters by scope (the registry’s), and by kind and source', async () => {
    await page.fill('#f-scope', 'api_key');
    await page.click('#filters button[type="submit"]');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['pet_store']);
    await page.fill('#f-scope', '');
    await page.selectOption('#f-limit', '100');
    await page.click('#filters button[type="submit"]');
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(FILLERS + 4);
    await page.selectOption('#f-kind', 'tool-service');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['tell-joke']);
    await page.selectOption('#f-kind', '');
    await page.selectOption('#f-source', 'tool-service:joke-service');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['tell-joke']);
    await page.selectOption('#f-source', 'mcp-server:hub');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['h_lookup']);
    await page.selectOption('#f-source', 'operator');
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(FILLERS + 2);
    await page.selectOption('#f-source', '');
    await page.selectOption('#f-limit', '25');
  });

  it('finds a tool with the registry’s search and opens its page', async () => {
    await page.fill('#q', 'calculations');
    await page.press('#q', 'Enter');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['calculator']);
    expect(await page.locator('#catalogue-summary').textContent()).toBe('1 best match.');
    expect(await axeFindings()).toEqual([]);

    await row('calculator').getByRole('link', { name: 'calculator' }).click();
    await page.waitForURL(`${base}/dashboard/tools/calculator`);
    await expect.poll(() => page.locator('#tool-status').textContent(), SHOWN_WITHIN).toContain('active');
    expect(await page.locator('#tool-title').textContent()).toBe('calculator');
    expect(await page.locator('#agent-facts').textContent()).toContain('Perform mathematical calculations');
    expect(await page.locator('#input-outline li').first().textContent()).toMatch(/^expression string required/);
    expect(JSON.parse((await page.locator('#input-json').textContent()) ?? '')).toMatchObject({ required: ['expression'] });
    await expect.poll(() => page.locator('#access-facts').textContent(), SHOWN_WITHIN).toContain('Anonymous visitorssee it');
    expect(await page.locator('#access-facts').textContent()).toContain('calculator:use');
    expect(await page.locator('#access-facts').textContent()).toContain('This tokenmay not call it');
    const port = (host.address() as AddressInfo).port;
    await expect.poll(() => page.locator('#source-facts').textContent(), SHOWN_WITHIN).toContain(`http://127.0.0.1:${port}/calc`);
    await expect
      .poll(() => page.locator('#usage tbody tr').first().locator('th, td').allTextContents(), SHOWN_WITHIN)
      .toEqual(['Last hour', '3', expect.stringMatching(/^\d/), expect.stringMatching(/^\d/), expect.stringMatching(/^\d/), '3 calls']);
    expect(await page.locator('#tool-audit tbody').textContent()).toContain('tool.put');
    expect(pageErrors).toEqual([]);
  });

  it('tries the tool, refused and answered, and the audit log records the console’s calls', async () => {
    // The operator's token holds the admin scope, not the tool's: refused, as an agent would be.
    await page.fill('#try-fields input', '6 * 7');
    await page.click('#try-form button[type="submit"]');
    await expect.poll(() => page.locator('#try-status').textContent(), SHOWN_WITHIN).toBe('403 TR_ERR_INSUFFICIENT_SCOPE');
    expect(await page.locator('#try-result-title').textContent()).toBe('Refused: the problem as the agent gets it');
    expect(JSON.parse((await page.locator('#try-body').textContent()) ?? '')).toMatchObject({
      status: 403,
      code: 'TR_ERR_INSUFFICIENT_SCOPE',
      detail: expect.stringContaining('calculator:use'),
    });
    await expect
      .poll(async () => (await audit('console.invoke'))[0], SHOWN_WITHIN)
      .toMatchObject({
        sub: 'console-operator',
        target: 'calculator',
        outcome: 'denied',
        status: 403,
      });
    // With a pasted agent token that holds the scope: the answer.
    await page.check('#as-agent');
    await page.fill('#agent-token', t.token(['calculator:use'], { sub: 'planner' }));
    await page.click('#try-form button[type="submit"]');
    await expect.poll(() => page.locator('#try-status').textContent(), SHOWN_WITHIN).toBe('200');
    expect(await page.locator('#try-result-title').textContent()).toBe('Answer');
    const answer = JSON.parse((await page.locator('#try-body').textContent()) ?? '') as { tool: string; result: unknown };
    expect(answer).toMatchObject({ tool: 'calculator', result: 'done by /calc: {"expression":"6 * 7"}' });
    expect(await page.locator('#try-time').textContent()).toMatch(/^\d[\d.,]* ms/);
    await expect
      .poll(async () => (await audit('console.invoke'))[0], SHOWN_WITHIN)
      .toMatchObject({
        sub: 'planner',
        target: 'calculator',
        outcome: 'ok',
        status: 200,
      });
    await page.check('#as-mine');
    // Calls without the console's header are audited as before: refusals only (the three answered in beforeAll are not).
    expect(await audit('tool.invoke')).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('deprecates the tool from its page, showing a field error first, and agents see it in GET / and /mcp', async () => {
    await page.fill('#dep-replacement', 'no_such_tool');
    await page.fill('#dep-reason', 'Use pet_store instead');
    await page.click('#deprecate');
    await expect.poll(() => page.locator('#dep-replacement-error').textContent(), SHOWN_WITHIN).toBe('no tool "no_such_tool"');
    expect(await page.locator('#dep-replacement').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate('document.activeElement?.id')).toBe('dep-replacement');
    expect(await page.locator('#deprecation-outcome').textContent()).toMatch(/^Refused \(400\): /);

    await page.fill('#dep-replacement', 'pet_store');
    await page.click('#deprecate');
    await expect.poll(() => page.locator('#tool-status .badge').textContent(), SHOWN_WITHIN).toBe('deprecated');
    expect(await page.locator('#tool-status').textContent()).toContain('use pet_store instead; Use pet_store instead');
    expect(await page.locator('#dep-replacement-error').isVisible()).toBe(false);
    const { tools } = (await (await fetch(`${base}/`, { headers: bearer(t.token(['calculator:use'], { sub: 'some-agent' })) })).json()) as {
      tools: { name: string; status: string; deprecation?: { replacement?: string; reason?: string } }[];
    };
    expect(tools.find((tool) => tool.name === 'calculator')).toMatchObject({
      status: 'deprecated',
      deprecation: { replacement: 'pet_store', reason: 'Use pet_store instead' },
    });
    // And over MCP, with the official SDK's client.
    const mcp = await connect(new URL(`${base}/mcp`), t.token(['calculator:use'], { sub: 'mcp-agent' }));
    try {
      const listed = (await listAll(mcp.client)).tools.find((tool) => tool.name === 'calculator');
      expect(listed?._meta?.['io.tool-registry/deprecation']).toMatchObject({ replacement: 'pet_store', reason: 'Use pet_store instead' });
    } finally {
      await mcp.close();
    }
    await expect.poll(() => page.locator('#tool-audit tbody').textContent(), SHOWN_WITHIN).toContain('tool.deprecate');
    await page.evaluate('window.scrollTo(0, 0)');
    await screenshot('console-tool.png');
    expect(await axeFindings()).toEqual([]);

    // And in the catalogue, filtered by status.
    await page.getByRole('link', { name: 'All tools' }).click();
    await page.selectOption('#f-status', 'deprecated');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['calculator']);
    expect((await cells('calculator'))[5]).toBe('deprecated');

    // Lifted from the page.
    await page.goto(`${base}/dashboard/tools/calculator`);
    await page.click('#undeprecate');
    await expect.poll(() => page.locator('#tool-status .badge').textContent(), SHOWN_WITHIN).toBe('active');
    expect(pageErrors).toEqual([]);
  });

  it('registers a tool from the form, showing the registry’s field errors first, and never replaces one', async () => {
    await page.goto(`${base}/dashboard/tools`);
    await expect.poll(() => page.locator('#register-panel').isVisible(), SHOWN_WITHIN).toBe(true);
    const port = (host.address() as AddressInfo).port;
    await page.fill('#reg-name', 'unit_converter');
    await page.fill('#reg-scopes', 'units:use\nunits:admin registry:write');
    await page.fill('#reg-rest', JSON.stringify({ host: '127.0.0.1', port: 'eighty', endpoint: '/convert', parameters: {} }));
    await page.click('#reg-save');
    // An empty description and a port that is no number: each under its own field.
    await expect.poll(() => page.locator('#reg-description-error').textContent(), SHOWN_WITHIN).toBe('must not be empty');
    expect(await page.locator('#reg-rest-error').textContent()).toMatch(/^port: /);
    expect(await page.locator('#reg-description').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate('document.activeElement?.id')).toBe('reg-description');
    expect(await page.locator('#reg-outcome').textContent()).toMatch(/^Refused \(400\): /);
    expect((await fetch(`${base}/tools/unit_converter`, { headers: bearer(admin) })).status).toBe(404);

    await page.fill('#reg-description', 'Convert between units');
    await page.fill('#reg-rest', JSON.stringify({ host: '127.0.0.1', port, endpoint: '/convert', parameters: {} }));
    await page.click('#reg-save');
    await expect.poll(() => page.locator('#reg-outcome').textContent(), SHOWN_WITHIN).toBe('Registered unit_converter.');
    expect(await page.locator('#reg-description-error').isVisible()).toBe(false);
    const record = (await (await fetch(`${base}/tools/unit_converter`, { headers: bearer(admin) })).json()) as {
      descriptor: { description: string; scopes: string[]; port: number };
    };
    expect(record.descriptor).toMatchObject({
      description: 'Convert between units',
      scopes: ['units:use', 'registry:write units:admin'],
      port,
    });
    // Again: a tool of that name exists, and the form never replaces it.
    await page.fill('#reg-description', 'Something else');
    await page.click('#reg-save');
    await expect
      .poll(() => page.locator('#reg-outcome').textContent(), SHOWN_WITHIN)
      .toMatch(/^Not registered: a tool named unit_converter exists already/);
    expect(
      ((await (await fetch(`${base}/tools/unit_converter`, { headers: bearer(admin) })).json()) as typeof record).descriptor.description,
    ).toBe('Convert between units');
    expect(await axeFindings()).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('edits a tool with If-Match, and shows the conflict when someone changed it meanwhile', async () => {
    await page.goto(`${base}/dashboard/tools/unit_converter`);
    await expect.poll(() => page.locator('#edit-description').inputValue(), SHOWN_WITHIN).toBe('Convert between units');
    expect(await page.locator('#edit-scopes').inputValue()).toBe('units:use\nregistry:write units:admin');
    // Another operator writes the tool after this page read it.
    const current = (await (await fetch(`${base}/tools/unit_converter`, { headers: bearer(admin) })).json()) as {
      descriptor: Record<string, unknown>;
    };
    const other = await fetch(`${base}/tools/unit_converter`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ ...current.descriptor, description: 'Convert units (metric and imperial)' }),
    });
    expect(other.status).toBe(200);
    await page.fill('#edit-description', 'Convert units, my version');
    await page.click('#edit-save');
    await expect
      .poll(() => page.locator('#edit-outcome').textContent(), SHOWN_WITHIN)
      .toMatch(/^Conflict: someone changed unit_converter after you began editing it, so nothing was saved/);
    expect(await page.evaluate('document.activeElement?.id')).toBe('edit-reread');
    const stored = async () =>
      ((await (await fetch(`${base}/tools/unit_converter`, { headers: bearer(admin) })).json()) as typeof current).descriptor[
        'description'
      ];
    expect(await stored()).toBe('Convert units (metric and imperial)');
    await screenshot('console-conflict.png');
    // Read again: their change, which this edit now starts from.
    await page.click('#edit-reread');
    await expect.poll(() => page.locator('#edit-description').inputValue(), SHOWN_WITHIN).toBe('Convert units (metric and imperial)');
    await page.fill('#edit-description', 'Convert units (metric, imperial and more)');
    await page.click('#edit-save');
    await expect.poll(stored, SHOWN_WITHIN).toBe('Convert units (metric, imperial and more)');
    await expect
      .poll(() => page.locator('#agent-facts').textContent(), SHOWN_WITHIN)
      .toContain('Convert units (metric, imperial and more)');
    expect(pageErrors).toEqual([]);
  });

  it('deletes a tool from its page after a confirmation, showing the conflict of a stale If-Match first', async () => {
    const name = 'filler_07';
    await page.goto(`${base}/dashboard/tools/${name}`);
    await expect.poll(() => page.locator('#delete-panel').isVisible(), SHOWN_WITHIN).toBe(true);
    // Another operator writes the tool after this page read it.
    const current = (await (await fetch(`${base}/tools/${name}`, { headers: bearer(admin) })).json()) as {
      descriptor: Record<string, unknown>;
    };
    const other = await fetch(`${base}/tools/${name}`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ ...current.descriptor, description: 'Filler, changed by someone else' }),
    });
    expect(other.status).toBe(200);
    // The first button only asks; the second, focused, acts.
    await page.click(`#delete-box button[aria-label="Delete tool ${name}"]`);
    const really = page.getByRole('button', { name: `Really delete ${name}` });
    expect(await really.isVisible()).toBe(true);
    expect(await page.evaluate('document.activeElement?.textContent')).toBe(`Really delete ${name}`);
    expect(await axeFindings()).toEqual([]);
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#delete-outcome').textContent(), SHOWN_WITHIN)
      .toMatch(new RegExp(`^Conflict: someone changed ${name} after this page read it, so nothing was deleted`));
    expect(await page.evaluate('document.activeElement?.id')).toBe('delete-reread');
    expect((await fetch(`${base}/tools/${name}`, { headers: bearer(admin) })).status).toBe(200);
    // Read again, then delete from the keyboard: back on the catalogue, which says so.
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#agent-facts').textContent(), SHOWN_WITHIN).toContain('Filler, changed by someone else');
    await page.focus(`#delete-box button[aria-label="Delete tool ${name}"]`);
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/dashboard/tools`, SHOWN_WITHIN);
    await expect.poll(() => page.locator('#notice').textContent(), SHOWN_WITHIN).toBe(`Deleted ${name}.`);
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(25);
    expect(await row(name).count()).toBe(0);
    const listed = (await (await fetch(`${base}/`, { headers: bearer(admin) })).json()) as { tools: { name: string }[] };
    expect(listed.tools.map((tool) => tool.name)).not.toContain(name);
    expect(listed.tools.map((tool) => tool.name)).toContain('filler_08');
    expect((await audit('tool.delete'))[0]).toMatchObject({ sub: 'console-operator', target: name, outcome: 'ok' });
    // A tool its MCP server writes has no delete button.
    await page.goto(`${base}/dashboard/tools/h_lookup`);
    await expect.poll(() => page.locator('#source-facts').textContent(), SHOWN_WITHIN).toContain('MCP server at');
    expect(await page.locator('#delete-panel').isVisible()).toBe(false);
    expect(pageErrors).toEqual([]);
  });

  it('is usable from the keyboard, with landmarks and labels', async () => {
    await page.goto(`${base}/dashboard/tools`);
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(25);
    await expect.poll(() => page.locator('#register-panel').isVisible(), SHOWN_WITHIN).toBe(true);
    const reached: string[] = [];
    for (let i = 0; i < 9; i++) {
      await page.keyboard.press('Tab');
      reached.push(String(await page.evaluate('document.activeElement?.id || document.activeElement?.textContent?.trim()')));
    }
    expect(reached).toEqual(['Skip to the content', 'Status', 'nav-tools', 'Sources', 'sign-out', 'q', 'f-scope', 'f-kind', 'f-source']);
    expect(await page.locator('main, header, nav').count()).toBeGreaterThanOrEqual(3);
    expect(await axeFindings()).toEqual([]);
    // The dark scheme's colours too.
    await page.emulateMedia({ colorScheme: 'dark' });
    expect(await axeFindings()).toEqual([]);
    await page.goto(`${base}/dashboard/tools/h_lookup`);
    await expect.poll(() => page.locator('#source-facts').textContent(), SHOWN_WITHIN).toContain(`MCP server at ${upstream.url}`);
    // A tool its server writes is not edited here.
    expect(await page.locator('#edit-panel').isVisible()).toBe(false);
    expect(await axeFindings()).toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
    expect(pageErrors).toEqual([]);
  });
  it('filters by kind across the registry’s pages, finding a tool past the first page it reads', async () => {
    const port = (host.address() as AddressInfo).port;
    // More than one of the console's walking pages (500) of http tools, and a message-bus tool after them.
    const BULK = 520;
    const names = Array.from({ length: BULK }, (_, i) => `zz_bulk_${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 20)
      await Promise.all(
        names
          .slice(i, i + 20)
          .map((name) =>
            put(`/tools/${name}`, { name, description: 'Bulk', endpoint: `/${name}`, host: '127.0.0.1', port, parameters: {} }),
          ),
      );
    await put('/tools/zzz_joke', { ...seed('tell-joke'), name: 'zzz_joke' });
    const all = ((await (await fetch(`${base}/?limit=1000`, { headers: bearer(admin) })).json()) as { tools: unknown[] }).tools.length;
    expect(all).toBeGreaterThan(500);

    await page.goto(`${base}/dashboard/tools`);
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(25);
    await page.selectOption('#f-kind', 'tool-service');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['tell-joke', 'zzz_joke']);
    expect(await page.locator('#catalogue-summary').textContent()).toBe(
      `2 tools match the kind, source and status filters; searched ${all.toLocaleString('en-US')} tools, to the end.`,
    );
    expect(await page.locator('#page-next').isDisabled()).toBe(true);
    // With the source filter too (each candidate's record read): the tool service's tools.
    await page.selectOption('#f-source', 'tool-service:joke-service');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(['tell-joke', 'zzz_joke']);

    // A page of matches that ends inside a page the console read: more starts after its last row.
    await page.selectOption('#f-source', '');
    await page.selectOption('#f-kind', 'http');
    await expect.poll(() => rows().count(), SHOWN_WITHIN).toBe(25);
    const first = await rows().locator('th').allTextContents();
    expect(await page.locator('#catalogue-summary').textContent()).toMatch(
      /^25 tools match the kind, source and status filters; searched \d+ tools, more after them\.$/,
    );
    expect(await page.locator('#page-next').textContent()).toBe('More matches');
    await page.click('#page-next');
    await expect.poll(() => page.locator('#catalogue-summary').textContent(), SHOWN_WITHIN).toMatch(/^Page 2: 25 tools match/);
    const second = await rows().locator('th').allTextContents();
    expect(second[0]! > first.at(-1)!).toBe(true);
    expect([...first, ...second]).toEqual([...first, ...second].toSorted());
    await page.click('#page-prev');
    await expect.poll(() => rows().locator('th').allTextContents(), SHOWN_WITHIN).toEqual(first);
    // With a search, the filters narrow its results (up to 1,000 asked for).
    await page.fill('#q', 'bulk');
    await page.press('#q', 'Enter');
    await expect
      .poll(() => page.locator('#catalogue-summary').textContent(), SHOWN_WITHIN)
      .toBe(`${BULK} best matches, ${BULK} of them after the kind, source and status filters, the first 25 shown.`);
    expect(await rows().count()).toBe(25);
    await page.selectOption('#f-kind', 'tool-service');
    await expect
      .poll(() => page.locator('#catalogue-summary').textContent(), SHOWN_WITHIN)
      .toBe(`${BULK} best matches, 0 of them after the kind, source and status filters.`);
    expect(await rows().count()).toBe(0);
    await page.fill('#q', '');
    await page.selectOption('#f-kind', '');
    await expect.poll(() => page.locator('#catalogue-summary').textContent(), SHOWN_WITHIN).toBe('Page 1: 25 tools.');
    expect(await axeFindings()).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
