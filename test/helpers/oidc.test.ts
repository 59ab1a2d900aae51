/**
 * Tests of the in-process authorization server harness (test/helpers/oidc.ts): the tokens it
 * issues are RS256 at+jwt access tokens carrying only the granted scopes, verifiable with the
 * keys its JWKS publishes, before and after a key rotation.
 */
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RESOURCE, startAuthorizationServer, type AuthorizationServer } from './oidc.js';

interface Jwk extends JsonWebKey {
  kid?: string;
}

function decode(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [header = '', payload = ''] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

async function fetchJwks(as: AuthorizationServer): Promise<Jwk[]> {
  const response = await fetch(as.jwksUri);
  expect(response.status).toBe(200);
  return ((await response.json()) as { keys: Jwk[] }).keys;
}

function verifies(token: string, jwk: Jwk): boolean {
  const [header, payload, signature = ''] = token.split('.');
  const key = createPublicKey({ key: jwk, format: 'jwk' });
  return verify('RSA-SHA256', Buffer.from(`${header}.${payload}`), key, Buffer.from(signature, 'base64url'));
}

describe('in-process authorization server (oidc-provider)', () => {
  let as: AuthorizationServer;

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'agent', scopes: ['tools:read'] },
        { clientId: 'operator', clientSecret: 'operator-password', scopes: ['tools:read', 'tools:write', 'usage:read'] },
      ],
    });
  });

  afterAll(async () => {
    await as?.close();
  });

  it('publishes its JWKS at the jwks_uri of its discovery document', () => {
    expect(as.issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(as.jwksUri).toBe(`${as.issuer}/jwks`);
  });

  it('issues an RS256 at+jwt access token with the standard claims', async () => {
    const token = await as.token('operator', ['tools:read', 'tools:write']);
    const { header, payload } = decode(token);
    expect(header).toEqual({ alg: 'RS256', typ: 'at+jwt', kid: as.currentKid });
    expect(payload).toMatchObject({
      iss: as.issuer,
      aud: DEFAULT_RESOURCE,
      client_id: 'operator',
      sub: 'operator',
      scope: 'tools:read tools:write',
    });
    expect(typeof payload.jti).toBe('string');
    expect(typeof payload.iat).toBe('number');
    expect(payload.exp).toBe((payload.iat as number) + 3600);
  });

  it('refuses a known scope the client may not have', async () => {
    const { status, body } = await as.tokenResponse('agent', ['tools:read', 'tools:write']);
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: 'invalid_scope', scope: 'tools:write' });
    await expect(as.token('agent', ['tools:write'])).rejects.toThrow(/invalid_scope/);
  });

  it('drops requested scopes the resource server does not serve', async () => {
    const token = await as.token('agent', ['tools:read', 'made:up']);
    expect(decode(token).payload.scope).toBe('tools:read');
  });

  it('puts no scope claim in a token requested without scopes', async () => {
    const token = await as.token('operator', []);
    expect(decode(token).payload).not.toHaveProperty('scope');
  });

  it('uses the requested resource as the audience', async () => {
    const token = await as.token('agent', ['tools:read'], 'https://elsewhere.test');
    expect(decode(token).payload.aud).toBe('https://elsewhere.test');
  });

  it('refuses a client with a wrong secret', async () => {
    const response = await fetch(as.tokenEndpoint, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: 'operator', client_secret: 'wrong', resource: as.resource }),
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: 'invalid_client' });
  });

  it('signs with a key its JWKS publishes', async () => {
    const token = await as.token('agent', ['tools:read']);
    const { kid } = decode(token).header;
    const jwk = (await fetchJwks(as)).find((k) => k.kid === kid);
    expect(jwk).toBeDefined();
    expect(jwk).not.toHaveProperty('d'); // public part only
    expect(verifies(token, jwk as Jwk)).toBe(true);
  });

  it('after rotateKey(), signs new tokens with a new published key and keeps the old one published', async () => {
    const before = await as.token('agent', ['tools:read']);
    const oldKid = decode(before).header.kid;

    await as.rotateKey();
    const after = await as.token('agent', ['tools:read']);
    const newKid = decode(after).header.kid;
    expect(newKid).not.toBe(oldKid);
    expect(newKid).toBe(as.currentKid);

    const keys = await fetchJwks(as);
    const newJwk = keys.find((k) => k.kid === newKid);
    const oldJwk = keys.find((k) => k.kid === oldKid);
    expect(newJwk).toBeDefined();
    expect(oldJwk).toBeDefined();
    expect(verifies(after, newJwk as Jwk)).toBe(true);
    expect(verifies(before, oldJwk as Jwk)).toBe(true);
    expect(verifies(after, oldJwk as Jwk)).toBe(false);
    expect(decode(after).payload.iss).toBe(as.issuer);
  });

  it('rotateKey({ retireOld: true }) stops publishing the previous keys', async () => {
    const oldKid = decode(await as.token('agent', ['tools:read'])).header.kid;
    await as.rotateKey({ retireOld: true });
    const after = await as.token('agent', ['tools:read']);
    const keys = await fetchJwks(as);
    expect(keys.map((k) => k.kid)).toEqual([decode(after).header.kid]);
    expect(keys.some((k) => k.kid === oldKid)).toBe(false);
    expect(verifies(after, keys[0] as Jwk)).toBe(true);
  });
});
