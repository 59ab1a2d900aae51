/**
 * The JWKS key source (src/auth/jwks.ts) on its own, against a fake fetch and a fake clock: the
 * parts jose's createRemoteJWKSet would not give us (a cooldown that counts failed fetches, the
 * last good keys kept when a fetch fails, discovery), and jose's key choice (alg pinned by the JWK).
 */
import { createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { JwksKeySource, type JwksOptions } from '../../src/auth/jwks.js';

interface Jwk extends Record<string, unknown> {
  kid: string;
}

// One key pair under different kids: a kid is what the source tells keys apart by.
const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

function newKey(alg = 'RS256'): { jwk: Jwk; pem: string } {
  const kid = randomUUID();
  return {
    jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' },
    pem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

const ISSUER = 'https://as.test/tenant';
const JWKS_URL = 'https://as.test/keys';

/** A fake authorization server: answers by URL, counts requests, can fail or hang. */
function fakeServer() {
  const server = {
    keys: [] as Jwk[],
    /** What to do with JWKS requests. */
    mode: 'ok' as 'ok' | 'fail' | 'hang',
    metadata: new Map<string, unknown>(),
    requests: [] as string[],
    fetch: (async (input: string | URL | Request, init?: RequestInit) => {
      const url = String(input);
      server.requests.push(url);
      if (url === JWKS_URL) {
        if (server.mode === 'fail') return new Response('down', { status: 503 });
        if (server.mode === 'hang') {
          return new Promise<Response>((_resolve, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
        }
        return Response.json({ keys: server.keys });
      }
      const metadata = server.metadata.get(url);
      return metadata === undefined ? new Response('not found', { status: 404 }) : Response.json(metadata);
    }) as typeof fetch,
  };
  return server;
}

function source(server: ReturnType<typeof fakeServer>, clock: { t: number }, options: Partial<JwksOptions> = {}) {
  return new JwksKeySource({
    jwksUrl: new URL(JWKS_URL),
    algorithms: ['RS256', 'PS256'],
    cooldownMs: 30_000,
    timeoutMs: 200,
    fetch: server.fetch,
    now: () => clock.t,
    ...options,
  });
}

/** keyFor as a promise; also says whether the answer came synchronously. */
function keyFor(
  keys: JwksKeySource,
  header: Record<string, unknown>,
): Promise<{ pem?: string; err?: Error & { code?: string }; sync: boolean }> {
  return new Promise((resolve) => {
    let sync = true;
    keys.keyFor(header, (err, pem) => resolve(err ? { err, sync } : { pem: pem ?? '', sync }));
    sync = false;
  });
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('JWKS key source', () => {
  it('gives the PEM of the key a kid names, synchronously once known', async () => {
    const server = fakeServer();
    const key = newKey();
    server.keys = [key.jwk];
    const keys = source(server, { t: 0 });
    keys.start();
    keys.close();
    const first = await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' });
    expect(createPublicKey(first.pem ?? '').equals(createPublicKey(key.pem))).toBe(true);
    const again = await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' });
    expect(again).toEqual({ pem: first.pem, sync: true });
    expect(keys.fetches).toBe(1);
  });

  it('counts failed fetches towards the cooldown: unknown kids against a failing endpoint fetch once per cooldown', async () => {
    const server = fakeServer();
    server.mode = 'fail';
    const clock = { t: 0 };
    const keys = source(server, clock);
    for (let i = 0; i < 50; i++) {
      const { err } = await keyFor(keys, { kid: randomUUID(), alg: 'RS256' });
      expect(err?.code).toBe('TR_JWT_UNKNOWN_KEY');
    }
    expect(keys.fetches).toBe(1);
    clock.t += 30_000;
    await Promise.all(Array.from({ length: 20 }, () => keyFor(keys, { kid: randomUUID(), alg: 'RS256' })));
    expect(keys.fetches).toBe(2);
  });

  it('shares one fetch among concurrent unknown kids (single-flight)', async () => {
    const server = fakeServer();
    const key = newKey();
    server.keys = [key.jwk];
    const keys = source(server, { t: 0 });
    const results = await Promise.all([...Array.from({ length: 10 }, () => keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' }))]);
    expect(results.every((r) => r.pem !== undefined)).toBe(true);
    expect(keys.fetches).toBe(1);
  });

  it('keeps the last good keys when a refresh fails, and drops retired ones after a good refresh', async () => {
    const server = fakeServer();
    const old = newKey();
    server.keys = [old.jwk];
    const clock = { t: 0 };
    const keys = source(server, clock, { refreshMs: 20 });
    keys.start();
    try {
      expect((await keyFor(keys, { kid: old.jwk.kid, alg: 'RS256' })).pem).toBeDefined();
      server.mode = 'fail';
      await settle();
      await settle();
      expect(keys.fetches).toBeGreaterThanOrEqual(2); // background refreshes ran, and failed
      expect((await keyFor(keys, { kid: old.jwk.kid, alg: 'RS256' })).pem).toBeDefined();
      // The server retires the old key: the next good refresh drops it.
      const fresh = newKey();
      server.keys = [fresh.jwk];
      server.mode = 'ok';
      await settle();
      await settle();
      expect((await keyFor(keys, { kid: fresh.jwk.kid, alg: 'RS256' })).sync).toBe(false);
      expect((await keyFor(keys, { kid: old.jwk.kid, alg: 'RS256' })).err?.code).toBe('TR_JWT_UNKNOWN_KEY');
    } finally {
      keys.close();
    }
  });

  it('issue 28: a bad signature under a known kid refetches at most once per cooldown, and says whether the set changed', async () => {
    const server = fakeServer();
    const key = newKey();
    server.keys = [key.jwk];
    const clock = { t: 0 };
    const keys = source(server, clock);
    expect((await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' })).pem).toBeDefined();
    expect(keys.fetches).toBe(1);
    // Within the cooldown: no fetch, nothing changed, whatever the number of bad signatures.
    for (let i = 0; i < 50; i++) expect(await keys.refreshAfterBadSignature(keys.version)).toBe(false);
    expect(keys.fetches).toBe(1);
    clock.t += 30_000;
    expect(await keys.refreshAfterBadSignature(keys.version)).toBe(false); // fetched: the same set
    expect(keys.fetches).toBe(2);
    // The server re-keys under the same kid; concurrent bad signatures share one fetch.
    const { publicKey: another } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    server.keys = [{ ...another.export({ format: 'jwk' }), kid: key.jwk.kid, alg: 'RS256', use: 'sig' }];
    clock.t += 30_000;
    const version = keys.version;
    expect(await Promise.all(Array.from({ length: 10 }, () => keys.refreshAfterBadSignature(version)))).toEqual(
      Array.from({ length: 10 }, () => true),
    );
    expect(keys.fetches).toBe(3);
    // A verification that began with the old set learns of the new one without a fetch.
    expect(await keys.refreshAfterBadSignature(version)).toBe(true);
    expect(keys.fetches).toBe(3);
    const rekeyed = await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' });
    expect(createPublicKey(rekeyed.pem ?? '').equals(another)).toBe(true);
  });

  it('issue 28: says why no token can be verified (none fetched yet, the last fetch failed, an empty set), fetching at most once per cooldown', async () => {
    const server = fakeServer();
    server.mode = 'fail';
    const clock = { t: 0 };
    const keys = source(server, clock);
    expect(keys.missingKeys()).toBe('the signing keys have not been fetched yet'); // and it starts a fetch
    await settle();
    expect(keys.fetches).toBe(1);
    for (let i = 0; i < 20; i++) expect(keys.missingKeys()).toBe(`fetching the signing keys failed: ${JWKS_URL} answered 503`);
    expect(keys.fetches).toBe(1);
    server.mode = 'ok';
    clock.t += 30_000;
    keys.missingKeys();
    await settle();
    expect(keys.missingKeys()).toBe('the key set holds no keys');
    server.keys = [newKey().jwk];
    clock.t += 30_000;
    keys.missingKeys();
    await settle();
    expect(keys.missingKeys()).toBeUndefined();
    expect(keys.fetches).toBe(3);
    // Keys once loaded stay when later fetches fail.
    server.mode = 'fail';
    clock.t += 30_000;
    await keys.refreshAfterBadSignature(keys.version);
    expect(keys.missingKeys()).toBeUndefined();
  });

  it('bounds a fetch by the timeout', async () => {
    const server = fakeServer();
    server.mode = 'hang';
    const keys = source(server, { t: 0 }, { timeoutMs: 100 });
    const started = Date.now();
    const { err } = await keyFor(keys, { kid: randomUUID(), alg: 'RS256' });
    expect(err?.code).toBe('TR_JWT_UNKNOWN_KEY');
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('refuses an algorithm outside the allowed list before any fetch, and one the JWK does not pin', async () => {
    const server = fakeServer();
    const key = newKey('RS256');
    server.keys = [key.jwk];
    const keys = source(server, { t: 0 });
    for (const alg of ['none', 'HS256', 'ES256', undefined]) {
      expect((await keyFor(keys, { kid: key.jwk.kid, alg })).err?.code).toBe('TR_JWT_ALGORITHM_NOT_ALLOWED');
    }
    expect(keys.fetches).toBe(0);
    // PS256 is allowed, and fits an RSA key, but this JWK says RS256.
    expect((await keyFor(keys, { kid: key.jwk.kid, alg: 'PS256' })).err?.code).toBe('TR_JWT_UNKNOWN_KEY');
    expect((await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' })).pem).toBeDefined();
  });

  it('without a kid, takes the only key, and refuses to guess among several', async () => {
    const server = fakeServer();
    const one = newKey();
    server.keys = [one.jwk];
    const clock = { t: 0 };
    const keys = source(server, clock, { cooldownMs: 0 });
    expect((await keyFor(keys, { alg: 'RS256' })).pem).toBeDefined();
    server.keys = [one.jwk, newKey().jwk];
    await keyFor(keys, { kid: randomUUID(), alg: 'RS256' }); // an unknown kid refetches
    const { err } = await keyFor(keys, { alg: 'RS256' });
    expect(err?.message).toBe('the token names no key (kid) and the key set has several');
  });

  describe('issuer discovery', () => {
    it('finds jwks_uri through OpenID Connect discovery, else RFC 8414 metadata', async () => {
      for (const url of [`${ISSUER}/.well-known/openid-configuration`, 'https://as.test/.well-known/oauth-authorization-server/tenant']) {
        const server = fakeServer();
        const key = newKey();
        server.keys = [key.jwk];
        server.metadata.set(url, { issuer: ISSUER, jwks_uri: JWKS_URL });
        const keys = source(server, { t: 0 }, { jwksUrl: undefined, issuer: ISSUER });
        expect((await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' })).pem, url).toBeDefined();
        expect(server.requests.at(-1)).toBe(JWKS_URL);
      }
    });

    it('refuses metadata naming another issuer', async () => {
      const server = fakeServer();
      const key = newKey();
      server.keys = [key.jwk];
      server.metadata.set(`${ISSUER}/.well-known/openid-configuration`, { issuer: 'https://evil.test', jwks_uri: JWKS_URL });
      const errors: unknown[] = [];
      const keys = source(server, { t: 0 }, { jwksUrl: undefined, issuer: ISSUER, onError: (err) => errors.push(err) });
      expect((await keyFor(keys, { kid: key.jwk.kid, alg: 'RS256' })).err?.code).toBe('TR_JWT_UNKNOWN_KEY');
      expect(server.requests).not.toContain(JWKS_URL);
      expect(errors).toHaveLength(1);
    });
  });
});
