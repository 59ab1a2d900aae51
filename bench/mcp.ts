/**
 * Issue 11, the MCP endpoint: `tools/list` and a bridged `tools/call` over `/mcp` (Streamable
 * HTTP), each measured side by side with its plain HTTP counterpart on the same registry, with
 * the same token, connections and duration: `GET /` for the list, `POST /tools/{name}/invoke`
 * for the call. The figure is the ratio MCP / HTTP. And (issue 31) `tools/list` against its
 * ceiling: a bare Fastify (bench/ceiling-server.ts) answering `POST /mcp` with the bytes of one
 * of the registry's own answers, with the same headers, to the same requests.
 *
 * One registry process, seeded with 1,000 generated HTTP tools and one echo tool whose host is
 * bench/echo-server.ts (its own process, answers the arguments back at once). Two tokens: the
 * lister holds all 50 generated scopes (sees exactly the 1,000 generated tools, one MCP page with
 * MCP_PAGE_SIZE=1000), the caller holds only the echo tool's scope. Each opens one MCP session
 * (`initialize`, then `notifications/initialized`, with plain fetch), and every load-test request
 * on it carries its own JSON-RPC id (one session serves concurrent POSTs, but ids must differ:
 * the SDK's transport routes each answer by its request id). Each answer is checked before the
 * runs and again after them. Then the 10,000-tool rows (first page and whole walk) on a registry
 * of their own: bench/mcp-pages.ts.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { httpTool, SCOPE_COUNT, scopeName, token } from './data.js';
import { freePort, spawnNode, type Child } from './lib.js';
import { loader, measureSides, type LoadSpec, type Side } from './measure.js';
import { log, opts } from './options.js';
import { f0, f1, f2, pct, table, type Section } from './report.js';
import { mcpPageRows } from './mcp-pages.js';
import { McpSession, viewNames } from './mcp-session.js';
import { importBundle, startCeiling, startRegistry, type Ceiling, type Registry } from './servers.js';

/** Generated tools in the catalogue (and in the lister's view): one MCP page at most (1,000). */
const TOOLS = 1000;
const ECHO = 'bench_echo';
const ECHO_SCOPE = 'bench:echo';
const ECHO_ARGS = { text: 'bench echo' };
/** What the echo tool answers (its arguments as JSON), and so the text of both calls' results. */
const ECHO_TEXT = JSON.stringify(ECHO_ARGS);

export interface McpRow {
  row: string;
  /** What the MCP side sends, and the HTTP request it is compared with. */
  mcpRequest: string;
  httpRequest: string;
  /** Body bytes of one answer of each side. */
  mcpBytes: number;
  httpBytes: number;
  connections: number;
  mcp: Side;
  http: Side;
  /** MCP / HTTP throughput. */
  ratio: number;
  note?: string;
}

export interface McpResult {
  tools: number;
  rows: McpRow[];
}

/** Leaves the request as is; given to the HTTP side so both sides build requests the same way. */
const unchanged = (request: autocannon.Request): autocannon.Request => request;

async function startEcho(): Promise<{ child: Child; port: number }> {
  const port = await freePort();
  const child = spawnNode('bench/echo-server.ts', [String(port)], {});
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the echo tool did not get ready:\n${child.output()}`)), 60_000);
    child.proc.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the echo tool exited (${code}):\n${child.output()}`));
    });
  });
  return { child, port };
}

/** Throws unless `tools/list` holds exactly `names`, in one page; the answer's body bytes and text. */
async function checkList(session: McpSession, names: string[], base?: string): Promise<{ bytes: number; text: string; headers: Headers }> {
  const a = await session.post(session.body('tools/list'), base);
  const result = a.message?.result;
  const tools = result?.['tools'];
  if (a.status !== 200 || !Array.isArray(tools))
    throw new Error(`MCP tools/list answered ${a.status}: ${JSON.stringify(a.message).slice(0, 300)}`);
  if (result?.['nextCursor'] !== undefined)
    throw new Error(`MCP tools/list gave a nextCursor with ${tools.length} tools (MCP_PAGE_SIZE not applied?)`);
  const got = (tools as { name?: unknown }[]).map((t) => String(t.name)).sort();
  const want = [...names].sort();
  if (got.length !== want.length || got.some((n, k) => n !== want[k])) {
    throw new Error(`MCP tools/list holds ${got.length} tools, not the ${want.length} GET / shows the same token`);
  }
  return { bytes: a.bytes, text: a.text, headers: a.headers };
}

/** Throws unless `tools/call` of the echo tool gives back the echo text, not as an error. */
async function checkCall(session: McpSession): Promise<number> {
  const a = await session.post(session.body('tools/call', { name: ECHO, arguments: ECHO_ARGS }));
  const result = a.message?.result;
  const content = result?.['content'] as { type?: string; text?: string }[] | undefined;
  if (a.status !== 200 || !result || result['isError'] === true || content?.[0]?.text !== ECHO_TEXT) {
    throw new Error(`MCP tools/call answered ${a.status}: ${JSON.stringify(a.message).slice(0, 300)}`);
  }
  return a.bytes;
}

async function checkInvoke(base: string, authorization: string): Promise<number> {
  const res = await fetch(`${base}/tools/${ECHO}/invoke`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(ECHO_ARGS),
  });
  const text = await res.text();
  let result: unknown;
  try {
    result = (JSON.parse(text) as { result?: unknown }).result;
  } catch {
    result = undefined;
  }
  if (res.status !== 200 || result !== ECHO_TEXT)
    throw new Error(`POST /tools/${ECHO}/invoke answered ${res.status}: ${text.slice(0, 300)}`);
  return Buffer.byteLength(text);
}

export async function mcpBench(): Promise<McpResult> {
  // One registry after the other, so that neither row shares the cores with the other's server.
  const rows = await thousandToolRows();
  rows.push(...(await mcpPageRows()));
  return { tools: TOOLS, rows };
}

/** The rows on a registry of 1,000 tools: tools/list against GET / and its ceiling, tools/call against invoke. */
async function thousandToolRows(): Promise<McpRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  let echo: { child: Child; port: number } | undefined;
  let ceiling: Ceiling | undefined;
  try {
    echo = await startEcho();
    log(`mcp: starting the registry (${TOOLS} tools and ${ECHO} on 127.0.0.1:${echo.port})`);
    registry = await startRegistry(dir, { MCP_PAGE_SIZE: String(TOOLS), MCP_SESSIONS_PER_CALLER: '64' });
    const tools: Record<string, unknown>[] = Array.from({ length: TOOLS }, (_, i) => httpTool(i));
    tools.push({
      name: ECHO,
      endpoint: '/echo',
      host: '127.0.0.1',
      port: echo.port,
      // Neither path sends the caller's token to the tool: the two calls are the same on the wire.
      forwardAuthorization: false,
      scopes: [ECHO_SCOPE],
      description: 'Answers its arguments back at once',
      parameters: { text: { type: 'string', description: 'Anything' } },
    });
    await importBundle(registry, JSON.stringify({ 'tool-services': [], tools }));
    const base = registry.base;
    const pid = registry.child.pid;

    const lister = `Bearer ${token(
      'bench-mcp-lister',
      Array.from({ length: SCOPE_COUNT }, (_, k) => scopeName(k)),
    )}`;
    const caller = `Bearer ${token('bench-mcp-caller', [ECHO_SCOPE])}`;

    const view = await viewNames(base, lister);
    if (view.names.length !== TOOLS) throw new Error(`GET / shows the lister ${view.names.length} tools, not ${TOOLS}`);
    const listSession = new McpSession(base, lister);
    await listSession.open();
    const callSession = new McpSession(base, caller);
    await callSession.open();
    const listed = await checkList(listSession, view.names);
    const listBytes = listed.bytes;
    // The ceiling: a bare Fastify answering POST /mcp with the bytes of one such answer, and its headers.
    writeFileSync(join(dir, 'mcp-list.txt'), listed.text);
    const ceilingHeaders: Record<string, string> = {};
    for (const name of ['content-type', 'cache-control', 'x-accel-buffering', 'mcp-session-id']) {
      const value = listed.headers.get(name);
      if (value !== null) ceilingHeaders[name] = value;
    }
    ceiling = await startCeiling(dir, 'mcp-ceiling', {
      mcp: { status: 200, bodyFile: join(dir, 'mcp-list.txt'), headers: ceilingHeaders },
    });
    const ceilingBytes = (await checkList(listSession, view.names, ceiling.base)).bytes;
    const callBytes = await checkCall(callSession);
    const invokeBytes = await checkInvoke(base, caller);

    const rows: McpRow[] = [];
    const measure = async (
      row: Omit<McpRow, 'mcp' | 'http' | 'ratio' | 'note'>,
      mcpSpec: LoadSpec,
      httpSpec: LoadSpec,
      recheck: () => Promise<unknown>,
      other: { base: string; pid: number | undefined } = { base, pid },
    ) => {
      const [m, h] = await measureSides(`mcp: ${row.row}`, [
        ['mcp', loader(base, mcpSpec, pid)],
        [other.base === base ? 'http' : 'ceiling', loader(other.base, httpSpec, other.pid)],
      ]);
      if (!m || !h) throw new Error('mcp: missing side');
      // The session still answers right after the runs (not ended, not mixed up).
      let note: string | undefined;
      try {
        await recheck();
      } catch (err) {
        note = `after the runs: ${err instanceof Error ? err.message : String(err)}`;
        log(`mcp: ${row.row}: ${note}`);
      }
      rows.push({ ...row, mcp: m, http: h, ratio: m.rps / h.rps, ...(note !== undefined && { note }) });
    };

    await measure(
      {
        row: `tools/list (${TOOLS.toLocaleString('en-US')} tools, one page)`,
        mcpRequest: 'POST /mcp tools/list',
        httpRequest: 'GET /',
        mcpBytes: listBytes,
        httpBytes: view.bytes,
        connections: opts.readConnections,
      },
      listSession.spec('tools/list', undefined, opts.readConnections),
      { path: '/', connections: opts.readConnections, headers: { authorization: lister }, expectStatus: 200, setupRequest: unchanged },
      () => checkList(listSession, view.names),
    );
    // Issue 31: the same answer's bytes from a bare Fastify (bench/ceiling-server.ts), same request.
    await measure(
      {
        row: `tools/list (${TOOLS.toLocaleString('en-US')} tools, one page) against its ceiling`,
        mcpRequest: 'POST /mcp tools/list',
        httpRequest: 'POST /mcp, bare Fastify, same bytes',
        mcpBytes: listBytes,
        httpBytes: ceilingBytes,
        connections: opts.readConnections,
      },
      listSession.spec('tools/list', undefined, opts.readConnections),
      listSession.spec('tools/list', undefined, opts.readConnections),
      () => checkList(listSession, view.names),
      { base: ceiling.base, pid: ceiling.child.pid },
    );
    await measure(
      {
        row: `tools/call ${ECHO} (HTTP tool, echo)`,
        mcpRequest: 'POST /mcp tools/call',
        httpRequest: `POST /tools/${ECHO}/invoke`,
        mcpBytes: callBytes,
        httpBytes: invokeBytes,
        connections: opts.bridgeConcurrency,
      },
      callSession.spec('tools/call', { name: ECHO, arguments: ECHO_ARGS }, opts.bridgeConcurrency),
      {
        path: `/tools/${ECHO}/invoke`,
        connections: opts.bridgeConcurrency,
        method: 'POST',
        headers: { authorization: caller, 'content-type': 'application/json' },
        body: JSON.stringify(ECHO_ARGS),
        expectStatus: 200,
        setupRequest: unchanged,
      },
      () => checkCall(callSession),
    );
    return rows;
  } finally {
    await registry?.child.stop();
    await echo?.child.stop();
    await ceiling?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function mcpSection(r: McpResult): Section {
  const t = table(
    [
      'row',
      'MCP request',
      'compared with',
      'answer bytes MCP / other',
      'conns',
      'MCP req/s',
      'p50 ms',
      'p99 ms',
      'CPU us/req',
      'other req/s',
      'p50 ms',
      'p99 ms',
      'CPU us/req',
      'MCP / other',
      'errors MCP / other',
      'note',
    ],
    r.rows.map((x) => [
      x.row,
      x.mcpRequest,
      x.httpRequest,
      x.mcpBytes > 10_000 ? `${f1(x.mcpBytes / 1024)} / ${f1(x.httpBytes / 1024)} KiB` : `${f0(x.mcpBytes)} / ${f0(x.httpBytes)}`,
      f0(x.connections),
      f0(x.mcp.rps),
      f2(x.mcp.p50),
      f2(x.mcp.p99),
      f0(x.mcp.cpuUsPerReq),
      f0(x.http.rps),
      f2(x.http.p50),
      f2(x.http.p99),
      f0(x.http.cpuUsPerReq),
      pct(x.ratio),
      `${f0(x.mcp.errors)} / ${f0(x.http.errors)}`,
      x.note ?? '',
    ]),
    3,
    ['note'],
  );
  return {
    title: `MCP over /mcp against the HTTP API and a bare-Fastify ceiling (issues 11, 31; a registry of ${f0(r.tools)} tools, then one of 10,000 for the 10,000-tool rows; same token and connections per row; median of ${opts.runs} x ${opts.durationS} s; errors = answers other than 200)`,
    ...t,
  };
}
