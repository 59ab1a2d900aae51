/**
 * The token cache in front of @fastify/jwt (src/auth/verified-tokens.ts): a header seen again
 * skips verification, but only while its token would still be accepted; a refused one, for a
 * few seconds.
 */
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VerifiedTokens } from '../../src/auth/verified-tokens.js';
import type { Caller } from '../../src/model/caller.js';
import { RegistryError } from '../../src/model/errors.js';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';

const caller = (expiresAt: number | undefined): Caller => ({ kind: 'token', sub: 'a', iss: undefined, scopes: new Set(['x']), expiresAt });

describe('VerifiedTokens', () => {
  it('keeps a verified caller until its exp plus the tolerance', () => {
    const cache = new VerifiedTokens(10, 1000);
    const c = caller(10_000);
    cache.set('Bearer a', c, 0);
    expect(cache.get('Bearer a', 10_999)).toBe(c);
    expect(cache.get('Bearer a', 11_000)).toBeUndefined();
    // Gone once expired.
    expect(cache.size).toBe(0);
  });

  it('checks a long-lived token again after the ttl, and never keeps one without exp or already expired', () => {
    const cache = new VerifiedTokens(10, 0, 5000);
    cache.set('Bearer long', caller(1e12), 0);
    expect(cache.get('Bearer long', 4999)).toBeDefined();
    expect(cache.get('Bearer long', 5000)).toBeUndefined();
    cache.set('Bearer no-exp', caller(undefined), 0);
    cache.set('Bearer past', caller(100), 200);
    cache.set('Bearer anon', { kind: 'anonymous' }, 0);
    expect(cache.size).toBe(0);
  });

  it('holds at most max headers, dropping the oldest', () => {
    const cache = new VerifiedTokens(2, 0);
    for (const h of ['a', 'b', 'c']) cache.set(h, caller(1e12), 0);
    expect(cache.get('a', 1)).toBeUndefined();
    expect(cache.get('b', 1)).toBeDefined();
    expect(cache.get('c', 1)).toBeDefined();
  });

  it('issue 32: holds a refusal for the refusal ttl, at most max of them apart from the verified headers, and forgets both on clear', () => {
    const refusal = new RegistryError('TR_ERR_INVALID_TOKEN', 'the token signature is not valid');
    const cache = new VerifiedTokens(2, 30_000, 600_000, { max: 2, ttlMs: 5000 });
    cache.set('Bearer good', caller(1e12), 0);
    cache.refuse('Bearer bad', refusal, 0);
    expect(cache.refused('Bearer bad', 4999)).toBe(refusal);
    expect(cache.get('Bearer bad', 1)).toBeUndefined();
    expect(cache.refused('Bearer good', 1)).toBeUndefined();
    expect(cache.refused('Bearer bad', 5000)).toBeUndefined();
    // Distinct bad tokens push out older refusals, never a verified header.
    for (const h of ['Bearer x', 'Bearer y', 'Bearer z']) cache.refuse(h, refusal, 6000);
    expect(cache.refused('Bearer x', 6001)).toBeUndefined();
    expect(cache.refused('Bearer z', 6001)).toBe(refusal);
    expect(cache.get('Bearer good', 6001)).toBeDefined();
    cache.clear();
    expect(cache.refused('Bearer z', 6002)).toBeUndefined();
    expect(cache.get('Bearer good', 6002)).toBeUndefined();
  });
});

describe('a token served from the cache over HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ JWT_CLOCK_TOLERANCE_S: '0' });
  });
  afterAll(() => t.close());

  it('is refused once it expires, as an uncached one is', async () => {
    const sign = createSigner({ key: TEST_SECRET, header: { alg: 'HS256', typ: 'at+jwt' } });
    const exp = Math.floor(Date.now() / 1000) + 2;
    const token = sign({ sub: 'short-lived', scope: 'x', exp });
    const first = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(first.statusCode).toBe(200);
    // The second answer comes from the cache, with the same view.
    const second = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(second.statusCode).toBe(200);
    expect(second.headers['etag']).toBe(first.headers['etag']);
    await new Promise((r) => setTimeout(r, exp * 1000 - Date.now() + 50));
    const late = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(late.statusCode).toBe(401);
    expect(String(late.headers['www-authenticate'])).toContain('invalid_token');
  });

  it('never lets a forged token ride on a verified one', async () => {
    const token = t.token(['x']);
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) })).statusCode).toBe(200);
    const [head, payload] = token.split('.');
    const forged = `${head}.${payload}.${'A'.repeat(43)}`;
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(forged) })).statusCode).toBe(401);
  });
});
