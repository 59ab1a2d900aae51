/**
 * Issue 28, "No 5xx of our own": each 500 the write-route property suite
 * (test/fuzz/every-write-route.test.ts) or the review found, as a plain request, answered with a
 * 4xx problem that names what was wrong.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp({ DATABASE_PATH: ':memory:' });
  admin = bearer(t.token(['registry:write']));
});
afterAll(() => t.close());

const problemOf = (res: { headers: Record<string, unknown>; body: string }) => {
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  return JSON.parse(res.body) as { status: number; code: string; detail: string; errors?: { path: string; message: string }[] };
};

describe('issue 28: no 5xx of our own', () => {
  it('POST /import with no body and no content type is a 400, as every other write without a body', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/import', headers: admin });
    expect(res.statusCode).toBe(400);
    expect(problemOf(res)).toMatchObject({ code: 'TR_ERR_VALIDATION', errors: [{ path: '' }] });
  });

  it.each([
    ['/tool-services/x', 'id', { topic: 'x' }],
    ['/tools/x', 'name', { endpoint: '/x', description: 'd' }],
    ['/mcp-servers/x', 'id', { url: 'http://127.0.0.1:1/mcp' }],
  ])('PUT %s whose body %s is an object without a usable toString is a 400 naming it', async (url, key, rest) => {
    for (const value of [{ toString: [] }, { toString: null, valueOf: null }, { a: 1 }]) {
      const res = await t.app.inject({ method: 'PUT', url, headers: admin, payload: { ...rest, [key]: value } });
      expect(res.statusCode).toBe(400);
      expect(problemOf(res)).toMatchObject({ code: 'TR_ERR_VALIDATION', errors: [{ path: key, message: expect.stringContaining('expected string') }] });
    }
  });

  it('a JSON Schema holding an array of 300,000 items is a 400 naming it, not a stack overflow', async () => {
    const wide = `[${new Array(300_000).fill('0').join(',')}]`;
    const payload = `{"name":"wide","endpoint":"/x","description":"d","inputSchema":{"type":"object","enum":${wide}}}`;
    for (const [url, body] of [
      ['/tools/register', payload],
      ['/import', `{"tools":[${payload}]}`],
    ]) {
      const res = await t.app.inject({ method: 'POST', url, headers: { ...admin, 'content-type': 'application/json' }, payload: body });
      expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
      expect(problemOf(res).errors?.[0]?.path).toMatch(/^(tools\.0\.)?inputSchema/);
    }
  });

  it.each(['0', 'x', '//host/mcp', 'http://', 'http://[::1', 'http://a:b:c/', 'http://%zz/'])('PUT /mcp-servers/{id} with url %j is a 400 naming url', async (url) => {
    const res = await t.app.inject({ method: 'PUT', url: '/mcp-servers/x', headers: admin, payload: { url } });
    expect(res.statusCode).toBe(400);
    expect(problemOf(res)).toMatchObject({ code: 'TR_ERR_VALIDATION', errors: [{ path: 'url', message: 'must be an http:// or https:// URL' }] });
  });
});
