/**
 * Token cases on discovery and on a write route: each gets its documented status and
 * challenge, never 500, and the server keeps answering.
 */
import { createHmac, generateKeyPairSync } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

/** A hand-made HMAC token, for attack cases only. */
function hmacToken(header: Record<string, unknown>, payload: Record<string, unknown>, key: string | Buffer): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

async function expectStillAnswering(t: TestApp) {
  const res = await t.app.inject({ method: 'GET', url: '/healthz' });
  expect(res.statusCode).toBe(200);
}

describe('tokens with an HS256 secret, issuer and audience', () => {
  let t: TestApp;
  const good = (claims: Record<string, unknown> = {}) =>
    t.token(['calculator:use'], { iss: 'https://auth.test', aud: 'tool-registry', ...claims });

  beforeAll(async () => {
    t = await createTestApp({ JWT_ISSUER: 'https://auth.test', JWT_AUDIENCE: 'tool-registry' });
    const admin = good({ scope: 'registry:write' });
    for (const name of ['calculator', 'file_reader']) {
      expect((await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(admin), payload: seed(name) })).statusCode).toBe(
        201,
      );
    }
  });
  afterAll(() => t.close());

  it('gives the anonymous caller every tool', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.json().tools).toHaveLength(2);
  });

  it('filters the view for a valid token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(good()) });
    expect(res.statusCode).toBe(200);
    expect(res.json().tools.map((x: { name: string }) => x.name)).toEqual(['calculator']);
  });

  it('reads scopes from scope, scp and scopes, merged', async () => {
    const token = t.token([], {
      iss: 'https://auth.test',
      aud: 'tool-registry',
      scope: undefined,
      scp: ['calculator:use'],
      scopes: ['file_reader:use'],
    });
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.json().tools.map((x: { name: string }) => x.name)).toEqual(['calculator', 'file_reader']);
    const scpString = t.token([], { iss: 'https://auth.test', aud: 'tool-registry', scp: 'file_reader:use' });
    const res2 = await t.app.inject({ method: 'GET', url: '/', headers: bearer(scpString) });
    expect(res2.json().tools.map((x: { name: string }) => x.name)).toEqual(['file_reader']);
  });

  const invalid: [string, () => string][] = [
    ['an expired token', () => good({ exp: now() - 3600, iat: now() - 7200 })],
    [
      'a token with a bad signature',
      () =>
        createSigner({ key: 'another-secret-that-is-long-enough-for-hs256!!', expiresIn: 60_000 })({
          iss: 'https://auth.test',
          aud: 'tool-registry',
          scope: 'calculator:use',
        }),
    ],
    ['a token from the wrong issuer', () => good({ iss: 'https://evil.test' })],
    ['a token for the wrong audience', () => good({ aud: 'someone-else' })],
    [
      'an alg:none token',
      () =>
        `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ iss: 'https://auth.test', aud: 'tool-registry', scope: 'registry:write calculator:use', exp: now() + 600 })}.`,
    ],
    [
      'a token signed HS512 when HS256 is allowed',
      () => createSigner({ key: TEST_SECRET, algorithm: 'HS512', expiresIn: 60_000 })({ iss: 'https://auth.test', aud: 'tool-registry' }),
    ],
    [
      'a tampered payload',
      () => {
        const [h, , s] = good().split('.');
        return `${h}.${b64({ iss: 'https://auth.test', aud: 'tool-registry', scope: 'registry:write', exp: now() + 600 })}.${s}`;
      },
    ],
    ['10,000 characters of garbage', () => 'A'.repeat(10_000)],
    ['three garbage segments', () => 'abc.def.ghi'],
  ];

  it.each(invalid)('answers 401 invalid_token on discovery for %s', async (_name, make) => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(make()) });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(
      /^Bearer realm="tool-registry", resource_metadata="http:\/\/127\.0\.0\.1:8006\/\.well-known\/oauth-protected-resource", error="invalid_token", error_description="[^"]+"$/,
    );
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ status: 401, code: 'TR_ERR_INVALID_TOKEN' });
    await expectStillAnswering(t);
  });

  it.each([
    ['a sub that is an object', () => good({ sub: { id: 'x' } }), "the token's sub claim is not a string"],
    ['an iss that is a number', () => t.token(['calculator:use'], { iss: 7, aud: 'tool-registry' }), /./],
    [
      'no exp',
      () => createSigner({ key: TEST_SECRET })({ iss: 'https://auth.test', aud: 'tool-registry', scope: 'calculator:use' }),
      'the token lacks a claim this registry requires: exp, and iss or aud when it names an issuer or audience',
    ],
    [
      'no aud',
      () => createSigner({ key: TEST_SECRET, expiresIn: 60_000 })({ iss: 'https://auth.test', scope: 'calculator:use' }),
      /^the token lacks a claim this registry requires/,
    ],
  ] as const)('names what is wrong with %s in its 401', async (_name, make, description) => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(make()) });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({
      code: 'TR_ERR_INVALID_TOKEN',
      detail: typeof description === 'string' ? description : expect.stringMatching(description),
    });
  });

  it.each(invalid)('answers 401 invalid_token on a write for %s', async (_name, make) => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(make()), payload: seed('database_query') });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await t.app.inject({ method: 'GET', url: '/tools/database_query' })).statusCode).toBe(404);
  });

  it('challenges a write without a token with 401 and the admin scope, no error code', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', payload: seed('database_query') });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="tool-registry", resource_metadata="http://127.0.0.1:8006/.well-known/oauth-protected-resource", scope="registry:write"',
    );
  });

  it('answers a write by a token without the admin scope with 403 insufficient_scope', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(good()), payload: seed('database_query') });
    expect(res.statusCode).toBe(403);
    expect(res.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(res.headers['www-authenticate']).toContain('scope="registry:write"');
  });

  it('answers a malformed Authorization header with 400 invalid_request', async () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b']) {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: { authorization } });
      expect(res.statusCode, authorization).toBe(400);
      expect(res.headers['www-authenticate']).toContain('error="invalid_request"');
    }
  });

  it('refuses a token in the query string', async () => {
    const res = await t.app.inject({ method: 'GET', url: `/?access_token=${good()}` });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
  });
});

describe('tokens with an RS256 public key', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ JWT_SECRET: '', JWT_PUBLIC_KEY: publicPem });
  });
  afterAll(() => t.close());

  const rs256 = (claims: Record<string, unknown>) =>
    createSigner({ key: privatePem, algorithm: 'RS256', expiresIn: 600_000, header: { alg: 'RS256', typ: 'at+jwt' } })(claims);

  it('accepts an RS256 token signed with the matching private key and lets an admin write', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(rs256({ scope: 'registry:write' })),
      payload: seed('calculator'),
    });
    expect(res.statusCode, res.body).toBe(201);
    const view = await t.app.inject({ method: 'GET', url: '/', headers: bearer(rs256({ scope: 'calculator:use' })) });
    expect(view.json().tools.map((x: { name: string }) => x.name)).toEqual(['calculator']);
  });

  it('refuses HS256 signed with the RSA public key (algorithm confusion)', async () => {
    const forged = hmacToken({ alg: 'HS256', typ: 'JWT' }, { scope: 'registry:write', exp: now() + 600 }, publicPem);
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(forged), payload: seed('file_reader') });
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    const discovery = await t.app.inject({ method: 'GET', url: '/', headers: bearer(forged) });
    expect(discovery.statusCode).toBe(401);
    await expectStillAnswering(t);
  });

  it('refuses alg:none', async () => {
    const none = `${b64({ alg: 'none' })}.${b64({ scope: 'registry:write', exp: now() + 600 })}.`;
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(none) })).statusCode).toBe(401);
  });
});

describe('anonymous discovery policies', () => {
  it.each([
    ['full', 200, ['calculator', 'open_tool']],
    ['public', 200, ['open_tool']],
    ['none', 401, null],
  ] as const)('ANONYMOUS_DISCOVERY=%s', async (policy, status, expected) => {
    const t = await createTestApp({ ANONYMOUS_DISCOVERY: policy });
    try {
      const admin = bearer(t.token(['registry:write']));
      await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') });
      await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: { ...seed('calculator'), name: 'open_tool', scopes: [] },
      });
      const res = await t.app.inject({ method: 'GET', url: '/' });
      expect(res.statusCode).toBe(status);
      if (expected) expect(res.json().tools.map((x: { name: string }) => x.name)).toEqual(expected);
      else {
        expect(res.headers['www-authenticate']).toBe(
          'Bearer realm="tool-registry", resource_metadata="http://127.0.0.1:8006/.well-known/oauth-protected-resource", scope="calculator:use"',
        );
      }
      const stats = await t.app.inject({ method: 'GET', url: '/stats' });
      expect(stats.statusCode).toBe(status);
      if (expected) expect(stats.json().total_tools).toBe(expected.length);
      // A token always sees its view, whatever the anonymous policy.
      const withToken = await t.app.inject({ method: 'GET', url: '/', headers: bearer(t.token(['calculator:use'])) });
      expect(withToken.json().tools.map((x: { name: string }) => x.name)).toEqual(['calculator', 'open_tool']);
    } finally {
      await t.close();
    }
  });
});
