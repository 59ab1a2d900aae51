/**
 * Scopes from the claims other providers use: `scp` (a string or an array, Okta and Entra) and
 * `roles` mapped through ROLE_SCOPES. A real oidc-provider only issues `scope`, so these tokens
 * are crafted and signed with a key the registry trusts (a JWKS server of our own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import {
  ADMIN_SCOPE,
  appForKeyServer,
  craftedClaims,
  expectChallenge,
  register,
  seedTools,
  startKeyServer,
  toolNames,
  type KeyServer,
} from './support.js';

const SEEDS = ['calculator', 'file_reader', 'database_query', 'simulation_data', 'weather_forecast'];
const ROLE_SCOPES = {
  'weather-reader': 'weather:read',
  analyst: 'database:read simulation:read',
  'registry-admin': ADMIN_SCOPE,
};

describe('scopes from scp and from roles', () => {
  let keys: KeyServer;
  let mapped: TestApp;
  let unmapped: TestApp;

  const view = async (t: TestApp, claims: Record<string, unknown>) => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(keys.sign(craftedClaims(claims))) });
    expect(res.statusCode, res.body).toBe(200);
    return res;
  };

  beforeAll(async () => {
    keys = await startKeyServer();
    mapped = await appForKeyServer(keys, { ROLE_SCOPES: JSON.stringify(ROLE_SCOPES) });
    unmapped = await appForKeyServer(keys);
    const admin = keys.sign(craftedClaims({ sub: 'crafted-operator', scope: ADMIN_SCOPE }));
    for (const t of [mapped, unmapped])
      await seedTools(
        t.app,
        admin,
        SEEDS.map((name) => seed(name)),
      );
  });

  afterAll(async () => {
    await mapped?.close();
    await unmapped?.close();
    await keys?.close();
  });

  it('scp as an array grants its scopes', async () => {
    const res = await view(mapped, { scp: ['calculator:use', 'file_reader:use'] });
    expect(toolNames(res)).toEqual(['calculator', 'file_reader']);
    expect(res.headers['x-hidden-tools']).toBe('3');
  });

  it('scp as a space-separated string grants its scopes', async () => {
    const res = await view(mapped, { scp: 'calculator:use weather:read' });
    expect(toolNames(res)).toEqual(['calculator', 'weather_forecast']);
  });

  it('scp and scope are merged', async () => {
    const res = await view(mapped, { scope: 'database:read', scp: ['weather:read'] });
    expect(toolNames(res)).toEqual(['database_query', 'weather_forecast']);
  });

  it('an admin scope in an scp array allows a write', async () => {
    const res = await register(mapped.app, keys.sign(craftedClaims({ scp: [ADMIN_SCOPE] })), { ...seed('calculator'), name: 'scp_tool' });
    expect(res.statusCode, res.body).toBe(201);
  });

  it('ROLE_SCOPES maps a roles claim to scopes', async () => {
    const res = await view(mapped, { roles: ['weather-reader'] });
    expect(toolNames(res)).toEqual(['weather_forecast']);
    const analyst = await view(mapped, { roles: ['analyst', 'not-a-mapped-role'] });
    expect(toolNames(analyst)).toEqual(['database_query', 'simulation_data']);
  });

  it('a role mapped to the admin scope may write; an unmapped role may not', async () => {
    const ok = await register(mapped.app, keys.sign(craftedClaims({ roles: ['registry-admin'] })), {
      ...seed('calculator'),
      name: 'role_tool',
    });
    expect(ok.statusCode, ok.body).toBe(201);
    const refused = await register(mapped.app, keys.sign(craftedClaims({ roles: ['weather-reader'] })), {
      ...seed('calculator'),
      name: 'role_tool_2',
    });
    expectChallenge(refused, { status: 403, error: 'insufficient_scope', scope: [ADMIN_SCOPE] });
  });

  it('roles grant nothing without ROLE_SCOPES (a role name is not a scope)', async () => {
    const res = await view(unmapped, { roles: ['weather:read', 'registry-admin'] });
    expect(toolNames(res)).toEqual([]);
    const write = await register(unmapped.app, keys.sign(craftedClaims({ roles: ['registry-admin'] })), {
      ...seed('calculator'),
      name: 'role_tool',
    });
    expect(write.statusCode).toBe(403);
  });
});
