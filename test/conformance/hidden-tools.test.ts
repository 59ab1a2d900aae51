/**
 * X-Hidden-Tools: a token's filtered discovery view says how many tools it hides (so an agent
 * knows to ask for more scopes); anonymous responses never carry the header.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, appForProvider, seedTools, toolNames } from './support.js';

const SEEDS = ['calculator', 'file_reader', 'database_query', 'simulation_data', 'weather_forecast'];
const ALL = [...SEEDS, 'open_tool'];

describe('X-Hidden-Tools', () => {
  let as: AuthorizationServer;
  let full: TestApp;
  let publicOnly: TestApp;

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
        { clientId: 'data-agent', scopes: ['database:read', 'simulation:read'] },
        { clientId: 'all-agent', scopes: ['calculator:use', 'file_reader:use', 'database:read', 'simulation:read', 'weather:read'] },
        // Allowed a scope no tool uses; asks for none, so its token has no scope claim at all.
        { clientId: 'bare-agent', scopes: ['profile'] },
      ],
    });
    full = await appForProvider(as);
    publicOnly = await appForProvider(as, { ANONYMOUS_DISCOVERY: 'public' });
    const admin = await as.token('operator', [ADMIN_SCOPE]);
    const tools = [...SEEDS.map((name) => seed(name)), { ...seed('calculator'), name: 'open_tool', scopes: [] }];
    await seedTools(full.app, admin, tools);
    await seedTools(publicOnly.app, admin, tools);
  });

  afterAll(async () => {
    await full?.close();
    await publicOnly?.close();
    await as?.close();
  });

  it.each([
    ['calc-agent', ['calculator:use'], ['calculator', 'open_tool']],
    ['data-agent', ['database:read', 'simulation:read'], ['database_query', 'open_tool', 'simulation_data']],
    ['bare-agent', [], ['open_tool']],
  ])('a filtered view for %s carries X-Hidden-Tools with the number hidden', async (client, scopes, expected) => {
    const res = await full.app.inject({ method: 'GET', url: '/', headers: bearer(await as.token(client, scopes)) });
    expect(res.statusCode, res.body).toBe(200);
    expect(toolNames(res)).toEqual(expected);
    expect(res.headers['x-hidden-tools']).toBe(String(ALL.length - expected.length));
  });

  it('a token that hides nothing says 0', async () => {
    const token = await as.token('all-agent', ['calculator:use', 'file_reader:use', 'database:read', 'simulation:read', 'weather:read']);
    const res = await full.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(toolNames(res)).toEqual([...ALL].sort());
    expect(res.headers['x-hidden-tools']).toBe('0');
  });

  it('anonymous responses never carry it (ANONYMOUS_DISCOVERY=full)', async () => {
    const res = await full.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(toolNames(res)).toEqual([...ALL].sort());
    expect(res.headers).not.toHaveProperty('x-hidden-tools');
  });

  it('anonymous responses never carry it, even when filtered (ANONYMOUS_DISCOVERY=public)', async () => {
    const res = await publicOnly.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    expect(toolNames(res)).toEqual(['open_tool']);
    expect(res.headers).not.toHaveProperty('x-hidden-tools');
  });
});
