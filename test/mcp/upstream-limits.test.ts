/**
 * Issue 11, the edges of registered MCP servers: descriptors refused, a tool list over its
 * bound, a call cancelled upstream at its timeout, and a registry that starts without waiting
 * for a server that is down and picks it up when it comes back.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const tool = (name: string, handler: UpstreamToolDef['handler'] = () => text(name)): UpstreamToolDef => ({
  tool: { name, description: `The ${name} tool.`, inputSchema: { type: 'object' } },
  handler,
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(
  settings: Record<string, string> = {},
  tools: UpstreamToolDef[] = [tool('one')],
): Promise<{ registry: TestApp; upstream: McpUpstream; admin: Record<string, string> }> {
  const upstream = await startMcpUpstream({ tools, pageSize: 2 });
  cleanups.push(() => upstream.stop());
  const registry = await createTestApp(settings, { keepLogs: true });
  cleanups.push(() => registry.close());
  return { registry, upstream, admin: bearer(registry.token(['registry:write'])) };
}

describe('registered MCP servers, at their edges (issue 11)', () => {
  it('refuses descriptors that do not fit', async () => {
    const { registry, upstream, admin } = await setUp();
    const put = (payload: unknown) =>
      registry.app.inject({ method: 'PUT', url: '/mcp-servers/s', headers: admin, payload: payload as object });
    const refused: [string, unknown, string][] = [
      ['a URL with a user', { url: 'http://user:pw@127.0.0.1/mcp' }, 'url'],
      ['a URL with a fragment', { url: `${upstream.url}#x` }, 'url'],
      ['another scheme', { url: 'ftp://127.0.0.1/mcp' }, 'url'],
      ['a line feed in the URL', { url: 'http://127.0.0.1/m\ncp' }, 'url'],
      ['a control character in the prefix', { url: upstream.url, policy: 'auto', prefix: 'gh\u001b' }, 'prefix'],
      ['a credential with a space', { url: upstream.url, policy: 'auto', credential: { bearer: 'a b' } }, 'credential'],
      ['a credential to keep that is not there', { url: upstream.url, policy: 'auto', credential: { set: true } }, 'credential'],
      ['an unknown field', { url: upstream.url, policy: 'auto', headers: {} }, 'headers'],
      ['a bad scope', { url: upstream.url, policy: 'auto', toolScopes: { one: ['has"quote'] } }, 'toolScopes.one.0'],
    ];
    for (const [what, payload, path] of refused) {
      const res = await put(payload);
      expect(res.statusCode, what).toBe(400);
      expect(res.json(), what).toMatchObject({
        code: 'TR_ERR_VALIDATION',
        errors: [expect.objectContaining({ path: expect.stringContaining(path) })],
      });
    }
    expect(registry.app.catalog.mcpServers()).toEqual([]);
    const agent = bearer(registry.token(['other']));
    expect(
      (await registry.app.inject({ method: 'PUT', url: '/mcp-servers/s', headers: agent, payload: { url: upstream.url, policy: 'auto' } }))
        .statusCode,
    ).toBe(403);
    expect((await registry.app.inject({ method: 'GET', url: '/mcp-servers', headers: agent })).statusCode).toBe(403);
  });

  it('stores nothing of a tool list longer than MCP_UPSTREAM_MAX_TOOLS', async () => {
    const { registry, upstream, admin } = await setUp(
      { MCP_UPSTREAM_MAX_TOOLS: '3' },
      ['a', 'b', 'c', 'd', 'e'].map((n) => tool(n)),
    );
    const put = await registry.app.inject({
      method: 'PUT',
      url: '/mcp-servers/big',
      headers: admin,
      payload: { url: upstream.url, policy: 'auto' },
    });
    expect(put.statusCode).toBe(201);
    const status = async () =>
      (
        (await registry.app.inject({ method: 'GET', url: '/mcp-servers', headers: admin })).json() as {
          mcpServers: { upstream: { lastError: string | null; tools: number; state: string } }[];
        }
      ).mcpServers[0]?.upstream;
    await vi.waitFor(async () => expect((await status())?.lastError).toMatch(/more than 3 tools \(MCP_UPSTREAM_MAX_TOOLS\)/), {
      timeout: 5000,
      interval: 20,
    });
    expect(await status()).toMatchObject({ state: 'connected', tools: 0 });
    expect(registry.app.catalog.index).toBe(Number(put.headers['x-registry-index']));
  });

  it('refuses a tool list over MCP_UPSTREAM_MAX_LIST_BYTES, and skips tools whose descriptor it refuses', async () => {
    const long = (name: string) => ({
      tool: { name, description: 'x'.repeat(400), inputSchema: { type: 'object' as const } },
      handler: () => text(name),
    });
    const escape = {
      tool: { name: 'escape', description: 'Paints \u001b[31mred', inputSchema: { type: 'object' as const } },
      handler: () => text('x'),
    };
    const { registry, upstream, admin } = await setUp({ MCP_UPSTREAM_MAX_LIST_BYTES: '1024' }, [long('a'), long('b'), long('c'), escape]);
    const status = async (id: string) =>
      (
        (await registry.app.inject({ method: 'GET', url: `/mcp-servers/${id}`, headers: admin })).json() as {
          upstream: { lastError: string | null; skipped: unknown[] };
        }
      ).upstream;
    await registry.app.inject({ method: 'PUT', url: '/mcp-servers/big', headers: admin, payload: { url: upstream.url, policy: 'auto' } });
    await vi.waitFor(async () => expect((await status('big')).lastError).toMatch(/larger than 1024 bytes/), {
      timeout: 5000,
      interval: 20,
    });

    const small = await startMcpUpstream({ tools: [tool('fine'), escape] });
    cleanups.push(() => small.stop());
    const synced = new Promise<void>((resolve) =>
      registry.app.changes.subscribe((_i, changes) => changes.some((c) => c.name === 'small_fine') && resolve()),
    );
    await registry.app.inject({ method: 'PUT', url: '/mcp-servers/small', headers: admin, payload: { url: small.url, policy: 'auto' } });
    await synced;
    // The status is the sync's, set once its write has committed (the change event may come first).
    await vi.waitFor(
      async () =>
        expect((await status('small')).skipped).toEqual([
          { name: 'escape', reason: 'description: must not contain control characters or bidirectional formatting characters' },
        ]),
      { timeout: 5000, interval: 20 },
    );
    // Named in the namespace derived from the server's id (issue 29).
    expect(registry.app.catalog.getTool('small_fine')?.record.kind).toBe('mcp');
    expect(registry.app.catalog.getTool('small_escape')).toBeUndefined();
  });

  it('cancels the upstream call when the call times out', async () => {
    let cancelled!: () => void;
    const seen = new Promise<void>((resolve) => (cancelled = resolve));
    const slow = tool(
      'slow',
      (_args, signal) =>
        new Promise((_resolve, reject) => signal.addEventListener('abort', () => (cancelled(), reject(new Error('cancelled'))))),
    );
    const { registry, upstream, admin } = await setUp({}, [slow]);
    const synced = new Promise<void>((resolve) =>
      registry.app.changes.subscribe((_i, changes) => changes.some((c) => c.name === 's_slow') && resolve()),
    );
    await registry.app.inject({
      method: 'PUT',
      url: '/mcp-servers/s',
      headers: admin,
      payload: { url: upstream.url, policy: 'auto', timeoutMs: 300 },
    });
    await synced;
    const res = await registry.app.inject({
      method: 'POST',
      url: '/tools/s_slow/invoke',
      headers: bearer(registry.token([])),
      payload: {},
    });
    expect(res.statusCode).toBe(504);
    await seen;
  });

  it('starts without waiting for a server that is down, and lists it once it is back', async () => {
    const { registry, upstream, admin } = await setUp();
    const synced = new Promise<void>((resolve) =>
      registry.app.changes.subscribe((_i, changes) => changes.some((c) => c.name === 's_one') && resolve()),
    );
    await registry.app.inject({ method: 'PUT', url: '/mcp-servers/s', headers: admin, payload: { url: upstream.url, policy: 'auto' } });
    await synced;
    await upstream.stop();
    const started = performance.now();
    const app = await registry.restart();
    expect(performance.now() - started).toBeLessThan(2000);
    // Its stored tools are listed at once; calls answer 503 until it is back.
    expect(app.catalog.getTool('s_one')?.record.kind).toBe('mcp');
    const agent = bearer(registry.token([]));
    expect((await app.inject({ method: 'POST', url: '/tools/s_one/invoke', headers: agent, payload: {} })).statusCode).toBe(503);
    await upstream.start();
    await vi.waitFor(
      async () =>
        expect((await app.inject({ method: 'POST', url: '/tools/s_one/invoke', headers: agent, payload: {} })).json()).toMatchObject({
          result: 'one',
        }),
      {
        timeout: 10_000,
        interval: 100,
      },
    );
  });
});
