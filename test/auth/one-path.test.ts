/**
 * Issue 32, one verification path: a token that arrives another way than a request's
 * Authorization header (a tool service's announcement: `app.verifyToken`) is refused in the same
 * words as a request with it, and a verified one is kept in the same cache as a request's. Each
 * kind of failure has its own words, fast-jwt's own code reaching the challenge, and a flood of
 * one bad token costs one verification.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RegistryError } from '../../src/model/errors.js';
import { appForKeyServer, craftedClaims, startKeyServer, type KeyServer } from '../conformance/support.js';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';

const now = () => Math.floor(Date.now() / 1000);

describe('announcements and requests verify tokens alike', () => {
  let t: TestApp;
  const claims = { iss: 'https://auth.test', aud: 'tool-registry' };
  const good = (extra: Record<string, unknown> = {}) => t.token(['calculator:use'], { ...claims, ...extra });

  beforeAll(async () => {
    t = await createTestApp({ JWT_ISSUER: 'https://auth.test', JWT_AUDIENCE: 'tool-registry' });
  });
  afterAll(() => t.close());

  const bad: [string, () => string, string][] = [
    ['malformed', () => 'abc.def.ghi', 'malformed'],
    [
      'a bad signature',
      () => {
        const [h, p] = good().split('.');
        return `${h}.${p}.${createHmac('sha256', 'another secret').update(`${h}.${p}`).digest('base64url')}`;
      },
      'signature',
    ],
    ['a claim value', () => good({ aud: 'another-api' }), 'issuer, audience or type'],
    ['a missing claim', () => good({ iss: undefined }), 'lacks a claim'],
  ];

  it.each(bad)('refuses %s with the same code and description both ways', async (_name, make, words) => {
    const token = make();
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
    const refusal = await t.app.verifyToken(token).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(RegistryError);
    const { code, challenge } = refusal as RegistryError;
    expect(res.json()).toMatchObject({ code });
    expect(challenge?.description).toContain(words);
    expect(res.headers['www-authenticate']).toContain(`error_description="${challenge?.description}"`);
  });

  it('serves a verified token from the cache, whichever way it came', async () => {
    const token = good({ sub: 'announcer', exp: now() + 600 });
    const first = await t.app.verifyToken(token);
    expect(first).toMatchObject({ kind: 'token', sub: 'announcer' });
    // The same Caller object: not verified (and built) a second time.
    expect(await t.app.verifyToken(token)).toBe(first);
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.statusCode).toBe(200);
  });
});

describe('issue 32: each failure in its own words, and one verification for a flood of one bad token', () => {
  let t: TestApp;
  const claims = { iss: 'https://auth.test', aud: 'tool-registry' };
  const good = (extra: Record<string, unknown> = {}) => t.token(['calculator:use'], { ...claims, ...extra });
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  beforeAll(async () => {
    t = await createTestApp({ JWT_ISSUER: 'https://auth.test', JWT_AUDIENCE: 'tool-registry' });
  });
  afterAll(() => t.close());
  afterEach(() => vi.restoreAllMocks());

  const failures: [string, () => string, string][] = [
    ['an expired token', () => good({ exp: now() - 3600, iat: now() - 7200 }), 'the token has expired'],
    [
      'a bad signature',
      () => {
        const [h, p] = good().split('.');
        return `${h}.${p}.${createHmac('sha256', 'another secret').update(`${h}.${p}`).digest('base64url')}`;
      },
      'the token signature is not valid',
    ],
    ['the wrong audience', () => good({ aud: 'another-api' }), 'the token issuer, audience or type is not accepted here'],
    ['the wrong issuer', () => good({ iss: 'https://evil.test' }), 'the token issuer, audience or type is not accepted here'],
    [
      'no signature (alg none)',
      () => `${b64({ alg: 'none', typ: 'at+jwt' })}.${b64({ ...claims, exp: now() + 600 })}.`,
      'the token is not signed',
    ],
    [
      'an algorithm not allowed',
      () => createSigner({ key: TEST_SECRET, algorithm: 'HS512', expiresIn: 60_000, header: { alg: 'HS512', typ: 'at+jwt' } })(claims),
      'the token algorithm is not allowed',
    ],
    [
      'a type not accepted',
      () => createSigner({ key: TEST_SECRET, expiresIn: 60_000, header: { alg: 'HS256', typ: 'JWT' } })(claims),
      'the token type must be at+jwt',
    ],
    ['a sub that is not a string', () => good({ sub: 42 }), "the token's sub claim is not a string"],
  ];

  it.each(failures)('refuses %s in its own words, verifying it once for 20 requests and an announcement', async (_name, make, words) => {
    const token = make();
    const verify = vi.spyOn(t.app.jwt, 'verify');
    for (let i = 0; i < 20; i++) {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toMatchObject({ code: 'TR_ERR_INVALID_TOKEN', detail: words });
      expect(res.headers['www-authenticate']).toContain(`error="invalid_token", error_description="${words}"`);
    }
    await expect(t.app.verifyToken(token)).rejects.toMatchObject({ code: 'TR_ERR_INVALID_TOKEN', challenge: { description: words } });
    expect(verify).toHaveBeenCalledTimes(1);
  });

  it('verifies a good token once too, and a bad one beside it does not ride on it', async () => {
    const token = good({ sub: 'flood' });
    const verify = vi.spyOn(t.app.jwt, 'verify');
    for (let i = 0; i < 20; i++) expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) })).statusCode).toBe(200);
    const [h, p] = token.split('.');
    const forged = `${h}.${p}.${'A'.repeat(43)}`;
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(forged) })).statusCode).toBe(401);
    expect(verify).toHaveBeenCalledTimes(2);
  });
});

describe('issue 32: refusals that time or a key fetch undo are not held', () => {
  let t: TestApp;
  let keys: KeyServer;
  let jwks: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ JWT_CLOCK_TOLERANCE_S: '0' });
    keys = await startKeyServer();
    jwks = await appForKeyServer(keys, { JWKS_COOLDOWN_S: '1' });
  });
  afterAll(async () => {
    await t?.close();
    await jwks?.close();
    await keys?.close();
  });

  it('a token not valid yet is accepted as soon as it is valid, not a few seconds later', async () => {
    const nbf = now() + 1;
    const token = t.token(['x'], { nbf });
    const early = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(early.statusCode).toBe(401);
    expect(early.json()).toMatchObject({ detail: 'the token is not valid yet' });
    await new Promise((resolve) => setTimeout(resolve, nbf * 1000 - Date.now() + 50));
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) })).statusCode).toBe(200);
  });

  it('a token whose key the registry does not know yet is accepted once a fetch brings the key (JWKS), and its refusal says so', async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    expect((await jwks.app.inject({ method: 'GET', url: '/', headers: bearer(keys.sign(craftedClaims())) })).statusCode).toBe(200);
    // A token naming an unknown kid fetches the key set (the cooldown has passed)...
    await sleep(1100);
    const before = keys.requests;
    const stray = await jwks.app.inject({ method: 'GET', url: '/', headers: bearer(keys.sign(craftedClaims(), { kid: randomUUID() })) });
    expect(stray.json()).toMatchObject({ status: 401, detail: 'the token was signed with a key this registry does not know' });
    expect(keys.requests).toBe(before + 1);
    // ...so one signed with a key published just after waits for the next fetch, a cooldown later.
    keys.rotate();
    const rotated = keys.sign(craftedClaims());
    expect((await jwks.app.inject({ method: 'GET', url: '/', headers: bearer(rotated) })).statusCode).toBe(401);
    await sleep(1100);
    expect((await jwks.app.inject({ method: 'GET', url: '/', headers: bearer(rotated) })).statusCode).toBe(200);
  });
});
