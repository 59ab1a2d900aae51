/**
 * Issue 34, the operator's console, on the server's side: calls that carry `X-Registry-Console`
 * (the console's Try it sends it) are audited as `console.invoke`, answered or refused, while
 * other calls keep their audit as before (refusals only, as `tool.invoke`); and an admin's read
 * of a tool names its `owner` where something other than operators writes it (an OpenAPI
 * source), which the console shows as the tool's source.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const PETSTORE = readFileSync(new URL('../fixtures/openapi/petstore-3.0.yaml', import.meta.url), 'utf8');

interface AuditEntry {
  sub: string | null;
  action: string;
  target: string | null;
  outcome: string;
  status: number;
  detail: string | null;
}

describe('the console on the server (issue 34)', () => {
  let t: TestApp;
  let host: Server;
  let admin: Record<string, string>;

  const call = (headers: Record<string, string>, body: unknown = { expression: '1 + 1' }) =>
    t.app.inject({
      method: 'POST',
      url: '/tools/calculator/invoke',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const audit = async (action: string): Promise<AuditEntry[]> =>
    (await t.app.inject({ url: `/audit?action=${action}`, headers: admin })).json<{ entries: AuditEntry[] }>().entries;

  beforeAll(async () => {
    host = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('"2"'));
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write'], { sub: 'operator' }));
    const port = (host.address() as AddressInfo).port;
    const put = await t.app.inject({
      method: 'PUT',
      url: '/tools/calculator',
      headers: admin,
      payload: { ...seed('calculator'), endpoint: '/calc', host: '127.0.0.1', port },
    });
    expect(put.statusCode, put.body).toBe(201);
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => host?.close(resolve));
  });

  it('audits the console’s calls as console.invoke, answered or refused, and no other call more than before', async () => {
    const agent = bearer(t.token(['calculator:use'], { sub: 'planner' }));
    expect((await call(agent)).statusCode).toBe(200);
    expect((await call(bearer(t.token([], { sub: 'nosy' })))).statusCode).toBe(403);
    expect(await audit('console.invoke')).toEqual([]);
    expect(await audit('tool.invoke')).toEqual([expect.objectContaining({ sub: 'nosy', outcome: 'denied', status: 403 })]);

    const fromConsole = { 'x-registry-console': '1' };
    expect((await call({ ...agent, ...fromConsole })).statusCode).toBe(200);
    expect((await call({ ...bearer(t.token([], { sub: 'nosy' })), ...fromConsole })).statusCode).toBe(403);
    expect((await call({ ...agent, ...fromConsole }, { expression: 42 })).statusCode).toBe(400);
    // Newest first.
    expect(await audit('console.invoke')).toEqual([
      expect.objectContaining({
        sub: 'planner',
        target: 'calculator',
        outcome: 'invalid',
        status: 400,
        detail: 'TR_ERR_INVALID_ARGUMENTS',
      }),
      expect.objectContaining({ sub: 'nosy', target: 'calculator', outcome: 'denied', status: 403, detail: 'TR_ERR_INSUFFICIENT_SCOPE' }),
      expect.objectContaining({ sub: 'planner', target: 'calculator', outcome: 'ok', status: 200, detail: null }),
    ]);
    expect(await audit('tool.invoke')).toHaveLength(1);
    // Without a token: refused before the route, and still the console's.
    expect((await call(fromConsole)).statusCode).toBe(401);
    expect((await audit('console.invoke'))[0]).toMatchObject({ sub: null, outcome: 'denied', status: 401 });
  });

  it('names the owner of an OpenAPI source’s tool in the admin record, and of no operator’s tool', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/petstore',
      headers: admin,
      payload: { prefix: 'ps_', document: PETSTORE, baseUrl: 'https://api.example.com/v3', filter: { operationIds: ['getPetById'] } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const [tool] = res.json<{ tools: string[] }>().tools;
    expect(tool).toBeDefined();
    const record = (await t.app.inject({ url: `/tools/${tool}`, headers: admin })).json<Record<string, unknown>>();
    expect(record['owner']).toBe('openapi-source:petstore');
    expect(record['kind']).toBe('http');
    expect((await t.app.inject({ url: '/tools/calculator', headers: admin })).json()).not.toHaveProperty('owner');
    // Agents never see it: it is the registry's business.
    const entry = (await t.app.inject({ url: `/tools/${tool}`, headers: bearer(t.token(['api_key'])) })).json<Record<string, unknown>>();
    expect(entry).not.toHaveProperty('owner');
    expect(entry['name']).toBe(tool);
  });
});
