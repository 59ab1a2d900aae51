/**
 * Happy paths with real tokens from an in-process oidc-provider: each client sees exactly the
 * tools its granted scopes open, an admin-scoped token writes, and a key rollover at the
 * authorization server needs no restart of the registry (a retired key stops working once the
 * registry has refetched the key set).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, appForProvider, decodeJwt, expectChallenge, register, seedTools, toolNames } from './support.js';

const SEEDS = ['calculator', 'file_reader', 'database_query', 'simulation_data', 'weather_forecast'];

describe('real tokens: discovery views and writes', () => {
  let as: AuthorizationServer;
  let t: TestApp;

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
        { clientId: 'data-agent', scopes: ['database:read', 'simulation:read'] },
        { clientId: 'field-agent', scopes: ['file_reader:use', 'weather:read'] },
      ],
    });
    t = await appForProvider(as);
    await seedTools(
      t.app,
      await as.token('operator', [ADMIN_SCOPE]),
      SEEDS.map((name) => seed(name)),
    );
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it.each([
    ['calc-agent', ['calculator:use'], ['calculator']],
    ['data-agent', ['database:read', 'simulation:read'], ['database_query', 'simulation_data']],
    ['field-agent', ['file_reader:use', 'weather:read'], ['file_reader', 'weather_forecast']],
  ])('a real token for %s sees exactly its tools', async (client, scopes, expected) => {
    const token = await as.token(client, scopes);
    expect(decodeJwt(token).payload).toMatchObject({ iss: as.issuer, sub: client, scope: scopes.join(' ') });
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    expect(toolNames(res)).toEqual(expected);
    expect(res.headers['x-hidden-tools']).toBe(String(SEEDS.length - expected.length));
  });

  it('a write with a real admin-scoped token (registry:write) succeeds', async () => {
    const admin = await as.token('operator', [ADMIN_SCOPE]);
    const descriptor = { ...seed('calculator'), name: 'unit_converter', scopes: ['calculator:use'] };
    const res = await register(t.app, admin, descriptor);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['location']).toBe('/tools/unit_converter');
    const view = await t.app.inject({ method: 'GET', url: '/', headers: bearer(await as.token('calc-agent', ['calculator:use'])) });
    expect(toolNames(view)).toEqual(['calculator', 'unit_converter']);
  });
});

describe('real tokens: signing-key rotation at the authorization server', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  /** Issued before any rotation and used (accepted, possibly cached) before the old key is retired. */
  let firstUsed: string;
  /** Issued before any rotation and never shown to the registry before the old key is retired. */
  let firstUnseen: string;

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
      ],
    });
    // No cooldown: every unknown kid may refetch the key set at once.
    t = await appForProvider(as, { JWKS_COOLDOWN_S: '0' });
    await seedTools(t.app, await as.token('operator', [ADMIN_SCOPE]), [seed('calculator')]);
    firstUsed = await as.token('calc-agent', ['calculator:use']);
    firstUnseen = await as.token('calc-agent', ['calculator:use']);
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(firstUsed) });
    expect(res.statusCode, res.body).toBe(200);
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it('after rotateKey, tokens signed with the new key verify with no restart', async () => {
    const oldKid = as.currentKid;
    await as.rotateKey();
    expect(as.currentKid).not.toBe(oldKid);
    const fresh = await as.token('calc-agent', ['calculator:use']);
    expect(decodeJwt(fresh).header['kid']).toBe(as.currentKid);
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(fresh) });
    expect(res.statusCode, res.body).toBe(200);
    expect(toolNames(res)).toEqual(['calculator']);
    // The old key is still published: tokens already issued keep working.
    expect((await t.app.inject({ method: 'GET', url: '/', headers: bearer(firstUsed) })).statusCode).toBe(200);
    // And a write with a token signed by the new key.
    const write = await register(t.app, await as.token('operator', [ADMIN_SCOPE]), seed('weather_forecast'));
    expect(write.statusCode, write.body).toBe(201);
  });

  describe('after rotateKey({ retireOld: true })', () => {
    beforeAll(async () => {
      await as.rotateKey({ retireOld: true });
      // A token with the new kid makes the registry refetch the key set, which no longer holds the old keys.
      const newest = await as.token('calc-agent', ['calculator:use']);
      const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(newest) });
      expect(res.statusCode, res.body).toBe(200);
    });

    it('a never-seen token signed by a retired key is refused once the registry has refetched', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(firstUnseen) });
      expectChallenge(res, { status: 401, error: 'invalid_token' });
    });

    it('a token accepted before is refused too once its key is retired (no stale acceptance from a cache)', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(firstUsed) });
      expectChallenge(res, { status: 401, error: 'invalid_token' });
      expect((await register(t.app, firstUsed, seed('file_reader'))).statusCode).toBe(401);
    });
  });
});
