/**
 * Per-caller rate limits with real tokens: RATE_LIMIT_MAX=5 per 60 s window. The 6th request
 * from one caller (one sub) is 429 with Retry-After and the RateLimit-* headers, as
 * problem+json; another sub is unaffected; /healthz is exempt.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { appForProvider } from './support.js';

const MAX = 5;

describe('rate limits per caller', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  let agentA: string;
  let agentB: string;

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'agent-a', scopes: ['calculator:use'] },
        { clientId: 'agent-b', scopes: ['calculator:use'] },
      ],
    });
    t = await appForProvider(as, { RATE_LIMIT_MAX: String(MAX), RATE_LIMIT_WRITE_MAX: String(MAX), RATE_LIMIT_WINDOW_S: '60' });
    agentA = await as.token('agent-a', ['calculator:use']);
    agentB = await as.token('agent-b', ['calculator:use']);
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it('the 6th request from one caller gets 429 with Retry-After and RateLimit-Limit/Remaining/Reset, as problem+json', async () => {
    for (let i = 1; i <= MAX; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(agentA) });
      expect(res.statusCode, `request ${i}`).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe(String(MAX));
      expect(res.headers['ratelimit-remaining']).toBe(String(MAX - i));
    }
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(agentA) });
    expect(res.statusCode).toBe(429);
    const retryAfter = Number(res.headers['retry-after']);
    expect(Number.isInteger(retryAfter), `Retry-After: ${String(res.headers['retry-after'])}`).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.headers['ratelimit-limit']).toBe(String(MAX));
    expect(res.headers['ratelimit-remaining']).toBe('0');
    const reset = Number(res.headers['ratelimit-reset']);
    expect(Number.isInteger(reset), `RateLimit-Reset: ${String(res.headers['ratelimit-reset'])}`).toBe(true);
    expect(reset).toBeGreaterThanOrEqual(0);
    expect(reset).toBeLessThanOrEqual(60);
    expect(String(res.headers['content-type'])).toContain('application/problem+json');
    const body = res.json() as Record<string, unknown>;
    expect(body).toMatchObject({ status: 429, code: 'TR_ERR_TOO_MANY_REQUESTS', type: 'urn:tool-registry:error:too-many-requests' });
    expect(typeof body['title']).toBe('string');
    expect(typeof body['detail']).toBe('string');
  });

  it('the limit is per caller (sub), not per token: a new token for the same client is still limited', async () => {
    const again = await as.token('agent-a', ['calculator:use']);
    expect(again).not.toBe(agentA);
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(again) })).statusCode).toBe(429);
  });

  it('another caller (different sub) is unaffected', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(agentA) })).statusCode).toBe(429);
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(agentB) });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['ratelimit-remaining']).toBe(String(MAX - 1));
  });

  it('/healthz is exempt', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(agentA) })).statusCode).toBe(429);
    for (let i = 0; i < MAX * 3; i++) {
      const withToken = await t.app.inject({ method: 'GET', url: '/healthz', headers: bearer(agentA) });
      expect(withToken.statusCode, `healthz ${i} (limited caller)`).toBe(200);
      const anonymous = await t.app.inject({ method: 'GET', url: '/healthz' });
      expect(anonymous.statusCode, `healthz ${i} (anonymous)`).toBe(200);
    }
  });
});
