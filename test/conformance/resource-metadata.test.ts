/**
 * RFC 9728 protected-resource metadata at /.well-known/oauth-protected-resource: the fields a
 * client relies on, kept in step with the live catalogue, and reachable from the
 * resource_metadata URL every challenge names.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, METADATA_URL, RESOURCE, appForProvider, expectChallenge, register, seedTools } from './support.js';

function isAbsoluteUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    return new URL(value).href !== '';
  } catch {
    return false;
  }
}

const isStringArray = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');

describe('protected-resource metadata (RFC 9728)', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  let admin: string;

  const metadata = async () => {
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource' });
    expect(res.statusCode).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
    return res.json() as Record<string, unknown>;
  };

  beforeAll(async () => {
    as = await startAuthorizationServer({ clients: [{ clientId: 'operator', scopes: [ADMIN_SCOPE] }] });
    t = await appForProvider(as);
    admin = await as.token('operator', [ADMIN_SCOPE]);
    await seedTools(t.app, admin, [seed('calculator'), seed('weather_forecast')]);
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it("validates against RFC 9728's fields", async () => {
    const doc = await metadata();
    // resource: REQUIRED, a URL equal to this API's identifier, without a fragment.
    expect(isAbsoluteUrl(doc['resource'])).toBe(true);
    expect(doc['resource']).toBe(RESOURCE);
    expect(new URL(String(doc['resource'])).hash).toBe('');
    // authorization_servers: array of issuer URLs, containing the one that issues our tokens.
    expect(isStringArray(doc['authorization_servers'])).toBe(true);
    for (const issuer of doc['authorization_servers'] as string[]) expect(isAbsoluteUrl(issuer), issuer).toBe(true);
    expect(doc['authorization_servers']).toContain(as.issuer);
    // scopes_supported: array of scope strings (RFC 6749 scope-token syntax), no duplicates.
    expect(isStringArray(doc['scopes_supported'])).toBe(true);
    const scopes = doc['scopes_supported'] as string[];
    for (const s of scopes) expect(s).toMatch(/^[\x21\x23-\x5B\x5D-\x7E]+$/);
    expect(new Set(scopes).size).toBe(scopes.length);
    expect(scopes).toEqual(expect.arrayContaining(['calculator:use', 'weather:read', ADMIN_SCOPE]));
    // bearer_methods_supported: header only (no query, no body).
    expect(doc['bearer_methods_supported']).toEqual(['header']);
    // Optional members, where present, have their types.
    if ('resource_name' in doc) expect(typeof doc['resource_name']).toBe('string');
    if ('jwks_uri' in doc) expect(isAbsoluteUrl(doc['jwks_uri'])).toBe(true);
    if ('resource_documentation' in doc) expect(isAbsoluteUrl(doc['resource_documentation'])).toBe(true);
    if ('resource_signing_alg_values_supported' in doc) expect(doc['resource_signing_alg_values_supported']).not.toContain('none');
  });

  it('scopes_supported changes when a tool with a new scope is registered', async () => {
    expect((await metadata())['scopes_supported']).not.toContain('reports:read');
    const res = await register(t.app, admin, { ...seed('file_reader'), name: 'report_builder', scopes: ['reports:read'] });
    expect(res.statusCode, res.body).toBe(201);
    expect((await metadata())['scopes_supported']).toContain('reports:read');
  });

  it('the resource_metadata URL in a challenge is this document', async () => {
    const challenge = expectChallenge(await register(t.app, undefined, seed('database_query')), { status: 401, error: null });
    const url = new URL(challenge.params['resource_metadata'] ?? '');
    expect(url.href).toBe(METADATA_URL);
    const res = await t.app.inject({ method: 'GET', url: url.pathname });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(await metadata());
  });

  it('is served whatever credentials come with the request (a client with an expired token must find the AS)', async () => {
    const foreign = await as.token('operator', [ADMIN_SCOPE], 'https://other.test');
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource', headers: bearer(foreign) });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ resource: RESOURCE });
  });
});
