/**
 * Key-fetching robustness: forged kids cannot turn into a flood of JWKS fetches (at most one per
 * JWKS_COOLDOWN_S, counted at a JWKS server of our own), and a key endpoint that never answers
 * cannot hang requests (JWKS_TIMEOUT_MS bounds them; they get 401).
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import {
  ADMIN_SCOPE,
  RESOURCE,
  appForKeyServer,
  craftedClaims,
  expectChallenge,
  rs256,
  seedTools,
  sleep,
  startHangingServer,
  startKeyServer,
  toolNames,
  type HangingServer,
  type KeyServer,
} from './support.js';

const FLOOD = 200;

/**
 * FLOOD requests, each with a token naming a random kid, in waves of 20 concurrent requests one
 * after another (so that single-flight alone cannot hide missing cooldowns); every one is 401.
 */
async function flood(app: FastifyInstance, keys: KeyServer): Promise<void> {
  const statuses = new Map<number, number>();
  for (let wave = 0; wave < FLOOD / 20; wave++) {
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        app.inject({ method: 'GET', url: '/', headers: bearer(keys.sign(craftedClaims({ scope: ADMIN_SCOPE }), { kid: randomUUID() })) }),
      ),
    );
    for (const res of responses) statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
    if (wave === 0) expectChallenge(responses[0] as (typeof responses)[number], { status: 401, error: 'invalid_token' });
  }
  expect(Object.fromEntries(statuses)).toEqual({ 401: FLOOD });
}

describe('a flood of tokens with random kids', () => {
  let keys: KeyServer;
  let slow: TestApp;
  let fast: TestApp;

  beforeAll(async () => {
    keys = await startKeyServer();
    slow = await appForKeyServer(keys, { JWKS_COOLDOWN_S: '60' });
    fast = await appForKeyServer(keys, { JWKS_COOLDOWN_S: '1' });
    const admin = keys.sign(craftedClaims({ sub: 'crafted-operator', scope: ADMIN_SCOPE }));
    await seedTools(slow.app, admin, [seed('calculator')]);
    await seedTools(fast.app, admin, [seed('calculator')]);
  });

  afterAll(async () => {
    await slow?.close();
    await fast?.close();
    await keys?.close();
  });

  it(`${FLOOD} random kids cause at most one key fetch per cooldown (JWKS_COOLDOWN_S=60)`, async () => {
    const good = keys.sign(craftedClaims({ scope: 'calculator:use' }));
    expect((await slow.app.inject({ method: 'GET', url: '/', headers: bearer(good) })).statusCode).toBe(200);
    expect((await slow.app.inject({ method: 'GET', url: '/readyz' })).json().signingKeys).toBe('loaded');
    const before = keys.requests;
    const started = Date.now();
    await flood(slow.app, keys);
    const allowed = 1 + Math.floor((Date.now() - started) / 60_000);
    expect(keys.requests - before).toBeLessThanOrEqual(allowed);
    // The known key still works, and needs no fetch.
    const after = keys.requests;
    const res = await slow.app.inject({ method: 'GET', url: '/', headers: bearer(good) });
    expect(res.statusCode).toBe(200);
    expect(toolNames(res)).toEqual(['calculator']);
    expect(keys.requests).toBe(after);
  });

  it('after the cooldown a new kid is fetched (rotation works) and floods stay at one fetch per cooldown (JWKS_COOLDOWN_S=1)', async () => {
    const good = keys.sign(craftedClaims({ scope: 'calculator:use' }));
    expect((await fast.app.inject({ method: 'GET', url: '/', headers: bearer(good) })).statusCode).toBe(200);
    await sleep(1_100);
    let before = keys.requests;
    let started = Date.now();
    await flood(fast.app, keys);
    expect(keys.requests - before).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / 1_000));

    keys.rotate();
    await sleep(1_100);
    before = keys.requests;
    started = Date.now();
    await flood(fast.app, keys);
    const rotated = keys.sign(craftedClaims({ scope: 'calculator:use' }));
    const res = await fast.app.inject({ method: 'GET', url: '/', headers: bearer(rotated) });
    expect(res.statusCode, res.body).toBe(200);
    const fetches = keys.requests - before;
    expect(fetches).toBeGreaterThanOrEqual(1);
    expect(fetches).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / 1_000));
  });
});

describe('issue 28: a key replaced under the same kid', () => {
  let keys: KeyServer;
  let slow: TestApp;
  let fast: TestApp;
  // Signs with the kid the key server publishes, but with a key of its own: a forged signature.
  const { privateKey: forger } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const forged = () => rs256({ alg: 'RS256', typ: 'at+jwt', kid: keys.kid }, craftedClaims({ scope: ADMIN_SCOPE }), forger);

  beforeAll(async () => {
    keys = await startKeyServer();
    slow = await appForKeyServer(keys, { JWKS_COOLDOWN_S: '60' });
    fast = await appForKeyServer(keys, { JWKS_COOLDOWN_S: '1' });
    const admin = keys.sign(craftedClaims({ sub: 'crafted-operator', scope: ADMIN_SCOPE }));
    await seedTools(slow.app, admin, [seed('calculator')]);
    await seedTools(fast.app, admin, [seed('calculator')]);
  });

  afterAll(async () => {
    await slow?.close();
    await fast?.close();
    await keys?.close();
  });

  // First: the re-keys below leave the slow app (60 s between fetches) with the old key for a minute.
  it(`${FLOOD} forged signatures under the known kid cost at most one key fetch per cooldown (JWKS_COOLDOWN_S=60, then 1)`, async () => {
    for (const [t, cooldownMs] of [
      [slow, 60_000],
      [fast, 1_000],
    ] as const) {
      const good = keys.sign(craftedClaims({ scope: 'calculator:use' }));
      expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(good) })).statusCode).toBe(200);
      const before = keys.requests;
      const started = Date.now();
      const statuses = new Map<number, number>();
      for (let wave = 0; wave < FLOOD / 20; wave++) {
        const responses = await Promise.all(
          Array.from({ length: 20 }, () => t.app.inject({ method: 'GET', url: '/', headers: bearer(forged()) })),
        );
        for (const res of responses) statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        if (wave === 0) expectChallenge(responses[0] as (typeof responses)[number], { status: 401, error: 'invalid_token' });
      }
      expect(Object.fromEntries(statuses)).toEqual({ 401: FLOOD });
      expect(keys.requests - before).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / cooldownMs));
      // The real key still works, and needs no fetch.
      const after = keys.requests;
      expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(good) })).statusCode).toBe(200);
      expect(keys.requests).toBe(after);
    }
  });

  it('tokens signed with the new key are accepted after one fetch, without a restart; those of the old key are refused', async () => {
    const old = keys.sign(craftedClaims({ scope: 'calculator:use' }));
    expect((await fast.app.inject({ method: 'GET', url: '/', headers: bearer(old) })).statusCode).toBe(200);
    const kid = keys.kid;
    keys.rekey();
    expect(keys.kid).toBe(kid);
    await sleep(1_100);
    const before = keys.requests;
    const renewed = keys.sign(craftedClaims({ scope: 'calculator:use' }));
    const res = await fast.app.inject({ method: 'GET', url: '/', headers: bearer(renewed) });
    expect(res.statusCode, res.body).toBe(200);
    expect(toolNames(res)).toEqual(['calculator']);
    expect(keys.requests - before).toBe(1);
    // The old key left the set: its token, accepted (and cached) a moment ago, is refused now.
    expectChallenge(await fast.app.inject({ method: 'GET', url: '/', headers: bearer(old) }), { status: 401, error: 'invalid_token' });
    expect((await fast.app.inject({ method: 'GET', url: '/', headers: bearer(renewed) })).statusCode).toBe(200);

    // Tokens that come another way (announcements) follow a re-key the same way.
    keys.rekey();
    await sleep(1_100);
    const announced = keys.sign(craftedClaims({ sub: 'announcer', scope: 'registry:announce' }));
    expect(await fast.app.verifyToken(announced)).toMatchObject({ kind: 'token', sub: 'announcer' });
  });
});

describe('issue 28: /readyz while the signing keys cannot be fetched', () => {
  let keys: KeyServer;
  let t: TestApp | undefined;

  afterAll(async () => {
    await t?.close();
    await keys?.close();
  });

  it('is 503 saying why while the key endpoint is down, starts fetches itself (once per cooldown), and is ready once keys load', async () => {
    keys = await startKeyServer();
    keys.down = true;
    t = await appForKeyServer(keys, { JWKS_COOLDOWN_S: '1' });
    const app = t.app;
    const readyz = () => app.inject({ method: 'GET', url: '/readyz' });
    // The startup fetch fails.
    let res = await readyz();
    for (
      let i = 0;
      i < 50 && res.json().detail === 'the signing keys have not been fetched yet; every token is refused with 401 until they are';
      i++
    ) {
      await sleep(20);
      res = await readyz();
    }
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({
      code: 'TR_ERR_UNAVAILABLE',
      signingKeys: 'unavailable',
      detail: `fetching the signing keys failed: ${keys.jwksUrl} answered 503; every token is refused with 401 until they are`,
    });
    const token = keys.sign(craftedClaims({ scope: 'calculator:use' }));
    expectChallenge(await app.inject({ method: 'GET', url: '/', headers: bearer(token) }), { status: 401, error: 'invalid_token' });
    // A flood of probes costs at most one fetch per cooldown.
    const before = keys.requests;
    const started = Date.now();
    const probes = await Promise.all(Array.from({ length: 100 }, () => readyz()));
    expect(new Set(probes.map((p) => p.statusCode))).toEqual(new Set([503]));
    expect(keys.requests - before).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / 1_000));

    // The endpoint comes back: probes alone bring the keys (no token, no 10-minute refresh needed).
    keys.down = false;
    await sleep(1_100);
    const deadline = Date.now() + 3_000;
    do {
      res = await readyz();
      if (res.statusCode === 200) break;
      await sleep(50);
    } while (Date.now() < deadline);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().signingKeys).toBe('loaded');
    expect((await app.inject({ method: 'GET', url: '/', headers: bearer(token) })).statusCode).toBe(200);
  });
});

describe('issue 28 (F7): /readyz when the key set holds no key that can verify a token', () => {
  let server: Server | undefined;
  let document: unknown;
  let jwksUrl = '';
  const apps: TestApp[] = [];

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(document));
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    jwksUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
  });

  afterAll(async () => {
    for (const t of apps) await t.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  });

  const rsaJwk = (kid: string) => ({
    ...generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' }),
    kid,
    alg: 'RS256',
    use: 'sig',
  });

  /** /readyz once the startup fetch is done (the first probes may still find no key set). */
  async function settledReadyz(app: FastifyInstance) {
    let res = await app.inject({ method: 'GET', url: '/readyz' });
    for (
      let i = 0;
      i < 50 && res.json().detail === 'the signing keys have not been fetched yet; every token is refused with 401 until they are';
      i++
    ) {
      await sleep(20);
      res = await app.inject({ method: 'GET', url: '/readyz' });
    }
    return res;
  }

  async function readyzFor(doc: unknown, settings: Record<string, string> = {}) {
    document = doc;
    const t = await appForKeyServer({ jwksUrl }, { JWKS_COOLDOWN_S: '1', ...settings });
    apps.push(t);
    return { app: t.app, res: await settledReadyz(t.app) };
  }

  const unusable = (algorithms: string) =>
    `the key set holds no key that can verify a token signed with ${algorithms} (JWT_ALGORITHMS): each is malformed, of another type or algorithm, or not for signatures; every token is refused with 401 until they are`;

  it('a key with no coordinates is no key: 503, saying why', async () => {
    const { res } = await readyzFor({ keys: [{ kty: 'EC', kid: 'x' }] });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toMatchObject({ code: 'TR_ERR_UNAVAILABLE', signingKeys: 'unavailable', detail: unusable('RS256, ES256') });
  });

  it('an EC key missing a coordinate, one not for signatures, one pinned to another algorithm: 503', async () => {
    const { x } = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    const { res } = await readyzFor({
      keys: [
        { kty: 'EC', crv: 'P-256', kid: 'no-y', x },
        { ...rsaJwk('enc'), use: 'enc' },
        { ...rsaJwk('ps'), alg: 'PS256' },
      ],
    });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toMatchObject({ signingKeys: 'unavailable', detail: unusable('RS256, ES256') });
  });

  it('keys of algorithms not in JWT_ALGORITHMS: 503; a usable key beside unusable ones: ready', async () => {
    const rsa = rsaJwk('rsa');
    const { res } = await readyzFor({ keys: [rsa] }, { JWT_ALGORITHMS: 'ES256' });
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toMatchObject({ signingKeys: 'unavailable', detail: unusable('ES256') });

    const mixed = await readyzFor({ keys: [{ kty: 'EC', kid: 'x' }, rsa] });
    expect(mixed.res.statusCode, mixed.res.body).toBe(200);
    expect(mixed.res.json().signingKeys).toBe('loaded');
  });

  it('once the server publishes a usable key, probes alone make it ready', async () => {
    const { app, res } = await readyzFor({ keys: [{ kty: 'EC', kid: 'x' }] });
    expect(res.statusCode, res.body).toBe(503);
    document = { keys: [rsaJwk('new')] };
    await sleep(1_100);
    let now = await app.inject({ method: 'GET', url: '/readyz' });
    for (const deadline = Date.now() + 3_000; now.statusCode !== 200 && Date.now() < deadline;) {
      await sleep(50);
      now = await app.inject({ method: 'GET', url: '/readyz' });
    }
    expect(now.statusCode, now.body).toBe(200);
    expect(now.json().signingKeys).toBe('loaded');
  });
});

describe('a key endpoint that never answers', () => {
  const TIMEOUT_MS = 200;
  let keys: KeyServer;
  let hanging: HangingServer;
  let viaJwksUrl: TestApp;
  let viaIssuer: TestApp;

  beforeAll(async () => {
    keys = await startKeyServer(); // only to sign tokens; the apps never see its JWKS
    hanging = await startHangingServer();
    viaJwksUrl = await appForKeyServer({ jwksUrl: `${hanging.url}/jwks` }, { JWKS_TIMEOUT_MS: String(TIMEOUT_MS), JWKS_COOLDOWN_S: '0' });
    // Discovery through the issuer's metadata, which hangs too.
    viaIssuer = await createTestApp({
      JWT_SECRET: '',
      JWT_ISSUER: hanging.url,
      RESOURCE_URL: RESOURCE,
      JWKS_TIMEOUT_MS: String(TIMEOUT_MS),
      JWKS_COOLDOWN_S: '0',
    });
  });

  afterAll(async () => {
    await viaJwksUrl?.close();
    await viaIssuer?.close();
    await hanging?.close();
    await keys?.close();
  });

  it('with JWKS_TIMEOUT_MS small, requests with an unknown kid get 401 within a bounded time (JWKS_URL)', async () => {
    const token = keys.sign(craftedClaims({ scope: 'calculator:use' }), { kid: randomUUID() });
    const started = Date.now();
    const res = await viaJwksUrl.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(Date.now() - started).toBeLessThan(2_000);
    expectChallenge(res, { status: 401, error: 'invalid_token' });
    expect(hanging.requests).toBeGreaterThanOrEqual(1);

    // Many at once are bounded too, and the server keeps answering.
    const many = Date.now();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () =>
        viaJwksUrl.app.inject({ method: 'GET', url: '/', headers: bearer(keys.sign(craftedClaims(), { kid: randomUUID() })) }),
      ),
    );
    expect(Date.now() - many).toBeLessThan(3_000);
    expect(responses.map((r) => r.statusCode)).toEqual(Array.from({ length: 20 }, () => 401));
    expect((await viaJwksUrl.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await viaJwksUrl.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
    // Not ready (issue 28): every token gets 401; the answer says why.
    const ready = await viaJwksUrl.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({
      code: 'TR_ERR_UNAVAILABLE',
      signingKeys: 'unavailable',
      detail: `fetching the signing keys failed: no answer within ${TIMEOUT_MS} ms (JWKS_TIMEOUT_MS); every token is refused with 401 until they are`,
    });
  });

  it('a hanging issuer metadata endpoint (JWT_ISSUER discovery) does not hang requests either', async () => {
    const token = keys.sign(craftedClaims({ iss: hanging.url, scope: 'calculator:use' }), { kid: randomUUID() });
    const started = Date.now();
    const res = await viaIssuer.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(Date.now() - started).toBeLessThan(2_000);
    expectChallenge(res, { status: 401, error: 'invalid_token' });
    expect((await viaIssuer.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
