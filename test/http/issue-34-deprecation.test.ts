/**
 * Issue 34: settable deprecation. PUT/DELETE /tools/{name}/deprecation, the record fields and
 * headers, validation, persistence across a restart, and the sunset that hides a tool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  admin = bearer(t.token(['registry:write']));
  for (const name of ['calculator', 'file_reader']) {
    const res = await t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: { ...seed(name), name } });
    expect(res.statusCode).toBe(201);
  }
});
afterAll(() => t.close());

const deprecate = (name: string, payload: object, headers: Record<string, string> = admin) =>
  t.app.inject({ method: 'PUT', url: `/tools/${name}/deprecation`, headers, payload });

describe('settable deprecation', () => {
  it('sets a deprecation: status, record fields, headers and a new ETag', async () => {
    const before = (await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: admin })).headers['etag'];
    const res = await deprecate('calculator', {
      sunset: '2999-01-01T01:00:00+01:00',
      replacement: 'file_reader',
      reason: 'use the new one',
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.status).toBe('deprecated');
    expect(body.deprecation).toMatchObject({ sunset: '2999-01-01T00:00:00.000Z', replacement: 'file_reader', reason: 'use the new one' });
    expect(res.headers['deprecation']).toBe(`@${Math.floor(Date.parse(body.deprecation.since) / 1000)}`);
    expect(res.headers['sunset']).toBe('Tue, 01 Jan 2999 00:00:00 GMT');
    expect(res.headers['link']).toMatch(/\/tools\/file_reader>; rel="successor-version"$/);
    expect(res.headers['etag']).not.toBe(before);

    const lookup = await t.app.inject({ method: 'GET', url: '/tools/calculator' });
    expect(lookup.statusCode).toBe(200);
    expect(lookup.json()).toMatchObject({ status: 'deprecated', deprecation: { replacement: 'file_reader' } });
    expect(lookup.headers['sunset']).toBe('Tue, 01 Jan 2999 00:00:00 GMT');
    const discovery = (await t.app.inject({ method: 'GET', url: '/' })).json();
    expect(discovery.tools.find((x: { name: string }) => x.name === 'calculator')).toMatchObject({ status: 'deprecated' });
    const exported = (await t.app.inject({ method: 'GET', url: '/?format=openai' })).json();
    const fn = exported.find((x: { function: { name: string } }) => x.function.name === 'calculator');
    expect(fn.function.description).toContain('Deprecated: use file_reader instead');
  });

  it('keeps the deprecation across re-registration and a restart, and lifts it with DELETE', async () => {
    const again = await t.app.inject({
      method: 'PUT',
      url: '/tools/calculator',
      headers: admin,
      payload: { ...seed('calculator'), name: 'calculator' },
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().status).toBe('deprecated');
    await t.restart();
    const after = await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: admin });
    expect(after.json()).toMatchObject({ status: 'deprecated', deprecation: { replacement: 'file_reader' } });
    const lifted = await t.app.inject({ method: 'DELETE', url: '/tools/calculator/deprecation', headers: admin });
    expect(lifted.statusCode).toBe(200);
    expect(lifted.json().status).toBe('active');
    expect(lifted.json().deprecation).toBeUndefined();
    expect(lifted.headers['deprecation']).toBeUndefined();
  });

  it('refuses bad bodies, unknown tools and replacements, and callers without the admin scope', async () => {
    expect((await deprecate('nope', {})).statusCode).toBe(404);
    const missing = await deprecate('calculator', { replacement: 'nope' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().detail).toContain('replacement');
    expect((await deprecate('calculator', { replacement: 'calculator' })).statusCode).toBe(400);
    expect((await deprecate('calculator', { sunset: '2999-01-01T00:00:00' })).statusCode).toBe(400);
    expect((await deprecate('calculator', { colour: 'red' })).statusCode).toBe(400);
    expect((await deprecate('calculator', { reason: 'bad\u0007bell' })).statusCode).toBe(400);
    const reader = bearer(t.token(['tools:read']));
    expect([401, 403]).toContain((await deprecate('calculator', {}, reader)).statusCode);
    expect((await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: admin })).json().status).toBe('active');
  });

  it('drops a tool from every view at its sunset, and keeps it gone after a restart', async () => {
    const sunset = new Date(Date.now() + 1500).toISOString();
    expect((await deprecate('file_reader', { sunset })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/tools/file_reader' })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect((await t.app.inject({ method: 'GET', url: '/tools/file_reader' })).statusCode).toBe(404);
    const names = (await t.app.inject({ method: 'GET', url: '/' })).json().tools.map((x: { name: string }) => x.name);
    expect(names).not.toContain('file_reader');
    await t.restart();
    expect((await t.app.inject({ method: 'GET', url: '/tools/file_reader', headers: admin })).statusCode).toBe(404);
  });
});
