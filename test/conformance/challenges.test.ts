/**
 * RFC 6750 challenge table, against real tokens from an in-process authorization server, on the
 * discovery route (GET /) and a write route (POST /tools/register), and the 403 row on the other
 * routes that need a scope (GET /audit, POST /tools/{name}/invoke). Every challenge carries
 * `Bearer realm="...", resource_metadata="..."`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, appForProvider, expectChallenge, protectedResourceMetadata, register, seedTools, toolNames } from './support.js';

const MALFORMED_HEADERS = [
  ['another scheme', 'Basic dXNlcjpwYXNz'],
  ['Bearer without a token', 'Bearer'],
  ['two tokens', 'Bearer abc def'],
  ['a token with characters outside b64token', 'Bearer abc,def'],
] as const;

/** A real token with its signature corrupted (the bytes of the last segment changed). */
function corruptSignature(token: string): string {
  const [h, p, s = ''] = token.split('.');
  const sig = Buffer.from(s, 'base64url');
  sig[0] = (sig[0] ?? 0) ^ 0xff;
  return `${h}.${p}.${sig.toString('base64url')}`;
}

describe('RFC 6750 challenges', () => {
  let as: AuthorizationServer;
  /** ANONYMOUS_DISCOVERY=full (default): discovery serves anonymous callers. */
  let open: TestApp;
  /** ANONYMOUS_DISCOVERY=none: discovery needs a token. */
  let closed: TestApp;
  let admin: string;
  let calc: string;

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
      ],
    });
    open = await appForProvider(as);
    closed = await appForProvider(as, { ANONYMOUS_DISCOVERY: 'none' });
    admin = await as.token('operator', [ADMIN_SCOPE]);
    calc = await as.token('calc-agent', ['calculator:use']);
    const tools = [
      seed('calculator'),
      seed('weather_forecast'),
      { ...seed('file_reader'), name: 'report_builder', scopes: ['reports:read', 'reports:admin'] },
    ];
    await seedTools(open.app, admin, tools);
    await seedTools(closed.app, admin, tools);
  });

  afterAll(async () => {
    await open?.close();
    await closed?.close();
    await as?.close();
  });

  describe('on discovery (GET /)', () => {
    it('no token where one is needed (ANONYMOUS_DISCOVERY=none): 401, no error code, scope listing what would do', async () => {
      const res = await closed.app.inject({ method: 'GET', url: '/' });
      const challenge = expectChallenge(res, { status: 401, error: null });
      expect(res.json()).toMatchObject({ code: 'TR_ERR_UNAUTHENTICATED' });
      // The scopes that would do: each one the registry serves (any of them opens a view).
      const scope = challenge.params['scope'];
      expect(challenge.params, 'the challenge must name the scopes that would do').toHaveProperty('scope');
      expect(scope?.trim()).not.toBe('');
      const supported = (await protectedResourceMetadata(closed.app))['scopes_supported'] as string[];
      for (const s of (scope ?? '').split(' ')) expect(supported).toContain(s);
    });

    it('a bad token: 401 invalid_token with error_description, even where anonymous callers are served', async () => {
      for (const t of [open, closed]) {
        const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(corruptSignature(calc)) });
        expectChallenge(res, { status: 401, error: 'invalid_token' });
        expect(res.json()).toMatchObject({ code: 'TR_ERR_INVALID_TOKEN' });
      }
    });

    it('a valid token without any tool scope is never a 403 on discovery: it gets its filtered view', async () => {
      const res = await closed.app.inject({ method: 'GET', url: '/', headers: bearer(await as.token('calc-agent', [])) });
      expect(res.statusCode).toBe(200);
      expect(toolNames(res)).toEqual([]);
      expect(res.headers['x-hidden-tools']).toBe('3');
      // The admin scope is no tool scope, but operators see the whole catalogue (issue 9).
      const operator = await closed.app.inject({ method: 'GET', url: '/', headers: bearer(admin) });
      expect(toolNames(operator)).toHaveLength(3);
      expect(operator.headers['x-hidden-tools']).toBe('0');
    });

    it.each(MALFORMED_HEADERS)('a malformed Authorization header (%s): 400 invalid_request', async (_name, authorization) => {
      for (const t of [open, closed]) {
        const res = await t.app.inject({ method: 'GET', url: '/', headers: { authorization } });
        expectChallenge(res, { status: 400, error: 'invalid_request' });
        expect(res.json()).toMatchObject({ code: 'TR_ERR_INVALID_REQUEST' });
      }
    });

    it('more than one way of sending a token (header and query string): 400 invalid_request', async () => {
      const res = await open.app.inject({ method: 'GET', url: `/?access_token=${calc}`, headers: bearer(calc) });
      expectChallenge(res, { status: 400, error: 'invalid_request' });
    });
  });

  describe('on a write (POST /tools/register)', () => {
    it('no token: 401, no error code, scope="registry:write"', async () => {
      const res = await register(open.app, undefined, seed('database_query'));
      expectChallenge(res, { status: 401, error: null, scope: [ADMIN_SCOPE] });
      expect(res.json()).toMatchObject({ code: 'TR_ERR_UNAUTHENTICATED' });
    });

    it('a bad token: 401 invalid_token with error_description, and nothing is written', async () => {
      const res = await register(open.app, corruptSignature(admin), seed('database_query'));
      expectChallenge(res, { status: 401, error: 'invalid_token' });
      expect((await open.app.inject({ method: 'GET', url: '/tools/database_query' })).statusCode).toBe(404);
    });

    it('a valid token without the admin scope: 403 insufficient_scope with scope="registry:write"', async () => {
      const res = await register(open.app, calc, seed('database_query'));
      expectChallenge(res, { status: 403, error: 'insufficient_scope', scope: [ADMIN_SCOPE] });
      expect(res.json()).toMatchObject({ code: 'TR_ERR_INSUFFICIENT_SCOPE' });
      expect((await open.app.inject({ method: 'GET', url: '/tools/database_query' })).statusCode).toBe(404);
    });

    it.each(MALFORMED_HEADERS)('a malformed Authorization header (%s): 400 invalid_request', async (_name, authorization) => {
      const res = await open.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: { authorization },
        payload: seed('database_query'),
      });
      expectChallenge(res, { status: 400, error: 'invalid_request' });
    });
  });

  describe('insufficient scope elsewhere', () => {
    it('reading the audit log without the admin scope: 403 insufficient_scope', async () => {
      const res = await open.app.inject({ method: 'GET', url: '/audit', headers: bearer(calc) });
      expectChallenge(res, { status: 403, error: 'insufficient_scope', scope: [ADMIN_SCOPE] });
    });

    it('invoking a tool any of two scopes grants: 403 with both scopes in one scope parameter', async () => {
      const res = await open.app.inject({ method: 'POST', url: '/tools/report_builder/invoke', headers: bearer(calc), payload: {} });
      expectChallenge(res, { status: 403, error: 'insufficient_scope', scope: ['reports:read', 'reports:admin'] });
    });

    it('invoking a scoped tool without a token: 401, no error code, scope names the tool scope', async () => {
      const res = await open.app.inject({ method: 'POST', url: '/tools/weather_forecast/invoke', payload: {} });
      expectChallenge(res, { status: 401, error: null, scope: ['weather:read'] });
    });
  });
});
