/**
 * Issue 31, `tools/list` at 10,000 tools. `MCP_PAGE_SIZE` is at most 1,000, so a client that
 * wants the whole list walks 10 pages. Two figures, each against a bare Fastify serving the same
 * bytes (bench/ceiling-server.ts) and against `GET /` answering the same number of tools:
 *
 *   first page  `tools/list` without a cursor (1,000 tools), against `GET /?limit=1000` (the
 *               first page of `GET /`, 1,000 tools) and against the ceiling serving that answer;
 *   walk        every page of the walk, the requests cycling through the 10 cursors (each page
 *               as often as the others; a cursor is pinned to a registry index, which no write
 *               moves during the runs, so the order of a walk changes nothing), counted in whole
 *               walks (10 requests each), against `GET /` of all 10,000 tools in one answer and
 *               against the ceiling serving each page's bytes by its cursor.
 *
 * One registry process of its own, seeded with the 10,000 generated HTTP tools; the lister's
 * token holds all 50 scopes and so sees all of them. Every page is checked before the runs and
 * again after them: the walk holds exactly the names `GET /` shows the same token.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { bundle, SCOPE_COUNT, scopeName, token } from './data.js';
import { loader, measureSides, type LoadSpec } from './measure.js';
import type { McpRow } from './mcp.js';
import { McpSession, viewNames } from './mcp-session.js';
import { log, opts } from './options.js';
import { importBundle, startCeiling, startRegistry, type Ceiling, type Registry } from './servers.js';

const TOOLS = 10_000;
const PAGE_SIZE = 1000;

interface Page {
  /** The cursor that asks for it (none for the first page). */
  cursor: string | undefined;
  text: string;
  headers: Headers;
  names: string[];
  next: string | undefined;
}

/** One page of `tools/list`; throws unless it is a 200 with tools. */
async function listPage(session: McpSession, cursor: string | undefined, base?: string): Promise<Page> {
  const a = await session.post(session.body('tools/list', cursor === undefined ? undefined : { cursor }), base);
  const result = a.message?.result;
  const tools = result?.['tools'];
  if (a.status !== 200 || !Array.isArray(tools)) {
    throw new Error(`MCP tools/list (cursor ${cursor ?? 'none'}) answered ${a.status}: ${JSON.stringify(a.message).slice(0, 300)}`);
  }
  const next = result?.['nextCursor'];
  return {
    cursor,
    text: a.text,
    headers: a.headers,
    names: (tools as { name?: unknown }[]).map((t) => String(t.name)),
    next: typeof next === 'string' ? next : undefined,
  };
}

/** The whole walk; throws unless its pages hold exactly `names`, PAGE_SIZE a page. */
async function walk(session: McpSession, names: readonly string[], base?: string): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const page = await listPage(session, cursor, base);
    pages.push(page);
    cursor = page.next;
  } while (cursor !== undefined && pages.length <= TOOLS / PAGE_SIZE);
  const got = pages.flatMap((p) => p.names).sort();
  const want = [...names].sort();
  if (pages.length !== TOOLS / PAGE_SIZE || got.length !== want.length || got.some((n, k) => n !== want[k])) {
    throw new Error(
      `the tools/list walk gave ${got.length} tools in ${pages.length} pages, not the ${want.length} GET / shows in ${TOOLS / PAGE_SIZE}`,
    );
  }
  return pages;
}

/** Requests that cycle through the walk's cursors, each with its own JSON-RPC id. */
function walkSpec(session: McpSession, cursors: readonly (string | undefined)[], connections: number): LoadSpec {
  const params = cursors.map((c) => (c === undefined ? '' : `,"params":${JSON.stringify({ cursor: c })}`));
  let id = 1_000_000;
  let k = 0;
  return {
    path: '/mcp',
    connections,
    method: 'POST',
    headers: session.headers(),
    expectStatus: 200,
    setupRequest: (request: autocannon.Request) => {
      request.body = `{"jsonrpc":"2.0","id":${++id},"method":"tools/list"${params[k++ % params.length] ?? ''}}`;
      return request;
    },
  };
}

const unchanged = (request: autocannon.Request): autocannon.Request => request;

/** The answer headers the ceiling repeats. */
function ceilingHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of ['content-type', 'cache-control', 'x-accel-buffering', 'mcp-session-id']) {
    const value = headers.get(name);
    if (value !== null) kept[name] = value;
  }
  return kept;
}

/** The four 10,000-tool rows of the mcp group. */
export async function mcpPageRows(): Promise<McpRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  let firstCeiling: Ceiling | undefined;
  let walkCeiling: Ceiling | undefined;
  try {
    log(`mcp: starting a registry with ${TOOLS.toLocaleString('en-US')} tools`);
    registry = await startRegistry(dir, { MCP_PAGE_SIZE: String(PAGE_SIZE), MCP_SESSIONS_PER_CALLER: '64' });
    await importBundle(registry, bundle(TOOLS));
    const { base } = registry;
    const pid = registry.child.pid;
    const lister = `Bearer ${token(
      'bench-mcp-lister',
      Array.from({ length: SCOPE_COUNT }, (_, k) => scopeName(k)),
    )}`;
    const view = await viewNames(base, lister);
    if (view.names.length !== TOOLS) throw new Error(`GET / shows the lister ${view.names.length} tools, not ${TOOLS}`);
    const firstView = await viewNames(base, lister, `?limit=${PAGE_SIZE}`);
    if (firstView.names.length !== PAGE_SIZE) throw new Error(`GET /?limit=${PAGE_SIZE} shows ${firstView.names.length} tools`);

    const session = new McpSession(base, lister);
    await session.open();
    const pages = await walk(session, view.names);
    const [first] = pages;
    if (!first) throw new Error('the walk has no first page');
    const cursors = pages.map((p) => p.cursor);
    const pageFiles = pages.map((p, k) => {
      const file = join(dir, `mcp-page-${k}.txt`);
      writeFileSync(file, p.text);
      return { cursor: p.cursor ?? null, bodyFile: file };
    });
    const headers = ceilingHeaders(first.headers);
    firstCeiling = await startCeiling(dir, 'mcp-first-page', {
      mcp: { status: 200, bodyFile: pageFiles[0]?.bodyFile ?? '', headers },
    });
    walkCeiling = await startCeiling(dir, 'mcp-walk', { mcpPages: { headers, pages: pageFiles } });
    await listPage(session, undefined, firstCeiling.base);
    await walk(session, view.names, walkCeiling.base);

    const connections = opts.readConnections;
    const listBytes = Buffer.byteLength(first.text);
    const walkBytes = pages.reduce((sum, p) => sum + Buffer.byteLength(p.text), 0);
    const rows: McpRow[] = [];
    const measure = async (
      row: Omit<McpRow, 'mcp' | 'http' | 'ratio' | 'connections'>,
      mcpSpec: LoadSpec,
      other: { base: string; pid: number | undefined; spec: LoadSpec; name: string },
      /** Requests per unit counted on each side (a walk is 10 MCP requests). */
      per: { mcp: number; other: number },
    ) => {
      const [m, h] = await measureSides(`mcp: ${row.row}`, [
        ['mcp', loader(base, mcpSpec, pid)],
        [other.name, loader(other.base, other.spec, other.pid)],
      ]);
      if (!m || !h) throw new Error('mcp: missing side');
      let note = row.note;
      try {
        await walk(session, view.names);
      } catch (err) {
        note = `after the runs: ${err instanceof Error ? err.message : String(err)}`;
        log(`mcp: ${row.row}: ${note}`);
      }
      const ratio = m.rps / per.mcp / (h.rps / per.other);
      rows.push({ ...row, connections, mcp: m, http: h, ratio, ...(note !== undefined && { note }) });
    };

    const firstSpec = session.spec('tools/list', undefined, connections);
    const tools = TOOLS.toLocaleString('en-US');
    await measure(
      {
        row: `tools/list (${tools} tools, first page of 1,000)`,
        mcpRequest: 'POST /mcp tools/list',
        httpRequest: `GET /?limit=${PAGE_SIZE}`,
        mcpBytes: listBytes,
        httpBytes: firstView.bytes,
      },
      firstSpec,
      {
        base,
        pid,
        name: 'http',
        spec: { path: `/?limit=${PAGE_SIZE}`, connections, headers: { authorization: lister }, expectStatus: 200, setupRequest: unchanged },
      },
      { mcp: 1, other: 1 },
    );
    await measure(
      {
        row: `tools/list (${tools} tools, first page of 1,000) against its ceiling`,
        mcpRequest: 'POST /mcp tools/list',
        httpRequest: 'POST /mcp, bare Fastify, same bytes',
        mcpBytes: listBytes,
        httpBytes: listBytes,
      },
      firstSpec,
      { base: firstCeiling.base, pid: firstCeiling.child.pid, name: 'ceiling', spec: firstSpec },
      { mcp: 1, other: 1 },
    );
    const walkRequests = walkSpec(session, cursors, connections);
    await measure(
      {
        row: `tools/list (${tools} tools, a whole walk of ${pages.length} pages)`,
        mcpRequest: `POST /mcp tools/list x ${pages.length}`,
        httpRequest: 'GET / (all tools, one answer)',
        mcpBytes: walkBytes,
        httpBytes: view.bytes,
        note: `req/s are requests; the ratio is walks/s (MCP req/s / ${pages.length}) to GET /s`,
      },
      walkRequests,
      {
        base,
        pid,
        name: 'http',
        spec: { path: '/', connections, headers: { authorization: lister }, expectStatus: 200, setupRequest: unchanged },
      },
      { mcp: pages.length, other: 1 },
    );
    await measure(
      {
        row: `tools/list (${tools} tools, a whole walk of ${pages.length} pages) against its ceiling`,
        mcpRequest: `POST /mcp tools/list x ${pages.length}`,
        httpRequest: `POST /mcp x ${pages.length}, bare Fastify, same bytes per cursor`,
        mcpBytes: walkBytes,
        httpBytes: walkBytes,
      },
      walkRequests,
      { base: walkCeiling.base, pid: walkCeiling.child.pid, name: 'ceiling', spec: walkSpec(session, cursors, connections) },
      { mcp: pages.length, other: pages.length },
    );
    return rows;
  } finally {
    await registry?.child.stop();
    await firstCeiling?.child.stop();
    await walkCeiling?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
