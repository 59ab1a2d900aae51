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
      expect(problemOf(res)).toMatchObject({
        code: 'TR_ERR_VALIDATION',
        errors: [{ path: key, message: expect.stringContaining('expected string') }],
      });
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

  // 340,000 bad items in one list (1 MiB) raised an issue each: zod's spread of them overflowed
  // the stack (a 500 on an import, a 400 saying "Maximum call stack size exceeded" on /ag-ui),
  // or the answer listed them all (29 MB, 4 s of the event loop, from any agent's token).
  const list = (n: number, item: string) => `[${new Array(n).fill(item).join(',')}]`;
  const json = { 'content-type': 'application/json' };

  it('POST /ag-ui with a list of 340,000 bad items is a short 400 naming the list', async () => {
    for (const [body, path] of [
      [`{"threadId":"t","runId":"r","messages":${list(340_000, '""')}}`, 'messages'],
      [
        `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","toolCalls":${list(340_000, '""')}}]}`,
        'messages.0.toolCalls',
      ],
      [`{"threadId":"t","runId":"r","messages":[],"tools":${list(340_000, '0')}}`, 'tools'],
    ]) {
      const res = await t.app.inject({ method: 'POST', url: '/ag-ui', headers: { ...admin, ...json }, payload: body });
      expect(res.statusCode).toBe(400);
      expect(res.body.length).toBeLessThan(2000);
      expect(problemOf(res)).toMatchObject({ code: 'TR_ERR_BAD_REQUEST', errors: [{ path }] });
    }
  });

  it('an import item larger than BODY_LIMIT is a 400 naming it, in a bundle and in a TrustGraph dump', async () => {
    await t.app.inject({
      method: 'PUT',
      url: '/tool-services/joke',
      headers: admin,
      payload: { id: 'joke', topic: 'joke', 'config-params': ['style'] },
    });
    const tool = `{"type":"tool-service","name":"j","description":"d","service":"joke","style":${list(300_000, '"\\u0007"')}}`;
    const bundle = await t.app.inject({ method: 'POST', url: '/import', headers: { ...admin, ...json }, payload: `{"tools":[${tool}]}` });
    expect(bundle.statusCode).toBe(400);
    expect(problemOf(bundle)).toMatchObject({
      code: 'TR_ERR_BAD_REQUEST',
      errors: [{ path: 'tools.0', message: expect.stringContaining('BODY_LIMIT') }],
    });
    const dump = await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: { ...admin, ...json },
      payload: JSON.stringify({ config: { tool: { j: tool } } }),
    });
    expect(dump.statusCode).toBe(400);
    expect(problemOf(dump)).toMatchObject({
      code: 'TR_ERR_VALIDATION',
      errors: [{ path: 'config.tool.j', message: expect.stringContaining('BODY_LIMIT') }],
    });
  });

  it('a TrustGraph dump item of 20,000 nested arrays is refused for its depth, not as "Maximum call stack size exceeded"', async () => {
    const deep = `{"type":"tool-service","name":"d","x":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: { ...admin, ...json },
      payload: JSON.stringify({ config: { tool: { d: deep } } }),
    });
    expect(res.statusCode).toBe(400);
    expect(problemOf(res)).toMatchObject({
      code: 'TR_ERR_VALIDATION',
      errors: [{ path: 'config.tool.d', message: expect.stringMatching(/^nests objects and arrays more than \d+ deep$/) }],
    });
  });

  // Each bad entry raised an issue, and the answer listed the first 100 of 115,000; now the
  // walk stops at 99 and says there are more (test/hardening/bounded-issues.test.ts), and the
  // entries are counted before any is parsed.
  it('a descriptor with 115,000 bad entries is a 400 listing at most 100 of them', async () => {
    const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"${i.toString(36)}":0`).join(',')}}`;
    const style = `{"type":"tool-service","name":"j","description":"d","service":"joke","style":${list(115_000, '"\\u0007"')}}`;
    const bus = await t.app.inject({ method: 'POST', url: '/tools/register', headers: { ...admin, ...json }, payload: style });
    expect(bus.statusCode).toBe(400);
    const listed = problemOf(bus);
    expect(listed.errors).toHaveLength(100);
    expect(listed.errors?.[99]).toEqual({ path: '', message: expect.stringContaining('holds more strings or keys') });
    expect(listed.detail).toContain('(and 99 more)');
    const scopes = await t.app.inject({
      method: 'PUT',
      url: '/mcp-servers/x',
      headers: { ...admin, ...json },
      payload: `{"url":"http://127.0.0.1:1/mcp","toolScopes":${keys(115_000)}}`,
    });
    expect(scopes.statusCode).toBe(400);
    expect(problemOf(scopes).errors).toEqual([{ path: 'toolScopes', message: 'must have at most 10000 entries' }]);
  });

  it.each(['0', 'x', '//host/mcp', 'http://', 'http://[::1', 'http://a:b:c/', 'http://%zz/'])(
    'PUT /mcp-servers/{id} with url %j is a 400 naming url',
    async (url) => {
      const res = await t.app.inject({ method: 'PUT', url: '/mcp-servers/x', headers: admin, payload: { url } });
      expect(res.statusCode).toBe(400);
      expect(problemOf(res)).toMatchObject({
        code: 'TR_ERR_VALIDATION',
        errors: [{ path: 'url', message: 'must be an http:// or https:// URL' }],
      });
    },
  );
});
