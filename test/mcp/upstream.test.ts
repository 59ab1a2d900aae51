/**
 * Issue 11, "MCP servers as a tool kind": a real MCP server (the SDK's, on 127.0.0.1) is
 * registered through the registry's HTTP API; its tools show in discovery, /stats and the
 * change log, filtered by scopes; calls reach it with the server's credential; list_changed,
 * an upstream that goes down and comes back, name clashes and deletion behave; and the
 * credential is in no answer and no log line. The steps share one registry and one upstream.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Change, ChangeRecord } from '../../src/model/records.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { connect, listAll, mcpUrl } from './support.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';

const CREDENTIAL = 'upstream-secret-4f1c9e2a7b';

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });

const TOOLS: UpstreamToolDef[] = [
  {
    tool: {
      name: 'search',
      title: 'Search',
      description: 'Searches the code.',
      inputSchema: {
        type: 'object',
        properties: { query: { type: 'string', description: 'What to look for' }, limit: { type: 'integer' } },
        required: ['query'],
      },
    },
    handler: (args) => text(`found: ${String(args['query'])}`),
  },
  {
    tool: {
      name: 'stats',
      description: 'Counts things.',
      inputSchema: { type: 'object' },
      outputSchema: { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] },
    },
    handler: () => ({ ...text('{"count":42}'), structuredContent: { count: 42 } }),
  },
  {
    tool: { name: 'fail', description: 'Always fails.', inputSchema: { type: 'object' } },
    handler: () => ({ ...text('upstream says no'), isError: true }),
  },
  // Not a valid tool name once prefixed: skipped and reported.
  { tool: { name: 'Bad Name!', description: 'Skipped.', inputSchema: { type: 'object' } }, handler: () => text('never') },
];

let upstream: McpUpstream;
let registry: TestApp;
let app: FastifyInstance;
/** Every answer the registry gave in this file, to look for the credential. */
const answers: string[] = [];

async function call(options: InjectOptions) {
  const res = await app.inject(options);
  answers.push(JSON.stringify(res.headers), res.body);
  return res;
}

const admin = () => bearer(registry.token(['registry:write']));
const names = async (headers?: Record<string, string>) =>
  ((await call({ method: 'GET', url: '/', ...(headers && { headers }) })).json() as { tools: { name: string }[] }).tools.map((t) => t.name);
const status = async () =>
  (await call({ method: 'GET', url: '/mcp-servers/github', headers: admin() })).json() as {
    upstream: {
      state: string;
      tools: number;
      lastSyncAt: string | null;
      nextRefreshAt: string | null;
      skipped: { name: string; reason: string }[];
    };
  };

/** Resolves with the index of the next write whose changes pass `test` (subscribe before acting). */
function nextWrite(test: (changes: readonly Change[]) => boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error('no such write within 10 s'));
    }, 10_000);
    const off = app.changes.subscribe((index, changes) => {
      if (!test(changes)) return;
      clearTimeout(timer);
      off();
      resolve(index);
    });
  });
}
const touches =
  (name: string, op: 'upsert' | 'delete' = 'upsert') =>
  (changes: readonly Change[]) =>
    changes.some((c) => c.name === name && c.op === op);

beforeAll(async () => {
  upstream = await startMcpUpstream({ tools: TOOLS, pageSize: 2, bearer: CREDENTIAL });
  registry = await createTestApp({}, { keepLogs: true });
  app = registry.app;
});

afterAll(async () => {
  await registry.close();
  await upstream.stop();
});

/** Every change-log row of one write. */
const changesAt = (store: { changesSince(index: number, limit: number): ChangeRecord[] }, index: number) =>
  store.changesSince(index - 1, 1_000_000).filter((c) => c.index === index);

describe('an upstream MCP server as a tool kind (issue 11)', () => {
  it('lists its tools over every page, prefixed and scoped, in discovery, /stats and the change log', async () => {
    const synced = nextWrite(touches('gh_stats'));
    const put = await call({
      method: 'PUT',
      url: '/mcp-servers/github',
      headers: admin(),
      payload: {
        url: upstream.url,
        policy: 'auto',
        credential: { bearer: CREDENTIAL },
        prefix: 'gh_',
        scopes: ['gh:read'],
        toolScopes: { fail: ['gh:admin'] },
      },
    });
    expect(put.statusCode).toBe(201);
    expect(put.json()).toMatchObject({
      id: 'github',
      descriptor: { credential: { set: true }, prefix: 'gh_' },
      upstream: { state: 'connecting' },
    });
    const index = await synced;

    expect(await names(admin())).toEqual(['gh_fail', 'gh_search', 'gh_stats']);
    expect(await names(bearer(registry.token(['gh:read'])))).toEqual(['gh_search', 'gh_stats']);
    expect(await names(bearer(registry.token(['gh:admin'])))).toEqual(['gh_fail']);
    expect(await names(bearer(registry.token(['other'])))).toEqual([]);

    const entry = (await call({ method: 'GET', url: '/tools/gh_search', headers: bearer(registry.token(['gh:read'])) })).json() as Record<
      string,
      unknown
    >;
    expect(entry).toMatchObject({
      kind: 'mcp',
      description: 'Searches the code.',
      scopes: ['gh:read'],
      endpoint: '/tools/gh_search/invoke',
      parameters: { query: { type: 'string', description: 'What to look for' }, limit: { type: 'integer', required: false } },
      inputSchema: TOOLS[0]?.tool.inputSchema,
    });
    const stats = (await call({ method: 'GET', url: '/stats', headers: admin() })).json() as { tools_by_kind: Record<string, number> };
    expect(stats.tools_by_kind).toEqual({ http: 0, 'tool-service': 0, mcp: 3 });
    // One write for the whole list, in the change log the change feed replays.
    expect(
      changesAt(app.store, index)
        .map((c) => c.name)
        .sort(),
    ).toEqual(['gh_fail', 'gh_search', 'gh_stats']);

    const { upstream: state } = await status();
    expect(state).toMatchObject({
      state: 'connected',
      tools: 3,
      skipped: [{ name: 'Bad Name!', reason: expect.stringMatching(/"gh_Bad Name!" is not a valid tool name/) }],
    });
    expect(registry.logs.join('')).toContain('MCP server tools skipped');
    // The next full refresh is due within the refresh interval (MCP_UPSTREAM_REFRESH_S, 300 s by default).
    const next = Date.parse(state.nextRefreshAt ?? '');
    expect(next).toBeGreaterThan(Date.now());
    expect(next).toBeLessThanOrEqual(Date.now() + 300_000);
  });

  it('carries calls to the upstream with the server credential, never the caller token', async () => {
    const reader = registry.token(['gh:read']);
    const res = await call({ method: 'POST', url: '/tools/gh_search/invoke', headers: bearer(reader), payload: { query: 'mcp' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ tool: 'gh_search', result: 'found: mcp' });
    expect(upstream.calls.at(-1)).toEqual({ name: 'search', arguments: { query: 'mcp' } });
    expect(new Set(upstream.authorizations)).toEqual(new Set([`Bearer ${CREDENTIAL}`]));

    const structured = await call({ method: 'POST', url: '/tools/gh_stats/invoke', headers: bearer(reader) });
    expect(structured.json()).toMatchObject({ result: '{"count":42}' });

    const failed = await call({ method: 'POST', url: '/tools/gh_fail/invoke', headers: bearer(registry.token(['gh:admin'])), payload: {} });
    expect(failed.statusCode).toBe(502);
    expect(failed.json()).toMatchObject({
      code: 'TR_ERR_TOOL_SERVICE',
      serviceError: { type: 'mcp-tool-error', message: 'upstream says no' },
    });
    // Scopes are checked again at call time (the anonymous view, ANONYMOUS_DISCOVERY=full, shows it).
    const denied = await call({ method: 'POST', url: '/tools/gh_fail/invoke', headers: bearer(reader), payload: {} });
    expect(denied.statusCode).toBe(403);
    expect(upstream.calls.filter((c) => c.name === 'fail')).toHaveLength(1);
  });

  it('serves its tools through /mcp: title and outputSchema listed, structured answers and failures passed on', async () => {
    const client = await connect(await mcpUrl(app), registry.token(['gh:read', 'gh:admin']));
    try {
      const { tools } = await listAll(client.client);
      expect(tools.find((t) => t.name === 'gh_search')).toMatchObject({
        title: 'Search',
        description: 'Searches the code.',
        inputSchema: TOOLS[0]?.tool.inputSchema,
      });
      expect(tools.find((t) => t.name === 'gh_stats')).toMatchObject({ outputSchema: TOOLS[1]?.tool.outputSchema });
      // The SDK client checks structuredContent against the output schema itself.
      const stats = await client.client.callTool({ name: 'gh_stats', arguments: {} });
      expect(stats).toMatchObject({ structuredContent: { count: 42 }, content: [{ type: 'text', text: '{"count":42}' }] });
      expect(stats.isError).toBeFalsy();
      const found = await client.client.callTool({ name: 'gh_search', arguments: { query: 'via mcp' } });
      expect(found.content).toEqual([{ type: 'text', text: 'found: via mcp' }]);
      expect(upstream.calls.at(-1)).toEqual({ name: 'search', arguments: { query: 'via mcp' } });
      const failed = await client.client.callTool({ name: 'gh_fail', arguments: {} });
      expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'gh_fail failed: upstream says no' }] });
    } finally {
      await client.close();
    }
  });

  it('writes nothing when a listing finds the same tools', async () => {
    const before = app.catalog.index;
    const {
      upstream: { lastSyncAt },
    } = await status();
    await upstream.listChanged();
    await vi.waitFor(async () => expect((await status()).upstream.lastSyncAt).not.toBe(lastSyncAt), { timeout: 5000, interval: 20 });
    expect(app.catalog.index).toBe(before);
  });

  it('adds a tool the upstream adds, on list_changed', async () => {
    const added = nextWrite(touches('gh_echo'));
    await upstream.addTool({
      tool: { name: 'echo', description: 'Echoes.', inputSchema: { type: 'object', properties: { say: { type: 'string' } } } },
      handler: (args) => text(String(args['say'])),
    });
    await added;
    const res = await call({
      method: 'POST',
      url: '/tools/gh_echo/invoke',
      headers: bearer(registry.token(['gh:read'])),
      payload: { say: 'hi' },
    });
    expect(res.json()).toMatchObject({ result: 'hi' });
  });

  it('keeps its tools to the server, and reports a name another tool has', async () => {
    const httpTool = { name: 'gh_search', endpoint: '/x', description: 'Mine now.', host: '127.0.0.1', port: 9 };
    // Its next sync would list it again. (An operator's PUT or import of the name takes it over
    // instead, issue 29: test/mcp/namespaces.test.ts.)
    const refused = await call({ method: 'DELETE', url: '/tools/gh_search', headers: admin() });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({ code: 'TR_ERR_CONFLICT', mcpServer: 'github' });

    expect(
      (await call({ method: 'POST', url: '/tools/register', headers: admin(), payload: { ...httpTool, name: 'gh_clash' } })).statusCode,
    ).toBe(201);
    await upstream.addTool({ tool: { name: 'clash', description: 'Clashes.', inputSchema: { type: 'object' } }, handler: () => text('x') });
    await vi.waitFor(async () => expect((await status()).upstream.skipped.map((s) => s.name)).toContain('clash'), {
      timeout: 5000,
      interval: 20,
    });
    expect((await status()).upstream.skipped).toContainEqual({ name: 'clash', reason: '"gh_clash" is taken by a tool of kind http' });
    expect(app.catalog.getTool('gh_clash')?.record.kind).toBe('http');
  });

  it('answers 503 while the upstream is down, and comes back without a restart', async () => {
    const before = app.catalog.index;
    const reader = bearer(registry.token(['gh:read']));
    await upstream.stop();
    await vi.waitFor(async () => expect((await status()).upstream.state).toBe('down'), { timeout: 5000, interval: 20 });
    const down = await call({ method: 'POST', url: '/tools/gh_search/invoke', headers: reader, payload: { query: 'x' } });
    expect(down.statusCode).toBe(503);
    expect(down.headers['retry-after']).toBe('5');
    expect(down.json()).toMatchObject({
      code: 'TR_ERR_UPSTREAM_UNAVAILABLE',
      detail: expect.stringContaining('MCP server "github" cannot be reached now'),
    });
    // Its tools stay listed: down is a state of the connection, not of the catalogue.
    expect(await names(reader)).toContain('gh_search');

    await upstream.start();
    await vi.waitFor(async () => expect((await status()).upstream.state).toBe('connected'), { timeout: 10_000, interval: 50 });
    const back = await call({ method: 'POST', url: '/tools/gh_search/invoke', headers: reader, payload: { query: 'again' } });
    expect(back.json()).toMatchObject({ result: 'found: again' });
    // The listing after reconnecting found the same tools: nothing was written.
    expect(app.catalog.index).toBe(before);
  });

  it('renames its tools when the prefix changes, keeping the stored credential', async () => {
    const renamed = nextWrite(touches('hub_search'));
    const res = await call({
      method: 'PUT',
      url: '/mcp-servers/github',
      headers: admin(),
      payload: {
        url: upstream.url,
        policy: 'auto',
        credential: { set: true },
        prefix: 'hub_',
        scopes: ['gh:read'],
        toolScopes: { fail: ['gh:admin'] },
      },
    });
    expect(res.statusCode).toBe(200);
    const index = await renamed;
    const changes = changesAt(app.store, index);
    expect(
      changes
        .filter((c) => c.op === 'delete')
        .map((c) => c.name)
        .sort(),
    ).toEqual(['gh_echo', 'gh_fail', 'gh_search', 'gh_stats']);
    expect(
      changes
        .filter((c) => c.op === 'upsert')
        .map((c) => c.name)
        .sort(),
    ).toEqual(['hub_clash', 'hub_echo', 'hub_fail', 'hub_search', 'hub_stats']);
    expect(upstream.authorizations.every((a) => a === `Bearer ${CREDENTIAL}`)).toBe(true);
  });

  it('deletes its tools with it, in one write', async () => {
    const res = await call({ method: 'DELETE', url: '/mcp-servers/github', headers: admin() });
    expect(res.statusCode).toBe(200);
    const index = Number(res.headers['x-registry-index']);
    expect(
      changesAt(app.store, index)
        .map((c) => `${c.op} ${c.name}`)
        .sort(),
    ).toEqual(['delete hub_clash', 'delete hub_echo', 'delete hub_fail', 'delete hub_search', 'delete hub_stats']);
    expect(await names(admin())).toEqual(['gh_clash']);
    expect((await call({ method: 'GET', url: '/mcp-servers/github', headers: admin() })).statusCode).toBe(404);
    expect(
      (await call({ method: 'POST', url: '/tools/hub_search/invoke', headers: bearer(registry.token(['gh:read'])), payload: {} }))
        .statusCode,
    ).toBe(410);
  });

  it('never shows, logs, audits or exports the credential', async () => {
    await call({ method: 'GET', url: '/audit?limit=500', headers: admin() });
    await call({ method: 'GET', url: '/export', headers: admin() });
    expect(answers.length).toBeGreaterThan(40);
    for (const answer of answers) expect(answer).not.toContain(CREDENTIAL);
    expect(registry.logs.length).toBeGreaterThan(20);
    expect(registry.logs.join('\n')).not.toContain(CREDENTIAL);
  });
});
