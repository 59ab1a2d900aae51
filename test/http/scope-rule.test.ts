/**
 * Issue 30, the scope rule through real HTTP: a tool with `["a b", "c"]` needs (a AND b) OR c.
 * Tokens {a, b} and {c} see it in GET /, GET /tools/{name}, `?scope=` and /mcp tools/list and
 * may call it; {a} alone sees nothing of it and is refused with a challenge naming tokens. A
 * single-scope tool beside it behaves as before.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { connect, listAll, mcpUrl, type McpTestClient } from '../mcp/support.js';

describe('the scope rule over HTTP', () => {
  let t: TestApp;
  let toolHost: Server;
  let url: URL;
  const clients: McpTestClient[] = [];

  const names = async (scopes: string[], query = '') => {
    const res = await t.app.inject({ method: 'GET', url: `/${query}`, headers: bearer(t.token(scopes)) });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { tools: { name: string }[] }).tools.map((tool) => tool.name).sort();
  };

  beforeAll(async () => {
    toolHost = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
    await new Promise<void>((resolve) => toolHost.listen(0, '127.0.0.1', resolve));
    const port = (toolHost.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const admin = t.token(['registry:write'], { sub: 'operator' });
    const register = async (name: string, scopes: unknown[]) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: bearer(admin),
        payload: { name, endpoint: '/x', scopes, description: `The ${name} tool`, parameters: {}, host: '127.0.0.1', port },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res;
    };
    // Given as an unsorted string and an array with a repeat: stored canonically.
    await register('pets', ['b a', 'c', ['a', 'b', 'a']]);
    await register('only_a', ['a']);
    url = await mcpUrl(t.app);
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await t?.close();
    await new Promise((resolve) => toolHost?.close(resolve));
  });

  it('stores entries canonically', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/tools/pets', headers: bearer(t.token(['c'])) });
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as { scopes: string[] }).scopes).toEqual(['a b', 'c']);
  });

  it('GET / and ?scope= show the tool to {a, b} and {c}, not to {a} alone; one-scope tools are unchanged', async () => {
    expect(await names(['a', 'b'])).toEqual(['only_a', 'pets']);
    expect(await names(['c'])).toEqual(['pets']);
    expect(await names(['a'])).toEqual(['only_a']);
    expect(await names(['a', 'x'])).toEqual(['only_a']);
    expect(await names(['a', 'b'], '?scope=b')).toEqual(['pets']);
    expect(await names(['a', 'b'], '?scope=a')).toEqual(['only_a', 'pets']);
    expect(await names(['a'], '?scope=b')).toEqual([]);
    expect(await names(['c'], '?scope=c')).toEqual(['pets']);
  });

  it('GET /tools/{name} and the access explainer follow the rule', async () => {
    for (const scopes of [['a', 'b'], ['c']]) {
      const res = await t.app.inject({ method: 'GET', url: '/tools/pets', headers: bearer(t.token(scopes)) });
      expect(res.statusCode, scopes.join()).toBe(200);
    }
    const hidden = await t.app.inject({ method: 'GET', url: '/tools/pets', headers: bearer(t.token(['a'])) });
    expect(hidden.statusCode).toBe(404);
    const admin = t.token(['registry:write', 'a']);
    const access = await t.app.inject({ method: 'GET', url: '/tools/pets/access', headers: bearer(admin) });
    expect(access.statusCode, access.body).toBe(200);
    const explained = access.json() as { decision: string; missingScopes: string[]; reason: string; requiredScopes: string[] };
    expect(explained).toMatchObject({ decision: 'deny', missingScopes: ['b'], requiredScopes: ['a b', 'c'] });
    expect(explained.reason).toContain('a and b, or c');
  });

  it('calls: {a, b} and {c} may call, {a} alone is refused with a challenge of tokens', async () => {
    for (const scopes of [['a', 'b'], ['c']]) {
      const res = await t.app.inject({ method: 'POST', url: '/tools/pets/invoke', headers: bearer(t.token(scopes)), payload: {} });
      expect(res.statusCode, `${scopes.join()}: ${res.body}`).toBe(200);
    }
    // The anonymous view (default `full`) shows it, so {a} may know of it: a 403, naming tokens.
    const refused = await t.app.inject({ method: 'POST', url: '/tools/pets/invoke', headers: bearer(t.token(['a'])), payload: {} });
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.headers['www-authenticate']).toContain('scope="a b c"');
    expect((refused.json() as { detail: string }).detail).toContain('a and b, or c');
  });

  it('/mcp tools/list follows the rule', async () => {
    for (const [scopes, expected] of [
      [
        ['a', 'b'],
        ['only_a', 'pets'],
      ],
      [['c'], ['pets']],
      [['a'], ['only_a']],
    ] as const) {
      const c = await connect(url, t.token([...scopes], { sub: `agent-${scopes.join('-')}` }));
      clients.push(c);
      const { tools } = await listAll(c.client);
      expect(tools.map((tool) => tool.name).sort()).toEqual(expected);
    }
  });
});
