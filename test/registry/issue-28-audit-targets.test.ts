/**
 * Issue 28: a refused write is audited with the name or id the caller tried (it was
 * `target: null` whenever the name came in the body), from the route's `:name`/`:id` or the
 * body's `name`/`id` once the body has been read; escaped and bounded, as it is whatever the
 * caller sent.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

interface AuditEntry {
  action: string;
  target: string | null;
  outcome: string;
  status: number;
  detail: string | null;
  requestId: string | null;
}

describe('issue 28: refused writes are audited with the name or id tried', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let agent: Record<string, string>;
  const calculator = seed('calculator');

  beforeAll(async () => {
    t = await createTestApp();
    admin = bearer(t.token(['registry:write']));
    agent = bearer(t.token(['calculator:use']));
    expect((await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: calculator })).statusCode).toBe(201);
  });

  afterAll(() => t?.close());

  /** The audit entry of the request that got `res`. */
  async function entryFor(res: LightMyRequestResponse): Promise<AuditEntry> {
    const audit = await t.app.inject({ method: 'GET', url: '/audit?limit=500', headers: admin });
    const entry = (audit.json() as { entries: AuditEntry[] }).entries.find((e) => e.requestId === res.headers['x-request-id']);
    expect(entry, `no audit entry for ${res.statusCode} ${res.body}`).toBeDefined();
    return entry as AuditEntry;
  }

  /** POST /tools/register with this JSON body (a string is sent as the JSON text it is). */
  const register = (payload: unknown, headers = admin) =>
    t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: { ...headers, 'content-type': 'application/json' },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  it('a 400 registration names the tool its body tried', async () => {
    const res = await register({ ...calculator, name: 'weather', endpoint: 5 });
    expect(res.statusCode).toBe(400);
    expect(await entryFor(res)).toMatchObject({
      action: 'tool.put',
      target: 'weather',
      outcome: 'invalid',
      status: 400,
      detail: 'TR_ERR_VALIDATION',
    });
    // An invalid name is still the name tried.
    const badName = await register({ ...calculator, name: 'not a name!' });
    expect(badName.statusCode).toBe(400);
    expect((await entryFor(badName)).target).toBe('not a name!');
  });

  it('a refusal after validation (412 on the name) names it too', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/tools/calculator',
      headers: { ...admin, 'if-match': '"nope"' },
      payload: calculator,
    });
    expect(res.statusCode).toBe(412);
    expect(await entryFor(res)).toMatchObject({ action: 'tool.put', target: 'calculator', status: 412 });
  });

  it('names from the route: 403 for want of the admin scope, 404, 400 on a tool service and an MCP server', async () => {
    const denied = await t.app.inject({ method: 'PUT', url: '/tools/calculator', headers: agent, payload: calculator });
    expect(denied.statusCode).toBe(403);
    expect(await entryFor(denied)).toMatchObject({ action: 'tool.put', target: 'calculator', outcome: 'denied' });
    const missing = await t.app.inject({ method: 'DELETE', url: '/tools/no-such-tool', headers: admin });
    expect(missing.statusCode).toBe(404);
    expect(await entryFor(missing)).toMatchObject({ action: 'tool.delete', target: 'no-such-tool', status: 404 });
    const service = await t.app.inject({ method: 'PUT', url: '/tool-services/svc-1', headers: admin, payload: { bad: 1 } });
    expect(service.statusCode).toBe(400);
    expect(await entryFor(service)).toMatchObject({ action: 'tool-service.put', target: 'svc-1' });
    const server = await t.app.inject({ method: 'PUT', url: '/mcp-servers/up-1', headers: admin, payload: { url: 5 } });
    expect(server.statusCode).toBe(400);
    expect(await entryFor(server)).toMatchObject({ action: 'mcp-server.put', target: 'up-1' });
  });

  it('escapes control and bidirectional characters and bounds the length, from the body and the path alike', async () => {
    const fromBody = await register({ ...calculator, name: 'evil\u001b[2J\u202Ename' });
    expect(fromBody.statusCode).toBe(400);
    expect((await entryFor(fromBody)).target).toBe('evil\\u001b[2J\\u202ename');
    const fromPath = await t.app.inject({ method: 'DELETE', url: '/tools/x%1B%5B2J', headers: admin });
    expect((await entryFor(fromPath)).target).toBe('x\\u001b[2J');
    const long = await register({ ...calculator, name: 'n'.repeat(10_000) });
    expect(long.statusCode).toBe(400);
    expect((await entryFor(long)).target).toBe(`${'n'.repeat(200)}...`);
  });

  it('has no name to give when none was read: a body that is no object, a name that is no string, a body refused unread', async () => {
    for (const payload of [[calculator], '"calculator"', { ...calculator, name: { toString: 'x' } }, { ...calculator, name: 42 }]) {
      const res = await register(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect((await entryFor(res)).target, JSON.stringify(payload)).toBeNull();
    }
    // 403 before the body is read: unauthorised callers never make the registry read a body.
    const denied = await register(calculator, agent);
    expect(denied.statusCode).toBe(403);
    expect(await entryFor(denied)).toMatchObject({ target: null, outcome: 'denied' });
  });
});
