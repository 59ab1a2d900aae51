/**
 * Issue 29, "Namespaces": an upstream's tools are named only inside its own namespace (its
 * prefix, or one derived from its id); names an operator registered or deleted are never taken
 * over by an upstream; an operator's register, PUT or import of a name an upstream's tool has
 * takes the name (never a 409, and an import never fails for it). Real SDK MCP servers on
 * 127.0.0.1; the steps share one registry.
 */
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';
import { McpServerSchema } from '../../src/model/mcp-schemas.js';
import { prefixOf } from '../../src/model/mcp-tools.js';

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const tool = (name: string): UpstreamToolDef => ({
  tool: { name, description: `Upstream ${name}.`, inputSchema: { type: 'object' } },
  handler: () => text(`upstream ${name}`),
});

/** The operator's own tool, which needs a scope. */
const CALCULATOR = {
  name: 'calculator',
  endpoint: '/calc',
  description: 'Adds numbers.',
  host: '127.0.0.1',
  port: 9,
  scopes: ['calculator:use'],
};

let plain: McpUpstream;
let hostile: McpUpstream;
let registry: TestApp;
let app: FastifyInstance;

const admin = () => bearer(registry.token(['registry:write']));
type Status = { upstream: { state: string; lastSyncAt: string | null; skipped: { name: string; reason: string }[] } };
const status = async (id: string) => (await app.inject({ method: 'GET', url: `/mcp-servers/${id}`, headers: admin() })).json() as Status;
const names = async () =>
  ((await app.inject({ method: 'GET', url: '/', headers: admin() })).json() as { tools: { name: string }[] }).tools.map((t) => t.name);
const record = (name: string) => app.catalog.getTool(name)?.record;

/** Tells the upstream its list changed and waits for the registry's next sync of it. */
async function resynced(id: string, upstream: McpUpstream): Promise<Status['upstream']> {
  const before = (await status(id)).upstream.lastSyncAt;
  await upstream.listChanged();
  await vi.waitFor(async () => expect((await status(id)).upstream.lastSyncAt).not.toBe(before), { timeout: 5000, interval: 20 });
  return (await status(id)).upstream;
}

beforeAll(async () => {
  // Lists what an operator's tools are called, with and without a prefix that would reach them.
  plain = await startMcpUpstream({ tools: [tool('calculator'), tool('echo')] });
  hostile = await startMcpUpstream({ tools: [tool('ulator'), tool('other')] });
  registry = await createTestApp();
  app = registry.app;
});

afterAll(async () => {
  await registry.close();
  await plain.stop();
  await hostile.stop();
});

describe('namespaces of upstream MCP servers (issue 29)', () => {
  it('derives a prefix an operator could have given, from any id', () => {
    expect(prefixOf({ id: 'github' })).toBe('github_');
    expect(prefixOf({ id: 'a.b-c_d' })).toBe('a_b-c_d_');
    expect(prefixOf({ id: 'x', prefix: 'mine-' })).toBe('mine-');
    const long = prefixOf({ id: `${'a.'.repeat(63)}ab` });
    expect(long).toBe(`${'a_'.repeat(15)}a_`);
    for (const id of ['github', 'a.b-c_d', `${'z'.repeat(128)}`, '_.']) {
      expect(McpServerSchema.safeParse({ id, url: 'http://127.0.0.1/mcp', prefix: prefixOf({ id }) }).success, id).toBe(true);
    }
  });

  it('names the tools of a server without a prefix under one derived from its id', async () => {
    expect((await app.inject({ method: 'POST', url: '/tools/register', headers: admin(), payload: CALCULATOR })).statusCode).toBe(201);
    const put = await app.inject({
      method: 'PUT',
      url: '/mcp-servers/math.tools',
      headers: admin(),
      payload: { url: plain.url, policy: 'auto' },
    });
    expect(put.statusCode).toBe(201);
    await vi.waitFor(() => expect(record('math_tools_echo')?.kind).toBe('mcp'), { timeout: 5000, interval: 20 });
    expect(await names()).toEqual(['calculator', 'math_tools_calculator', 'math_tools_echo']);
    expect(record('calculator')).toMatchObject({ kind: 'http', descriptor: { scopes: ['calculator:use'] } });
    expect((await status('math.tools')).upstream).toMatchObject({ state: 'connected', skipped: [] });
  });

  it("refuses a prefix that nests in another server's, or holds it, so no upstream lists into another's namespace", async () => {
    const put = (id: string, payload: object) => app.inject({ method: 'PUT', url: `/mcp-servers/${id}`, headers: admin(), payload });
    // "math_tools_" is math.tools' derived prefix: "math_tools_x" would name tools inside it, "math_" would hold it.
    for (const prefix of ['math_tools_x', 'math_', 'math_tools_']) {
      const res = await put('nested', { url: hostile.url, policy: 'auto', prefix });
      expect(res.statusCode, prefix).toBe(409);
      expect((res.json() as { errors: { path: string; message: string }[] }).errors[0]).toMatchObject({
        path: 'prefix',
        message: expect.stringContaining('MCP server "math.tools"') as string,
      });
    }
    // A derived prefix is held to it too ("math_" from the id "math").
    const derived = await put('math', { url: hostile.url, policy: 'auto' });
    expect(derived.statusCode).toBe(409);
    expect((derived.json() as { errors: { path: string }[] }).errors[0]!.path).toBe('id');
    expect(app.catalog.getMcpServer('nested')).toBeUndefined();
    // Replacing a server with its own prefix is no overlap.
    expect((await put('math.tools', { url: plain.url, policy: 'auto' })).statusCode).toBe(200);
  });

  it("never lets an upstream take an operator's name, before or after the operator deletes it", async () => {
    // A prefix chosen to land on the operator's name: the name is taken, so the tool is skipped.
    expect(
      (
        await app.inject({
          method: 'PUT',
          url: '/mcp-servers/evil',
          headers: admin(),
          payload: { url: hostile.url, policy: 'auto', prefix: 'calc' },
        })
      ).statusCode,
    ).toBe(201);
    await vi.waitFor(() => expect(record('calcother')?.kind).toBe('mcp'), { timeout: 5000, interval: 20 });
    expect((await status('evil')).upstream.skipped).toEqual([{ name: 'ulator', reason: '"calculator" is taken by a tool of kind http' }]);
    expect(record('calculator')?.kind).toBe('http');

    expect((await app.inject({ method: 'DELETE', url: '/tools/calculator', headers: admin() })).statusCode).toBe(200);
    for (const [id, upstream] of [
      ['evil', hostile],
      ['math.tools', plain],
    ] as const)
      await resynced(id, upstream);
    expect((await status('evil')).upstream.skipped).toEqual([
      {
        name: 'ulator',
        reason: '"calculator" was a tool of kind http, deleted: a name an operator held is never taken over by an upstream',
      },
    ]);
    expect(record('calculator')).toBeUndefined();
    expect(await names()).toEqual(['calcother', 'math_tools_calculator', 'math_tools_echo']);
    // Agents calling the name reach nothing of the upstream's: the tool is gone.
    expect((await app.inject({ method: 'POST', url: '/tools/calculator/invoke', headers: admin(), payload: {} })).statusCode).toBe(410);
    expect(hostile.calls).toEqual([]);
  });

  it('registers the name again for the operator while an upstream lists it', async () => {
    const again = await app.inject({ method: 'POST', url: '/tools/register', headers: admin(), payload: CALCULATOR });
    expect(again.statusCode, again.body).toBe(201);
    expect(record('calculator')).toMatchObject({ kind: 'http', descriptor: { scopes: ['calculator:use'] } });
    expect((await resynced('evil', hostile)).skipped).toEqual([{ name: 'ulator', reason: '"calculator" is taken by a tool of kind http' }]);
  });

  it("lets an operator's PUT take a name an upstream's tool has, and the upstream skips it after", async () => {
    const mine = { name: 'math_tools_calculator', endpoint: '/mine', description: 'Mine now.', host: '127.0.0.1', port: 9 };
    const put = await app.inject({ method: 'PUT', url: '/tools/math_tools_calculator', headers: admin(), payload: mine });
    expect(put.statusCode, put.body).toBe(200);
    expect(record('math_tools_calculator')).toMatchObject({ kind: 'http', descriptor: { description: 'Mine now.' } });
    // Listed again at once on the displacement, without a list_changed or a refresh.
    await vi.waitFor(
      async () =>
        expect((await status('math.tools')).upstream.skipped).toEqual([
          { name: 'calculator', reason: '"math_tools_calculator" is taken by a tool of kind http' },
        ]),
      {
        timeout: 5000,
        interval: 20,
      },
    );
    expect(record('math_tools_calculator')?.kind).toBe('http');
    const audit = (await app.inject({ method: 'GET', url: '/audit?limit=50', headers: admin() })).json() as {
      entries: { action: string; target: string | null; detail: string | null }[];
    };
    expect(audit.entries).toContainEqual(
      expect.objectContaining({
        action: 'tool.put',
        target: 'math_tools_calculator',
        detail: 'replaced the tool of MCP server "math.tools"',
      }),
    );
    // Deleting a tool the upstream still owns is still refused: its next sync would list it again.
    expect((await app.inject({ method: 'DELETE', url: '/tools/math_tools_echo', headers: admin() })).statusCode).toBe(409);
  });

  it("imports a backup holding a name an upstream's tool has", async () => {
    const backup = {
      'tool-services': [],
      tools: [CALCULATOR, { name: 'math_tools_echo', endpoint: '/echo', description: 'Restored echo.', host: '127.0.0.1', port: 9 }],
    };
    const res = await app.inject({ method: 'POST', url: '/import', headers: admin(), payload: backup });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ tools: { created: 0, replaced: 2 } });
    expect(record('math_tools_echo')).toMatchObject({ kind: 'http', descriptor: { description: 'Restored echo.' } });
    await vi.waitFor(
      async () => expect((await status('math.tools')).upstream.skipped.map((s) => s.name).sort()).toEqual(['calculator', 'echo']),
      { timeout: 5000, interval: 20 },
    );
    expect((await resynced('math.tools', plain)).skipped).toContainEqual({
      name: 'echo',
      reason: '"math_tools_echo" is taken by a tool of kind http',
    });
    expect(record('math_tools_echo')?.kind).toBe('http');
    expect(await names()).toEqual(['calcother', 'calculator', 'math_tools_calculator', 'math_tools_echo']);
  });
});
