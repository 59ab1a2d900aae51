/**
 * Attack cases: each gets 401 invalid_token (never 500, never the anonymous view, never a
 * write), and the server keeps answering afterwards. Two registries: one trusting a real
 * oidc-provider (tokens from it are the controls and the raw material for forgeries), and one
 * trusting a JWKS server of our own, so that tokens with one bad claim can be validly signed.
 */
import { createPublicKey, generateKeyPairSync, randomBytes, randomUUID, type JsonWebKey } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import type { AuthorizationServer } from '../helpers/oidc.js';
import {
  ADMIN_SCOPE,
  RESOURCE,
  appForKeyServer,
  b64json,
  craftedClaims,
  decodeJwt,
  expectChallenge,
  expectStillServing,
  hs256,
  nowS,
  register,
  rs256,
  seedTools,
  startKeyServer,
  toolNames,
  type KeyServer,
  operatorAndCalculatorAgent,
} from './support.js';

/**
 * The token is refused on discovery (not served the anonymous view) and on a write (nothing
 * written), with 401 invalid_token; then the server still serves a good token.
 */
async function expectRefused(app: FastifyInstance, token: string, goodToken: string, goodTools: string[]): Promise<void> {
  const read = await app.inject({ method: 'GET', url: '/', headers: bearer(token) });
  expectChallenge(read, { status: 401, error: 'invalid_token' });
  expect(read.json()).toMatchObject({ code: 'TR_ERR_INVALID_TOKEN' });
  const write = await register(app, token, { ...seed('database_query'), name: 'planted_tool' });
  expectChallenge(write, { status: 401, error: 'invalid_token' });
  expect((await app.inject({ method: 'GET', url: '/tools/planted_tool' })).statusCode).toBe(404);
  await expectStillServing(app, goodToken, goodTools);
}

describe('attacks on a registry trusting a real authorization server', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  let good: string;
  let admin: string;
  const goodTools = ['calculator'];

  /** Claims a forger would like: the admin scope, for this registry, from the right issuer. */
  const wanted = () => ({
    iss: as.issuer,
    aud: RESOURCE,
    sub: 'mallory',
    client_id: 'mallory',
    iat: nowS(),
    exp: nowS() + 600,
    scope: `${ADMIN_SCOPE} calculator:use`,
  });

  beforeAll(async () => {
    ({ as, t, admin, calc: good } = await operatorAndCalculatorAgent());
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it('control: a real token is accepted and sees its tools', async () => {
    await expectStillServing(t.app, good, goodTools);
  });

  it('alg none: 401', async () => {
    const token = `${b64json({ alg: 'none', typ: 'at+jwt', kid: as.currentKid })}.${b64json(wanted())}.`;
    await expectRefused(t.app, token, good, goodTools);
    const noKid = `${b64json({ alg: 'none' })}.${b64json(wanted())}.`;
    await expectRefused(t.app, noKid, good, goodTools);
  });

  it('HS256 signed with the provider RSA public key (algorithm confusion): 401', async () => {
    const { keys } = (await (await fetch(as.jwksUri)).json()) as { keys: (JsonWebKey & { kid?: string })[] };
    const jwk = keys.find((k) => k.kid === as.currentKid);
    expect(jwk).toBeDefined();
    const publicKey = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    for (const type of ['spki', 'pkcs1'] as const) {
      const pem = publicKey.export({ type, format: 'pem' }).toString();
      for (const header of [
        { alg: 'HS256', typ: 'at+jwt', kid: as.currentKid },
        { alg: 'HS256', typ: 'JWT' },
      ]) {
        await expectRefused(t.app, hs256(header, wanted(), pem), good, goodTools);
      }
    }
  });

  it('an unknown kid: 401', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = rs256({ alg: 'RS256', typ: 'at+jwt', kid: randomUUID() }, wanted(), privateKey);
    await expectRefused(t.app, token, good, goodTools);
    // The provider's kid on a token signed with another key: a bad signature.
    const stolenKid = rs256({ alg: 'RS256', typ: 'at+jwt', kid: as.currentKid }, wanted(), privateKey);
    await expectRefused(t.app, stolenKid, good, goodTools);
  });

  it('a tampered payload (real token, payload changed, signature kept): 401', async () => {
    const [header, , signature] = good.split('.');
    const { payload } = decodeJwt(good);
    const tampered = `${header}.${b64json({ ...payload, scope: `${ADMIN_SCOPE} calculator:use` })}.${signature}`;
    await expectRefused(t.app, tampered, good, goodTools);
  });

  it('wrong aud (a real token for another resource): 401', async () => {
    const other = await as.token('operator', [ADMIN_SCOPE], 'https://other.test');
    expect(decodeJwt(other).payload['aud']).toBe('https://other.test');
    await expectRefused(t.app, other, good, goodTools);
  });

  it('a 10,000-character garbage token: 401', async () => {
    const garbage = randomBytes(7_500).toString('base64url').slice(0, 10_000);
    expect(garbage).toHaveLength(10_000);
    await expectRefused(t.app, garbage, good, goodTools);
    const dotted = `${'A'.repeat(4_000)}.${'B'.repeat(3_000)}.${'C'.repeat(2_998)}`;
    expect(dotted).toHaveLength(10_000);
    await expectRefused(t.app, dotted, good, goodTools);
  });

  it('a token in the query string (?access_token=...): 401, not accepted', async () => {
    const read = await t.app.inject({ method: 'GET', url: `/?access_token=${encodeURIComponent(good)}` });
    expectChallenge(read, { status: 401, error: 'invalid_token' });
    const write = await t.app.inject({
      method: 'POST',
      url: `/tools/register?access_token=${encodeURIComponent(admin)}`,
      payload: { ...seed('database_query'), name: 'planted_tool' },
    });
    expect(write.statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/tools/planted_tool' })).statusCode).toBe(404);
    await expectStillServing(t.app, good, goodTools);
  });
});

describe('attacks with validly signed tokens (a JWKS server of our own), strict typ', () => {
  let keys: KeyServer;
  let strict: TestApp;
  let lenient: TestApp;
  let good: string;
  const goodTools = ['calculator'];

  beforeAll(async () => {
    keys = await startKeyServer();
    strict = await appForKeyServer(keys);
    lenient = await appForKeyServer(keys, { JWT_TYP: 'at+jwt,JWT' });
    const admin = keys.sign(craftedClaims({ sub: 'crafted-operator', scope: ADMIN_SCOPE }));
    for (const app of [strict, lenient]) await seedTools(app.app, admin, [seed('calculator'), seed('weather_forecast')]);
    good = keys.sign(craftedClaims({ scope: 'calculator:use' }));
  });

  afterAll(async () => {
    await strict?.close();
    await lenient?.close();
    await keys?.close();
  });

  it('control: a crafted token with good claims, signed by a trusted key, is accepted', async () => {
    await expectStillServing(strict.app, good, goodTools);
  });

  it('expired: 401', async () => {
    const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE, iat: nowS() - 7_200, exp: nowS() - 3_600 }));
    await expectRefused(strict.app, token, good, goodTools);
  });

  it('nbf in the future: 401', async () => {
    const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE, nbf: nowS() + 3_600 }));
    await expectRefused(strict.app, token, good, goodTools);
  });

  it('wrong iss: 401', async () => {
    const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE, iss: 'https://evil.test' }));
    await expectRefused(strict.app, token, good, goodTools);
  });

  it('wrong aud, validly signed: 401', async () => {
    const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE, aud: 'https://other.test' }));
    await expectRefused(strict.app, token, good, goodTools);
  });

  // RFC 9068 section 2.2: iss and aud are required; JWT_ISSUER and the audience are checked, so a
  // token without them cannot pass those checks.
  it('no iss claim at all: 401', async () => {
    const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE, iss: undefined }));
    await expectRefused(strict.app, token, good, goodTools);
  });

  it('no aud claim at all: 401', async () => {
    const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE, aud: undefined }));
    await expectRefused(strict.app, token, good, goodTools);
  });

  it('wrong typ in strict mode (JWT_TYP default at+jwt): a typ "JWT" token is 401', async () => {
    for (const typ of ['JWT', 'application/jwt', undefined]) {
      const token = keys.sign(craftedClaims({ scope: ADMIN_SCOPE }), { typ });
      await expectRefused(strict.app, token, good, goodTools);
    }
  });

  it('JWT_TYP=at+jwt,JWT accepts the same typ "JWT" token', async () => {
    const token = keys.sign(craftedClaims({ scope: 'calculator:use' }), { typ: 'JWT' });
    const res = await lenient.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    expect(toolNames(res)).toEqual(['calculator']);
    // And still at+jwt, and still nothing else.
    expect((await lenient.app.inject({ method: 'GET', url: '/', headers: bearer(good) })).statusCode).toBe(200);
    const other = keys.sign(craftedClaims({ scope: 'calculator:use' }), { typ: 'secevent+jwt' });
    expectChallenge(await lenient.app.inject({ method: 'GET', url: '/', headers: bearer(other) }), { status: 401, error: 'invalid_token' });
  });
});
