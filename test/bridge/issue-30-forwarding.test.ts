/**
 * Issue 30: no agent token leaves for a tool host unless an operator says so. A new HTTP tool
 * registered without `forwardAuthorization` forwards nothing; a tool stored before issue 30,
 * whose stored descriptor carries the old default written out (`true`: the stored form is the
 * parsed form, which has always included the field), keeps forwarding after an upgrade.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

describe('forwardAuthorization (issue 30)', () => {
  let t: TestApp;
  let server: Server;
  const seen = new Map<string, IncomingHttpHeaders>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.set(req.url ?? '', req.headers);
      req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('"ok"'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const admin = bearer(t.token(['registry:write']));
    for (const name of ['new_tool', 'old_tool']) {
      const payload = { ...seed('calculator'), name, endpoint: `/${name}`, host: '127.0.0.1', port, scopes: [] };
      const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json().descriptor.forwardAuthorization).toBe(false);
    }
    // old_tool as the registry stored it before issue 30, for the same body: the old default
    // written out. Then the upgraded registry starts on that database.
    await t.app.close();
    const db = openDatabase(join(t.dir, 'registry.db'));
    db.prepare("UPDATE tools SET descriptor = json_set(descriptor, '$.forwardAuthorization', json('true')) WHERE name = 'old_tool'").run();
    db.close();
    await t.restart();
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const invoke = (name: string, token: string) =>
    t.app.inject({ method: 'POST', url: `/tools/${name}/invoke`, headers: bearer(token), payload: { expression: '1+1' } });

  it('forwards nothing for a new tool registered without the field', async () => {
    const res = await invoke('new_tool', t.token([]));
    expect(res.statusCode, res.body).toBe(200);
    expect(seen.get('/new_tool')).toBeDefined();
    expect(seen.get('/new_tool')?.['authorization']).toBeUndefined();
  });

  it('keeps forwarding for a tool stored before issue 30 with the old default', async () => {
    const token = t.token([]);
    const res = await invoke('old_tool', token);
    expect(res.statusCode, res.body).toBe(200);
    expect(seen.get('/old_tool')?.['authorization']).toBe(`Bearer ${token}`);
    // And it says so where operators read it.
    const admin = bearer(t.token(['registry:write']));
    const record = await t.app.inject({ method: 'GET', url: '/tools/old_tool', headers: admin });
    expect(record.json().descriptor.forwardAuthorization).toBe(true);
  });

  it('an export taken before imports again forwarding; a bundle tool without the field forwards nothing', async () => {
    const admin = bearer(t.token(['registry:write']));
    const exported = (await t.app.inject({ method: 'GET', url: '/export', headers: admin })).json() as { tools: Record<string, unknown>[] };
    const old = exported.tools.find((tool) => tool['name'] === 'old_tool') as Record<string, unknown>;
    expect(old['forwardAuthorization']).toBe(true);
    // The same tool as a script written for the old default sends it: without the field.
    const silent = Object.fromEntries(Object.entries({ ...old, name: 'bundled_tool' }).filter(([key]) => key !== 'forwardAuthorization'));
    const res = await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: admin,
      payload: { 'tool-services': [], tools: [{ ...old, name: 'restored_tool' }, silent] },
    });
    expect(res.statusCode, res.body).toBe(200);
    const stored = async (name: string) =>
      (await t.app.inject({ method: 'GET', url: `/tools/${name}`, headers: admin })).json().descriptor.forwardAuthorization;
    expect(await stored('restored_tool')).toBe(true);
    expect(await stored('bundled_tool')).toBe(false);
  });
});
