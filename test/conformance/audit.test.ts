/**
 * Denied writes and calls appear in the audit log (GET /audit with an admin token; the recorder
 * flushes on read), with outcome "denied", the action, and the token's sub and iss where there
 * was a valid token. Entries are found by the request id the response carried.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import type { AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, expectChallenge, operatorAndCalculatorAgent, register } from './support.js';

interface AuditEntry {
  sub: string | null;
  iss: string | null;
  action: string;
  target: string | null;
  outcome: string;
  status: number;
  requestId: string | null;
}

describe('the audit log records refusals', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  let admin: string;
  let calc: string;

  /** The audit entry of the request that got `res`, read through GET /audit. */
  async function entryFor(res: LightMyRequestResponse): Promise<AuditEntry | undefined> {
    const requestId = res.headers['x-request-id'];
    expect(typeof requestId).toBe('string');
    const audit = await t.app.inject({ method: 'GET', url: '/audit?limit=500', headers: bearer(admin) });
    expect(audit.statusCode, audit.body).toBe(200);
    return (audit.json() as { entries: AuditEntry[] }).entries.find((e) => e.requestId === requestId);
  }

  beforeAll(async () => {
    ({ as, t, admin, calc } = await operatorAndCalculatorAgent());
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it('a 403 write shows up: denied, tool.put, with the token sub and iss', async () => {
    const res = await register(t.app, calc, seed('file_reader'));
    expectChallenge(res, { status: 403, error: 'insufficient_scope' });
    const entry = await entryFor(res);
    expect(entry, 'no audit entry for the refused write').toBeDefined();
    expect(entry).toMatchObject({ outcome: 'denied', action: 'tool.put', status: 403, sub: 'calc-agent', iss: as.issuer });
  });

  it('a 401 write without a token shows up: denied, tool.put, no sub or iss', async () => {
    const res = await register(t.app, undefined, seed('file_reader'));
    expectChallenge(res, { status: 401, error: null });
    const entry = await entryFor(res);
    expect(entry, 'no audit entry for the refused write').toBeDefined();
    expect(entry).toMatchObject({ outcome: 'denied', action: 'tool.put', status: 401, sub: null, iss: null });
  });

  it('a 401 write with an invalid token shows up: denied, tool.put (an unverified token names nobody)', async () => {
    const foreign = await as.token('operator', [ADMIN_SCOPE], 'https://other.test');
    const res = await register(t.app, foreign, seed('file_reader'));
    expectChallenge(res, { status: 401, error: 'invalid_token' });
    const entry = await entryFor(res);
    expect(entry, 'no audit entry for the refused write').toBeDefined();
    expect(entry).toMatchObject({ outcome: 'denied', action: 'tool.put', status: 401, sub: null, iss: null });
  });

  it('a denied invoke (token lacking the tool scope, 403) shows up: denied, tool.invoke, the tool, sub and iss', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/weather_forecast/invoke', headers: bearer(calc), payload: {} });
    expectChallenge(res, { status: 403, error: 'insufficient_scope', scope: ['weather:read'] });
    const entry = await entryFor(res);
    expect(entry, 'no audit entry for the refused call').toBeDefined();
    expect(entry).toMatchObject({
      outcome: 'denied',
      action: 'tool.invoke',
      target: 'weather_forecast',
      status: 403,
      sub: 'calc-agent',
      iss: as.issuer,
    });
  });

  it('an anonymous invoke (401) shows up: denied, tool.invoke', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/calculator/invoke', payload: { expression: '1+1' } });
    expectChallenge(res, { status: 401, error: null, scope: ['calculator:use'] });
    const entry = await entryFor(res);
    expect(entry).toMatchObject({ outcome: 'denied', action: 'tool.invoke', target: 'calculator', status: 401, sub: null });
  });

  it('the audit filters find the denials (outcome=denied&action=tool.invoke)', async () => {
    const denied = await t.app.inject({ method: 'POST', url: '/tools/weather_forecast/invoke', headers: bearer(calc), payload: {} });
    expect(denied.statusCode).toBe(403);
    const res = await t.app.inject({ method: 'GET', url: '/audit?outcome=denied&action=tool.invoke', headers: bearer(admin) });
    expect(res.statusCode).toBe(200);
    const entries = (res.json() as { entries: AuditEntry[] }).entries;
    expect(entries.length).toBeGreaterThanOrEqual(1);
    for (const e of entries) expect(e).toMatchObject({ outcome: 'denied', action: 'tool.invoke' });
    expect(entries.some((e) => e.sub === 'calc-agent' && e.iss === as.issuer)).toBe(true);
  });
});
