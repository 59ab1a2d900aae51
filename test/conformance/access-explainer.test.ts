/**
 * The access explainer, GET /tools/{name}/access: which scopes the tool needs, which the caller
 * holds, which are missing, the decision and a reason, for anonymous and real-token callers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, appForProvider, expectChallenge, seedTools } from './support.js';

interface Explanation {
  tool: string;
  requiredScopes: string[];
  grantedScopes: string[];
  missingScopes: string[];
  discoverable: boolean;
  decision: 'allow' | 'deny';
  reason: string;
}

describe('access explainer (GET /tools/{name}/access)', () => {
  let as: AuthorizationServer;
  let t: TestApp;

  const explain = async (name: string, token?: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/tools/${name}/access`, headers: token === undefined ? {} : bearer(token) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as Explanation;
  };

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
        { clientId: 'weather-agent', scopes: ['weather:read'] },
      ],
    });
    t = await appForProvider(as);
    await seedTools(t.app, await as.token('operator', [ADMIN_SCOPE]), [
      seed('calculator'),
      seed('weather_forecast'),
      { ...seed('file_reader'), name: 'report_builder', scopes: ['reports:read', 'reports:admin'] },
    ]);
  });

  afterAll(async () => {
    await t?.close();
    await as?.close();
  });

  it('anonymous caller: required listed, nothing granted, all missing, deny, with a reason', async () => {
    const e = await explain('calculator');
    expect(e).toMatchObject({
      tool: 'calculator',
      requiredScopes: ['calculator:use'],
      grantedScopes: [],
      missingScopes: ['calculator:use'],
      decision: 'deny',
    });
    expect(e.reason).toMatch(/\S/);
  });

  it('token with the scope: granted, nothing missing, allow, with a reason', async () => {
    const e = await explain('calculator', await as.token('calc-agent', ['calculator:use']));
    expect(e).toMatchObject({
      tool: 'calculator',
      requiredScopes: ['calculator:use'],
      grantedScopes: ['calculator:use'],
      missingScopes: [],
      discoverable: true,
      decision: 'allow',
    });
    expect(e.reason).toMatch(/\S/);
  });

  it('token without the scope: its own scopes granted, the required ones missing, deny, with a reason', async () => {
    const e = await explain('calculator', await as.token('weather-agent', ['weather:read']));
    expect(e).toMatchObject({
      tool: 'calculator',
      requiredScopes: ['calculator:use'],
      grantedScopes: ['weather:read'],
      missingScopes: ['calculator:use'],
      discoverable: false,
      decision: 'deny',
    });
    expect(e.reason).toMatch(/\S/);
  });

  it('a tool any of two scopes grants: both required, both missing for a token with neither', async () => {
    const e = await explain('report_builder', await as.token('calc-agent', ['calculator:use']));
    expect(e.requiredScopes.slice().sort()).toEqual(['reports:admin', 'reports:read']);
    expect(e.missingScopes.slice().sort()).toEqual(['reports:admin', 'reports:read']);
    expect(e.decision).toBe('deny');
  });

  it('the decision matches what invoking does (deny is 403 for that token)', async () => {
    const weather = await as.token('weather-agent', ['weather:read']);
    expect((await explain('calculator', weather)).decision).toBe('deny');
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/calculator/invoke',
      headers: bearer(weather),
      payload: { expression: '1' },
    });
    expectChallenge(res, { status: 403, error: 'insufficient_scope', scope: ['calculator:use'] });
  });

  it('an invalid token gets 401 invalid_token, not the anonymous explanation', async () => {
    const foreign = await as.token('calc-agent', ['calculator:use'], 'https://other.test');
    const res = await t.app.inject({ method: 'GET', url: '/tools/calculator/access', headers: bearer(foreign) });
    expectChallenge(res, { status: 401, error: 'invalid_token' });
  });

  it('an unknown tool is 404', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/tools/no_such_tool/access' });
    expect(res.statusCode).toBe(404);
  });
});
