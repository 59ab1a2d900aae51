/**
 * Issue 33: the full view and a tool's entry write their headers as one block built once per
 * view (or entry) and kind of caller. The blocks must hold exactly the headers each answer had
 * when they were set one by one (the 304 repeating the 200's but Content-Type), and a write must
 * give the next answer a new block, never the last view's ETag or index.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

let t: TestApp;
let admin: Record<string, string>;
let agent: Record<string, string>;

/** The headers an answer carries, less those that differ on every request. */
const fixed = (headers: Record<string, unknown>) => {
  const { date: _date, 'x-request-id': _id, 'ratelimit-reset': _reset, 'ratelimit-remaining': _left, ...rest } = headers;
  return rest;
};

beforeAll(async () => {
  t = await createTestApp({ ANONYMOUS_MAX_AGE_S: '60' });
  admin = bearer(t.token(['registry:write']));
  // Sees calculator (its scope) and the tools with no scopes; file_reader is hidden from it.
  agent = bearer(t.token(['calculator:use']));
  for (const name of ['calculator', 'file_reader']) {
    const res = await t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: { ...seed(name), name } });
    expect(res.statusCode).toBe(201);
  }
});
afterAll(() => t.close());

describe('issue 33: precomputed header blocks', () => {
  it("GET / and its 304 carry the view's headers, anonymous and with a token", async () => {
    for (const [who, headers, cacheControl] of [
      ['anonymous', {}, 'public, max-age=60'],
      ['token', agent, 'private, no-cache'],
    ] as const) {
      const ok = await t.app.inject({ method: 'GET', url: '/', headers });
      expect(ok.statusCode, who).toBe(200);
      const etag = ok.headers['etag'];
      expect(etag, who).toMatch(/^"[^"]+"$/);
      const index = ok.headers['x-registry-index'];
      expect(index, who).toMatch(/^[0-9]+$/);
      expect(fixed(ok.headers), who).toEqual({
        'x-content-type-options': 'nosniff',
        'ratelimit-limit': String(t.config.rateLimit.max),
        etag,
        'x-registry-index': index,
        ...(who === 'token' && { 'x-hidden-tools': '1' }),
        vary: 'Authorization',
        'cache-control': cacheControl,
        'content-type': 'application/json; charset=utf-8',
        'content-length': String(ok.rawPayload.length),
        connection: 'keep-alive',
      });
      // The same block again, and the 304's: the 200's but its Content-Type and length.
      const again = await t.app.inject({ method: 'GET', url: '/', headers });
      expect(fixed(again.headers), who).toEqual(fixed(ok.headers));
      const notModified = await t.app.inject({ method: 'GET', url: '/', headers: { ...headers, 'if-none-match': String(etag) } });
      expect(notModified.statusCode, who).toBe(304);
      expect(notModified.rawPayload.length, who).toBe(0);
      const { 'content-type': _type, 'content-length': _length, ...rest } = fixed(ok.headers);
      expect(fixed(notModified.headers), who).toEqual(rest);
    }
  });

  it('an export of the view has its own ETag and Content-Type in its block', async () => {
    const plain = await t.app.inject({ method: 'GET', url: '/' });
    const prompt = await t.app.inject({ method: 'GET', url: '/?format=prompt' });
    expect(prompt.statusCode).toBe(200);
    expect(prompt.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(prompt.headers['etag']).not.toBe(plain.headers['etag']);
    const notModified = await t.app.inject({
      method: 'GET',
      url: '/?format=prompt',
      headers: { 'if-none-match': String(prompt.headers['etag']) },
    });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers['content-type']).toBeUndefined();
    expect(notModified.headers['cache-control']).toBe('public, max-age=60');
  });

  it("GET /tools/{name} and its 304 carry the entry's headers, deprecation included", async () => {
    const ok = await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: agent });
    expect(ok.statusCode).toBe(200);
    const etag = String(ok.headers['etag']);
    expect(fixed(ok.headers)).toEqual({
      'x-content-type-options': 'nosniff',
      'ratelimit-limit': String(t.config.rateLimit.max),
      vary: 'Authorization',
      'cache-control': 'private, no-cache',
      'x-registry-index': ok.headers['x-registry-index'],
      etag,
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(ok.rawPayload.length),
      connection: 'keep-alive',
    });
    const notModified = await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: { ...agent, 'if-none-match': etag } });
    expect(notModified.statusCode).toBe(304);
    const { 'content-type': _type, 'content-length': _length, ...rest } = fixed(ok.headers);
    expect(fixed(notModified.headers)).toEqual(rest);

    // A deprecation is a write of the tool: a new entry, whose block has its headers.
    const deprecated = await t.app.inject({
      method: 'PUT',
      url: '/tools/calculator/deprecation',
      headers: admin,
      payload: { sunset: '2999-01-01T00:00:00.000Z', replacement: 'file_reader' },
    });
    expect(deprecated.statusCode).toBe(200);
    const after = await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: agent });
    expect(after.headers['etag']).not.toBe(etag);
    expect(Number(after.headers['x-registry-index'])).toBeGreaterThan(Number(ok.headers['x-registry-index']));
    expect(after.headers['sunset']).toBe('Tue, 01 Jan 2999 00:00:00 GMT');
    expect(after.headers['link']).toMatch(/\/tools\/file_reader>; rel="successor-version"$/);
    expect(after.headers['deprecation']).toMatch(/^@[0-9]+$/);
    const stale = await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: { ...agent, 'if-none-match': etag } });
    expect(stale.statusCode).toBe(200);
  });

  it("a write gives GET / a new block: the last view's ETag and index are not served again", async () => {
    const before = await t.app.inject({ method: 'GET', url: '/', headers: agent });
    const etag = String(before.headers['etag']);
    const res = await t.app.inject({
      method: 'PUT',
      url: '/tools/database_query',
      headers: admin,
      payload: { ...seed('database_query'), name: 'database_query' },
    });
    expect(res.statusCode).toBe(201);
    // database_query's scope is not the agent's: its view lists the same tools (maybe with the
    // same ETag, so a 304), but the view is a new one, with its own index and hidden count.
    for (const headers of [agent, { ...agent, 'if-none-match': etag }]) {
      const after = await t.app.inject({ method: 'GET', url: '/', headers });
      expect(after.headers['x-hidden-tools']).toBe('2');
      expect(Number(after.headers['x-registry-index'])).toBeGreaterThan(Number(before.headers['x-registry-index']));
    }
  });
});
