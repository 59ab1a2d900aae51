/**
 * A big import is done in slices: reads keep answering while it runs and see the catalogue as
 * it was until the import is whole, writes sent meanwhile wait for it and apply after it, and
 * one that fails half-way (a full disk) leaves nothing behind and lets every writer go on.
 */
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { openedDatabases } from '../helpers/opened-databases.js';
import { seed } from '../helpers/fixtures.js';

// The app's own connections, so that a test can give one a tiny max_page_count (a full disk).
vi.mock('../../src/store/database.js', async (original) =>
  (await import('../helpers/opened-databases.js')).recordingDatabaseModule(original),
);

let t: TestApp;
afterEach(async () => t?.close());

async function serve(): Promise<{ base: string; admin: Record<string, string> }> {
  t = await createTestApp({ IMPORT_BODY_LIMIT: String(256 * 1024 * 1024) });
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  return { base, admin: { authorization: `Bearer ${t.token(['registry:write'])}`, 'content-type': 'application/json' } };
}

const tool = (name: string, description = `Tool ${name} adds numbers`) => ({ ...seed('calculator'), name, description, scopes: [] });

describe('a big import', () => {
  it('lets reads answer while it runs, and shows nothing of it until it is whole', async () => {
    const { base, admin } = await serve();
    await fetch(`${base}/tools/register`, { method: 'POST', headers: admin, body: JSON.stringify(tool('before')) });
    const tools = Array.from({ length: 30_000 }, (_, i) => tool(`bulk_${String(i).padStart(5, '0')}`));
    let done = false;
    const importing = fetch(`${base}/import`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ 'tool-services': [], tools }),
    }).then(async (res) => {
      done = true;
      return res;
    });
    const during: number[] = [];
    while (!done) {
      const res = await fetch(`${base}/?limit=5`);
      const body = (await res.json()) as { tools: { name: string }[] };
      if (!done) during.push(body.tools.length);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const res = await importing;
    expect(res.status, await res.clone().text()).toBe(200);
    // Reads were answered while the import ran, and each saw the catalogue as it was before.
    expect(during.length).toBeGreaterThan(3);
    expect(new Set(during)).toEqual(new Set([1]));
    const after = (await (await fetch(`${base}/?limit=2`)).json()) as { tools: { name: string }[] };
    expect(after.tools.map((x) => x.name)).toEqual(['before', 'bulk_00000']);
    // Search indexes a big write in slices after it, and a search waits for them: the first
    // one asked finds the import's last tool.
    expect(t.app.catalog.searchBacklog).toBeGreaterThan(0);
    const found = (await (await fetch(`${base}/?q=bulk_29999`)).json()) as { tools: { name: string }[] };
    expect(found.tools[0]?.name).toBe('bulk_29999');
    expect(t.app.catalog.searchBacklog).toBe(0);
  }, 120_000);

  it('is searchable from the first search after a restart', async () => {
    const { admin } = await serve();
    const tools = Array.from({ length: 5_000 }, (_, i) => tool(`bulk_${String(i).padStart(5, '0')}`));
    const res = await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: admin,
      payload: JSON.stringify({ 'tool-services': [], tools }),
    });
    expect(res.statusCode).toBe(200);
    const app = await t.restart();
    const found = await app.inject({ method: 'GET', url: '/?q=bulk_04999' });
    expect(found.statusCode).toBe(200);
    expect((found.json() as { tools: { name: string }[] }).tools[0]?.name).toBe('bulk_04999');
    expect(app.catalog.searchBacklog).toBe(0);
    // In the other shapes too.
    const mcp = await app.inject({ method: 'GET', url: '/?q=bulk_00007&format=mcp' });
    expect(mcp.statusCode).toBe(200);
    expect(mcp.body).toContain('bulk_00007');
  }, 60_000);

  it('never holds the event loop for long: not to parse, check, write, index or swap it in (issue 10)', async () => {
    const tools = Array.from({ length: 20_000 }, (_, i) => tool(`bulk_${String(i).padStart(5, '0')}`));
    // Encoded before the watch starts: this process is the client too.
    const body = Buffer.from(JSON.stringify({ 'tool-services': [], tools }));
    // The same import into a fresh registry, up to three times: this machine's CPU is at times
    // several times slower for a while (a spin loop of 300 ms takes 1.6 s), which no stall
    // measured in milliseconds survives. A registry that holds the loop fails all three.
    const longest: number[] = [];
    for (let attempt = 0; attempt < 3 && !(longest.at(-1)! < 150); attempt++) {
      if (attempt > 0) await t.close();
      const { base, admin } = await serve();
      const delay = monitorEventLoopDelay({ resolution: 5 });
      delay.enable();
      const res = await fetch(`${base}/import`, { method: 'POST', headers: admin, body });
      const first = await fetch(`${base}/`);
      delay.disable();
      expect(res.status).toBe(200);
      expect(((await first.json()) as { tools: unknown[] }).tools).toHaveLength(20_000);
      longest.push(delay.max / 1e6);
    }
    // Generous, for a busy machine: the longest delay measured here was 50-55 ms; before the
    // swap and the full list were prepared in steps (and the sort, the body's copy and the
    // checkpoint moved out of the way), 160-210 ms.
    expect(Math.min(...longest), `longest stalls, ms: ${longest.map((ms) => ms.toFixed(0)).join(', ')}`).toBeLessThan(150);
  }, 240_000);

  it('orders writes sent meanwhile before or after it, never inside it', async () => {
    const { base, admin } = await serve();
    const tools = Array.from({ length: 10_000 }, (_, i) => tool(`bulk_${i}`));
    const importing = fetch(`${base}/import`, { method: 'POST', headers: admin, body: JSON.stringify({ 'tool-services': [], tools }) });
    const puts = [];
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      puts.push(fetch(`${base}/tools/bulk_${i}`, { method: 'PUT', headers: admin, body: JSON.stringify(tool(`bulk_${i}`, `put ${i}`)) }));
    }
    const imported = (await (await importing).json()) as { index: number };
    for (const [i, pending] of puts.entries()) {
      const put = await pending;
      const index = Number(put.headers.get('x-registry-index'));
      expect(index).not.toBe(imported.index);
      // Before the import: created, then replaced by it. After: replacing the import's tool.
      expect(put.status).toBe(index < imported.index ? 201 : 200);
      const now = (await (await fetch(`${base}/tools/bulk_${i}`)).json()) as { description: string };
      expect(now.description).toBe(index < imported.index ? `Tool bulk_${i} adds numbers` : `put ${i}`);
    }
  }, 60_000);

  it('leaves nothing behind when the disk fills half-way, and every writer goes on after it', async () => {
    const { base, admin } = await serve();
    const db = openedDatabases.at(-1);
    if (!db) throw new Error('no database opened');
    // Room for some slices of the import, not all of them.
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 400}`);
    const tools = Array.from({ length: 4_000 }, (_, i) => tool(`bulk_${i}`, `Tool ${i} ${'x'.repeat(2_000)}`));
    const res = await fetch(`${base}/import`, { method: 'POST', headers: admin, body: JSON.stringify({ 'tool-services': [], tools }) });
    expect(res.status).toBe(503);
    db.pragma('max_page_count = 1073741823');
    expect(((await (await fetch(`${base}/`)).json()) as { tools: unknown[] }).tools).toEqual([]);
    expect((await fetch(`${base}/tools/bulk_0`)).status).toBe(404);
    // The connection is free again: a write, and a refused write's audit entry, go through.
    expect((await fetch(`${base}/tools/register`, { method: 'POST', headers: admin, body: JSON.stringify(tool('after')) })).status).toBe(
      201,
    );
    const refused = await fetch(`${base}/tools/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(tool('nope')),
    });
    expect(refused.status).toBe(401);
    const audit = await fetch(`${base}/audit?limit=5`, { headers: admin });
    expect(audit.status).toBe(200);
    expect(
      ((await (await fetch(`${base}/export`, { headers: admin })).json()) as { tools: { name: string }[] }).tools.map((x) => x.name),
    ).toEqual(['after']);
  }, 60_000);

  it('takes a body past BODY_LIMIT up to IMPORT_BODY_LIMIT, and refuses one past that with 413', async () => {
    t = await createTestApp({ BODY_LIMIT: '4096', IMPORT_BODY_LIMIT: '200000' });
    const admin = { authorization: `Bearer ${t.token(['registry:write'])}` };
    const tools = Array.from({ length: 100 }, (_, i) => tool(`t${i}`));
    const ok = await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: { 'tool-services': [], tools } });
    expect(ok.statusCode, ok.body).toBe(200);
    const big = Array.from({ length: 1000 }, (_, i) => tool(`t${i}`));
    const refused = await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: { 'tool-services': [], tools: big } });
    expect(refused.statusCode).toBe(413);
    expect(
      (await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('x', 'y'.repeat(5000)) })).statusCode,
    ).toBe(413);
  });
});
