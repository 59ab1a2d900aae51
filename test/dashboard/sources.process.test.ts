/**
 * The console's sources and review page (issue 34) in real headless Chromium, driven by
 * playwright-core, against the registry listening on a loopback port, a real SDK MCP server
 * upstream and an OpenAPI document served from loopback: an MCP server registered from the
 * form, its tool and then its changed description accepted from the page and served to agents
 * (`GET /`), a change that moved after the page read it refused with the 409's detail; an
 * OpenAPI source registered from its documentUrl, its document changed, read again from the page
 * and the change accepted; sources registered with bad values, each refusal shown at the field
 * its path names; a tool service edited from its row with `If-Match` (a bad value shown at its
 * field, and a stale tag shown as the conflict, read again and saved); an OpenAPI source, an
 * MCP server and a tool service deleted after a
 * confirmation (their tools gone), a tool service in use refused with the 409 shown; the last hour's usage still shown after a reload of the console and after a
 * restart of the registry; axe-core over the page with no serious or critical finding. Saves
 * screenshots (the page with field errors, a tool service's edit conflict) to .cache/, and to
 * docs/ with UPDATE_SCREENSHOT=1.
 *
 * Needs Chromium (Debian's `chromium`, or CHROMIUM_PATH): without it the file is skipped with a
 * printed reason, and under CI=true it fails, as browser.process.test.ts does.
 */
import { copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';
import { REPO_ROOT } from '../helpers/process.js';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const missing = existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
if (missing) {
  if (process.env['CI'] === 'true') throw new Error(`the sources page's browser test must run under CI=true, but there is ${missing}`);
  console.warn(`\n[dashboard] skipping the sources page's browser test: ${missing}\n`);
}

const SHOWN_WITHIN = { timeout: 10_000, interval: 100 };
const HOSTILE = 'Look a word up. <img src=x id=injected>';

const lookup: UpstreamToolDef = {
  tool: {
    name: 'lookup',
    description: HOSTILE,
    inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  },
  handler: () => ({ content: [{ type: 'text', text: 'a meaning' }] }),
};

/** An OpenAPI document of one operation whose description the test sets, served from loopback. */
async function documentServer() {
  let description = 'First text.';
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        openapi: '3.1.0',
        info: { title: 'Notes API', version: description === 'First text.' ? '1' : '2' },
        servers: [{ url: 'https://api.example.com' }],
        paths: { '/note': { get: { operationId: 'note', description, responses: { '200': { description: 'ok' } } } } },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`,
    describe: (text: string) => void (description = text),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The tools' host: answers every call. */
function toolHost(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('"done"'));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe.skipIf(missing !== undefined)('the console’s sources and review page in Chromium (issue 34)', () => {
  let t: TestApp;
  let upstream: McpUpstream;
  let docs: Awaited<ReturnType<typeof documentServer>>;
  let host: Server;
  let browser: Browser;
  let page: Page;
  let base: string;
  let admin: string;
  const pageErrors: string[] = [];

  const listen = async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  };
  const pending = async (kind: string, id: string): Promise<{ tool: string; digest: string }[]> => {
    const res = await fetch(`${base}/${kind}/${id}/pending`, { headers: bearer(admin) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { changes: { tool: string; digest: string }[] }).changes;
  };
  /** What an agent is served: the description of the named tool in `GET /`, if listed. */
  const served = async (name: string) => {
    const res = await fetch(`${base}/`, { headers: bearer(t.token([], { sub: 'some-agent' })) });
    const { tools } = (await res.json()) as { tools: { name: string; description: string }[] };
    return tools.find((tool) => tool.name === name)?.description;
  };
  const item = (tool: string) => page.locator(`#pending-queue li[data-tool="${tool}"]`);
  const outcome = () => page.locator('#review-outcome').textContent();
  const focusedId = () => page.evaluate('document.activeElement?.id');
  /** Saves a screenshot of the whole page, or of one part of it, to .cache/, and to docs/ with UPDATE_SCREENSHOT=1. */
  const screenshot = async (name: string, of: Page | Locator) => {
    mkdirSync(join(REPO_ROOT, '.cache'), { recursive: true });
    const shot = join(REPO_ROOT, '.cache', name);
    await (of === page ? page.screenshot({ path: shot, fullPage: true }) : of.screenshot({ path: shot }));
    if (process.env['UPDATE_SCREENSHOT'] === '1') copyFileSync(shot, join(REPO_ROOT, 'docs', name));
  };
  const axeFindings = async () => {
    // Evaluated through the DevTools protocol, which the page's CSP does not govern.
    await page.evaluate(axe.source);
    const { passes, violations } = (await page.evaluate(
      'axe.run(document).then((r) => ({ passes: r.passes.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) })) }))',
    )) as { passes: number; violations: { id: string; impact: string; nodes: string[] }[] };
    expect(passes).toBeGreaterThan(10);
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  };

  beforeAll(async () => {
    upstream = await startMcpUpstream({ tools: [lookup] });
    docs = await documentServer();
    host = await toolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    await listen();
    admin = t.token(['registry:write'], { sub: 'source-operator' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await (await browser.newContext({ viewport: { width: 1360, height: 900 }, locale: 'en-US', colorScheme: 'light' })).newPage();
    page.on('pageerror', (err) => pageErrors.push(err.message));
    // Script errors and CSP violations; refused requests (the 409 and 400s below) are logged too, and expected.
    page.on('console', (message) => {
      if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await upstream?.stop();
    await docs?.close();
    host?.closeAllConnections();
    await new Promise((resolve) => host?.close(resolve));
  });

  it('shows a visitor and a non-admin why there is nothing to see', async () => {
    await page.goto(`${base}/dashboard/sources`);
    await expect
      .poll(() => page.locator('#sources-note').textContent(), SHOWN_WITHIN)
      .toMatch(/^Sign in with a token that has the admin scope/);
    expect(await page.locator('#mcp-panel').isVisible()).toBe(false);
    expect(await page.locator('#register-sources').isVisible()).toBe(false);
    // From the keyboard: the skip link, the console's pages, then signing in.
    const reached: string[] = [];
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab');
      reached.push(String(await page.evaluate('document.activeElement?.id || document.activeElement?.textContent?.trim()')));
    }
    expect(reached).toEqual(['Skip to the content', 'Status', 'nav-tools', 'nav-sources', 'token', 'Sign in']);
    await page.fill('#token', t.token(['reader:use'], { sub: 'reader' }));
    await page.click('#sign-in button[type="submit"]');
    await expect
      .poll(() => page.locator('#sources-note').textContent(), SHOWN_WITHIN)
      .toMatch(/^This token may not read the sources \(403: /);
    expect(await page.locator('#register-sources').isVisible()).toBe(false);
    await page.click('#sign-out');
    expect(pageErrors).toEqual([]);
  });

  it('registers an MCP server from the form, accepts its tool and then its changed description, and agents are served them', async () => {
    await page.fill('#token', admin);
    await page.click('#sign-in button[type="submit"]');
    await expect.poll(() => page.locator('#queue-note').textContent(), SHOWN_WITHIN).toBe('No change of an upstream waits for review.');
    await page.fill('#mcp-id', 'hub');
    await page.fill('#mcp-url', upstream.url);
    await page.fill('#mcp-prefix', 'h_');
    await page.fill('#mcp-refreshIntervalS', '600');
    await page.click('#mcp-save');
    await expect.poll(() => page.locator('#mcp-outcome').textContent(), SHOWN_WITHIN).toBe('Registered the MCP server hub.');
    await expect.poll(async () => (await pending('mcp-servers', 'hub')).length, SHOWN_WITHIN).toBe(1);
    expect(await served('h_lookup')).toBeUndefined();

    // The server's row, with its state and counts, and its change in the queue.
    await page.reload();
    const server = page.locator('#mcp-servers tr[data-source="hub"]');
    await expect
      .poll(async () => (await server.locator('th, td').allTextContents()).slice(0, 6), SHOWN_WITHIN)
      .toEqual(['hub', upstream.url, 'connected', '–', '0', '1']);
    // The interval, and when the next refresh is due while the server is connected.
    expect(await server.locator('td').nth(6).textContent()).toMatch(/^every 600 s, next .+$/);
    const record = (await (await fetch(`${base}/mcp-servers/hub`, { headers: bearer(admin) })).json()) as { descriptor: unknown };
    expect(record.descriptor).toMatchObject({
      url: upstream.url,
      prefix: 'h_',
      refreshIntervalS: 600,
      policy: 'review',
    });
    expect(await item('h_lookup').locator('.badge').textContent()).toBe('added');
    expect(await item('h_lookup').locator('dt').allTextContents()).toEqual(['/description added', '/inputSchema added']);
    expect(await item('h_lookup').locator('dd ins').first().textContent()).toBe(`New: ${HOSTILE}`);
    expect(await page.locator('#injected').count()).toBe(0);
    await page.getByRole('button', { name: 'Accept h_lookup from hub' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toMatch(/^Accepted h_lookup from hub: agents are served sha256:/);
    await expect.poll(() => item('h_lookup').count(), SHOWN_WITHIN).toBe(0);
    await expect.poll(focusedId, SHOWN_WITHIN).toBe('queue-title');
    expect(await served('h_lookup')).toBe(HOSTILE);

    // A changed description: old and new, accepted with the keyboard, and agents get the new one.
    lookup.tool.description = 'Look a word up in the big dictionary.';
    await upstream.listChanged();
    await expect.poll(async () => (await pending('mcp-servers', 'hub')).length, SHOWN_WITHIN).toBe(1);
    await page.reload();
    await expect.poll(() => item('h_lookup').locator('.badge').textContent(), SHOWN_WITHIN).toBe('changed');
    expect(await item('h_lookup').locator('dt').allTextContents()).toEqual(['/description changed']);
    expect(await item('h_lookup').locator('dd del').textContent()).toBe(`Old: ${HOSTILE}`);
    expect(await item('h_lookup').locator('dd ins').textContent()).toBe('New: Look a word up in the big dictionary.');
    await page.getByRole('button', { name: 'Accept h_lookup from hub' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(outcome, SHOWN_WITHIN).toMatch(/^Accepted h_lookup from hub/);
    expect(await served('h_lookup')).toBe('Look a word up in the big dictionary.');
    expect(pageErrors).toEqual([]);
  });

  it('shows the 409 when a change moved after the page read it, and reads the queue again', async () => {
    lookup.tool.description = 'Version three.';
    await upstream.listChanged();
    await expect.poll(async () => (await pending('mcp-servers', 'hub')).length, SHOWN_WITHIN).toBe(1);
    await page.reload();
    await expect.poll(() => item('h_lookup').count(), SHOWN_WITHIN).toBe(1);
    const shown = await item('h_lookup').locator('.meta code.digest').first().getAttribute('title');
    lookup.tool.description = 'Version four.';
    await upstream.listChanged();
    await expect.poll(async () => (await pending('mcp-servers', 'hub'))[0]?.digest, SHOWN_WITHIN).not.toBe(shown);
    await page.getByRole('button', { name: 'Accept h_lookup from hub' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toMatch(/^Not accepted \(409\): cannot accept: the pending version of "h_lookup" is sha256:/);
    expect(await page.locator('#review-outcome').getAttribute('data-outcome')).toBe('refused');
    await expect.poll(() => item('h_lookup').textContent(), SHOWN_WITHIN).toContain('Version four.');
    expect(await served('h_lookup')).toBe('Look a word up in the big dictionary.');
    await page.getByRole('button', { name: 'Reject h_lookup from hub' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toBe('Rejected h_lookup from hub: agents keep the version they are served.');
    expect(pageErrors).toEqual([]);
  });

  it('registers an OpenAPI source from its documentUrl, reads it again from the page, and accepts the change', async () => {
    await page.fill('#oas-id', 'notes');
    await page.fill('#oas-prefix', 'n_');
    await page.fill('#oas-documentUrl', docs.url);
    await page.click('#oas-save');
    await expect.poll(() => page.locator('#oas-outcome').textContent(), SHOWN_WITHIN).toBe('Registered the OpenAPI source notes.');
    const source = page.locator('#openapi-sources tr[data-source="notes"]');
    await expect.poll(async () => (await source.locator('th, td').allTextContents())[0], SHOWN_WITHIN).toBe('notes');
    const cells = await source.locator('th, td').allTextContents();
    expect(cells.slice(0, 3)).toEqual(['notes', 'Notes API 1', '1']);
    expect(cells[4]).toBe('–');
    expect(cells[5]).not.toBe('–');
    expect(await served('n_note')).toContain('First text.');

    docs.describe('Second text.');
    await page.getByRole('button', { name: 'Read again: notes' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toBe('Read notes again: 0 written, 0 removed, 1 waiting for review, 0 unchanged.');
    await expect.poll(focusedId, SHOWN_WITHIN).toBe('openapi-title');
    await expect.poll(() => item('n_note').count(), SHOWN_WITHIN).toBe(1);
    expect(await item('n_note').locator('.meta').textContent()).toContain('OpenAPI source notes, operation ');
    expect(await item('n_note').locator('dd ins').first().textContent()).toContain('Second text.');
    expect(await served('n_note')).toContain('First text.');
    await page.getByRole('button', { name: 'Accept n_note from notes' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toMatch(/^Accepted n_note from notes/);
    expect(await served('n_note')).toContain('Second text.');
    // The table is read again after the write: nothing pending.
    await expect.poll(() => source.locator('td').nth(5).textContent(), SHOWN_WITHIN).toBe('0');
    expect(pageErrors).toEqual([]);
  });

  it('registers an OpenAPI source from a pasted document and a tool service, and shows a server that is down with its error', async () => {
    const document = JSON.stringify({
      openapi: '3.1.0',
      info: { title: 'Pasted API', version: '7' },
      servers: [{ url: 'https://pasted.example.com' }],
      paths: { '/ping': { get: { operationId: 'ping', description: 'Pings.', responses: { '200': { description: 'ok' } } } } },
    });
    await page.fill('#oas-id', 'pasted');
    await page.fill('#oas-prefix', 'p_');
    await page.fill('#oas-documentUrl', '');
    await page.fill('#oas-document', document);
    await page.click('#oas-save');
    await expect.poll(() => page.locator('#oas-outcome').textContent(), SHOWN_WITHIN).toBe('Registered the OpenAPI source pasted.');
    const source = page.locator('#openapi-sources tr[data-source="pasted"]');
    await expect
      .poll(async () => (await source.locator('th, td').allTextContents()).slice(0, 3), SHOWN_WITHIN)
      .toEqual(['pasted', 'Pasted API 7', '1']);
    // A pasted document has nothing to read again.
    expect(await page.getByRole('button', { name: 'Read again: pasted' }).isDisabled()).toBe(true);
    expect(await served('p_ping')).toContain('Pings.');

    await page.fill('#svc-id', 'jokes');
    await page.fill('#svc-topic', 'jokes');
    await page.fill('#svc-config-params', 'style\nlanguage');
    await page.click('#svc-save');
    await expect.poll(() => page.locator('#svc-outcome').textContent(), SHOWN_WITHIN).toBe('Registered the tool service jokes.');
    const service = await fetch(`${base}/tool-services/jokes`, { headers: bearer(admin) });
    expect(service.status).toBe(200);
    expect(JSON.stringify(await service.json())).toContain('language');

    // Nothing listens on the port: the server is shown down, with the error of its last attempt.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const put = await fetch(`${base}/mcp-servers/gone`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${port}/mcp`, prefix: 'g_' }),
    });
    expect(put.status, await put.text()).toBe(201);
    const gone = page.locator('#mcp-servers tr[data-source="gone"]');
    await expect
      .poll(async () => {
        await page.reload();
        await gone.waitFor();
        return (await gone.locator('td').allTextContents()).slice(1, 3);
      }, SHOWN_WITHIN)
      .toEqual(['down', expect.stringMatching(/\S/)]);
    expect(await gone.locator('td').nth(2).textContent()).not.toBe('–');
    expect(pageErrors).toEqual([]);
  });

  it('shows each refusal of a source with a bad value at the field its path names', async () => {
    await page.fill('#mcp-id', 'bad');
    await page.fill('#mcp-url', 'not a url');
    await page.fill('#mcp-prefix', '');
    await page.click('#mcp-save');
    await expect.poll(() => page.locator('#mcp-outcome').textContent(), SHOWN_WITHIN).toMatch(/^Refused \(400\): /);
    expect(await page.locator('#mcp-url-error').isVisible()).toBe(true);
    expect(await page.locator('#mcp-url').getAttribute('aria-invalid')).toBe('true');
    expect(await focusedId()).toBe('mcp-url');

    await page.fill('#oas-id', 'worse');
    await page.fill('#oas-prefix', 'not a prefix!');
    await page.click('#oas-save');
    await expect.poll(() => page.locator('#oas-outcome').textContent(), SHOWN_WITHIN).toMatch(/^Refused \(400\): /);
    expect(await page.locator('#oas-prefix-error').isVisible()).toBe(true);
    expect(await focusedId()).toBe('oas-prefix');
    // Nothing was written.
    expect((await fetch(`${base}/mcp-servers/bad`, { headers: bearer(admin) })).status).toBe(404);

    await page.fill('#svc-id', 'x'.repeat(200));
    await page.click('#svc-save');
    await expect.poll(() => page.locator('#svc-outcome').textContent(), SHOWN_WITHIN).toMatch(/^Refused \(400\): /);
    // The id is the path's: its refusal is shown at the id field too.
    expect(await page.locator('#svc-id-error').textContent()).toMatch(/^must be 1 to 128 characters/);
    expect(await focusedId()).toBe('svc-id');

    expect(await axeFindings()).toEqual([]);
    await screenshot('console-sources.png', page);
    expect(pageErrors).toEqual([]);
  });

  it('edits a tool service from its row with If-Match, a bad value shown at its field, and shows the conflict when someone changed it meanwhile', async () => {
    const stored = async () => {
      const res = await fetch(`${base}/tool-services/jokes`, { headers: bearer(admin) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { descriptor: { 'config-params': { name: string; required: boolean }[] } }).descriptor;
    };
    await page.reload();
    const jokes = page.locator('#tool-services tr[data-source="jokes"]');
    await jokes.waitFor(SHOWN_WITHIN);
    expect(await jokes.locator('td').nth(2).textContent()).toBe('style, language');
    expect(await page.locator('#service-edit-box').isVisible()).toBe(false);
    await page.getByRole('button', { name: 'Edit jokes' }).click();
    await expect.poll(() => page.locator('#svc-edit-request-queue').inputValue(), SHOWN_WITHIN).toBe('non-persistent://tg/request/jokes');
    expect(await page.locator('#svc-edit-form-title').textContent()).toBe('Edit the tool service jokes');
    expect(await page.locator('#svc-edit-response-queue').inputValue()).toBe('non-persistent://tg/response/jokes');
    expect(await page.locator('#svc-edit-config-params').inputValue()).toBe('style\nlanguage');
    expect(await page.locator('#svc-edit-topic').inputValue()).toBe('');
    // The form's first field has focus; the id is the path's, not a field.
    expect(await focusedId()).toBe('svc-edit-topic');
    expect(await page.locator('#svc-edit-id').count()).toBe(0);

    // A bad queue: refused, under its field, and nothing written.
    const before = await stored();
    await page.fill('#svc-edit-response-queue', 'not a topic');
    await page.click('#svc-edit-save');
    await expect.poll(() => page.locator('#svc-edit-outcome').textContent(), SHOWN_WITHIN).toMatch(/^Refused \(400\): /);
    expect(await page.locator('#svc-edit-response-queue-error').isVisible()).toBe(true);
    expect(await page.locator('#svc-edit-response-queue').getAttribute('aria-invalid')).toBe('true');
    expect(await focusedId()).toBe('svc-edit-response-queue');
    expect(await stored()).toEqual(before);

    // Saved with the entity tag read when the form opened; the row shows it after.
    await page.fill('#svc-edit-response-queue', 'non-persistent://tg/response/jokes');
    await page.fill('#svc-edit-config-params', 'style\nlanguage\naudience required');
    await page.click('#svc-edit-save');
    await expect.poll(() => page.locator('#svc-edit-outcome').textContent(), SHOWN_WITHIN).toBe('Saved the tool service jokes.');
    expect(await page.locator('#svc-edit-response-queue-error').isVisible()).toBe(false);
    expect((await stored())['config-params']).toEqual([
      { name: 'style', required: false },
      { name: 'language', required: false },
      { name: 'audience', required: true },
    ]);
    await expect.poll(() => jokes.locator('td').nth(2).textContent(), SHOWN_WITHIN).toBe('style, language, audience (required)');
    const audited = (await (await fetch(`${base}/audit?action=tool-service.put`, { headers: bearer(admin) })).json()) as {
      entries: { sub: string; target: string; status: number }[];
    };
    expect(audited.entries).toContainEqual(expect.objectContaining({ sub: 'source-operator', target: 'jokes', status: 200 }));

    // Another operator writes the service after this save: the form's next save is refused with the conflict.
    const other = await fetch(`${base}/tool-services/jokes`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'jokes', 'config-params': ['style', 'language', 'tone'] }),
    });
    expect(other.status, await other.text()).toBe(200);
    await page.fill('#svc-edit-config-params', 'style\nlanguage\nmy_version');
    await page.click('#svc-edit-save');
    await expect
      .poll(() => page.locator('#svc-edit-outcome').textContent(), SHOWN_WITHIN)
      .toMatch(/^Conflict: someone changed jokes after you began editing it, so nothing was saved \(tool service "jokes" has changed: /);
    expect(await page.locator('#svc-edit-outcome').textContent()).toMatch(
      /Read the tool service again to see their change, then edit that\.$/,
    );
    expect(await page.locator('#svc-edit-outcome').getAttribute('data-outcome')).toBe('refused');
    expect(await focusedId()).toBe('svc-edit-reread');
    expect((await stored())['config-params'].map((p) => p.name)).toEqual(['style', 'language', 'tone']);
    expect(await axeFindings()).toEqual([]);
    await screenshot('console-service-conflict.png', page.locator('#services-panel'));

    // Read again, from the keyboard: their version, which the next save starts from.
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#svc-edit-config-params').inputValue(), SHOWN_WITHIN).toBe('style\nlanguage\ntone');
    expect(await page.locator('#svc-edit-reread').isVisible()).toBe(false);
    await page.fill('#svc-edit-config-params', 'style\nlanguage');
    await page.click('#svc-edit-save');
    await expect.poll(() => page.locator('#svc-edit-outcome').textContent(), SHOWN_WITHIN).toBe('Saved the tool service jokes.');
    expect((await stored())['config-params'].map((p) => p.name)).toEqual(['style', 'language']);
    // Closed, focus goes back to the row's button.
    await page.click('#svc-edit-close');
    expect(await page.locator('#service-edit-box').isVisible()).toBe(false);
    expect(await page.evaluate('document.activeElement?.getAttribute("aria-label")')).toBe('Edit jokes');
    expect(pageErrors).toEqual([]);
  });

  it('deletes an OpenAPI source, an MCP server and a tool service after a confirmation, and shows the 409 of a service in use', async () => {
    // A message-bus tool names the tool service jokes: the registry refuses to delete it.
    const tool = await fetch(`${base}/tools/joke_teller`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'joke_teller', description: 'Tells a joke', type: 'tool-service', service: 'jokes', arguments: [] }),
    });
    expect(tool.status, await tool.text()).toBe(201);
    await page.reload();
    const pasted = page.locator('#openapi-sources tr[data-source="pasted"]');
    await pasted.waitFor(SHOWN_WITHIN);
    expect(await served('p_ping')).toContain('Pings.');

    // The first button only asks; the second, focused, deletes.
    await page.getByRole('button', { name: 'Delete pasted' }).click();
    const really = page.getByRole('button', { name: 'Really delete pasted' });
    expect(await really.isVisible()).toBe(true);
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Really delete pasted');
    expect(await axeFindings()).toEqual([]);
    // "Keep it" takes the question back.
    await page.getByRole('button', { name: 'Keep it' }).click();
    expect(await really.isVisible()).toBe(false);
    expect((await fetch(`${base}/openapi-sources/pasted`, { headers: bearer(admin) })).status).toBe(200);
    await page.getByRole('button', { name: 'Delete pasted' }).click();
    await page.keyboard.press('Enter');
    await expect.poll(outcome, SHOWN_WITHIN).toBe('Deleted the OpenAPI source pasted and its tools.');
    await expect.poll(() => pasted.count(), SHOWN_WITHIN).toBe(0);
    expect(await focusedId()).toBe('openapi-title');
    expect((await fetch(`${base}/openapi-sources/pasted`, { headers: bearer(admin) })).status).toBe(404);
    expect(await served('p_ping')).toBeUndefined();

    const gone = page.locator('#mcp-servers tr[data-source="gone"]');
    expect(await gone.count()).toBe(1);
    await page.getByRole('button', { name: 'Delete gone' }).click();
    await page.getByRole('button', { name: 'Really delete gone' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toBe('Deleted the MCP server gone and its tools.');
    await expect.poll(() => gone.count(), SHOWN_WITHIN).toBe(0);
    expect((await fetch(`${base}/mcp-servers/gone`, { headers: bearer(admin) })).status).toBe(404);

    const jokes = page.locator('#tool-services tr[data-source="jokes"]');
    expect((await jokes.locator('td').allTextContents()).slice(0, 2)).toEqual([
      'non-persistent://tg/request/jokes',
      'non-persistent://tg/response/jokes',
    ]);
    await page.getByRole('button', { name: 'Delete jokes' }).click();
    await page.getByRole('button', { name: 'Really delete jokes' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toMatch(/^Not deleted \(409\): the tool service jokes: \S/);
    expect(await jokes.count()).toBe(1);
    expect((await fetch(`${base}/tool-services/jokes`, { headers: bearer(admin) })).status).toBe(200);
    // Its tool deleted, the service can go; but not in a version the page has not shown: another
    // operator's edit after the list was read keeps it, and the list is read again.
    expect((await fetch(`${base}/tools/joke_teller`, { method: 'DELETE', headers: bearer(admin) })).status).toBe(200);
    const edited = await fetch(`${base}/tool-services/jokes`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'jokes', 'config-params': ['style', 'mood'] }),
    });
    expect(edited.status, await edited.text()).toBe(200);
    expect(await jokes.locator('td').nth(2).textContent()).not.toContain('mood');
    await page.getByRole('button', { name: 'Delete jokes' }).click();
    await page.getByRole('button', { name: 'Really delete jokes' }).click();
    await expect
      .poll(outcome, SHOWN_WITHIN)
      .toBe('Not deleted: the tool service jokes changed after this page read it; the list now shows it as it is.');
    expect((await fetch(`${base}/tool-services/jokes`, { headers: bearer(admin) })).status).toBe(200);
    await expect.poll(() => jokes.locator('td').nth(2).textContent(), SHOWN_WITHIN).toContain('mood');
    await page.getByRole('button', { name: 'Delete jokes' }).click();
    await page.getByRole('button', { name: 'Really delete jokes' }).click();
    await expect.poll(outcome, SHOWN_WITHIN).toBe('Deleted the tool service jokes.');
    await expect.poll(() => jokes.count(), SHOWN_WITHIN).toBe(0);
    await expect.poll(() => page.locator('#services-note').textContent(), SHOWN_WITHIN).toBe('No tool service is registered.');
    expect(await axeFindings()).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it('shows the last hour’s usage after a reload of the console, and after a restart of the registry', async () => {
    const port = (host.address() as AddressInfo).port;
    const put = await fetch(`${base}/tools/echo`, {
      method: 'PUT',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'echo', description: 'Says done', host: '127.0.0.1', port, endpoint: '/echo', parameters: {} }),
    });
    expect(put.status, await put.text()).toBe(201);
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${base}/tools/echo/invoke`, {
        method: 'POST',
        headers: { ...bearer(admin), 'content-type': 'application/json' },
        body: '{}',
      });
      expect(res.status, await res.text()).toBe(200);
    }
    const calls = () => page.locator('#catalogue tbody tr[data-tool="echo"] td').last().textContent();
    await page.goto(`${base}/dashboard/tools`);
    await expect.poll(calls, SHOWN_WITHIN).toBe('4');
    await page.reload();
    await expect.poll(calls, SHOWN_WITHIN).toBe('4');

    // The windows are persisted: the restarted registry still counts the calls of the last hour.
    await t.restart();
    await listen();
    await page.goto(`${base}/dashboard/tools`);
    await expect.poll(calls, SHOWN_WITHIN).toBe('4');
    expect(pageErrors).toEqual([]);
  });
});
