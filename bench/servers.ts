/**
 * The two servers every comparison needs: the registry as a child process (seeded through
 * POST /import), and the ceiling (bench/ceiling-server.ts) serving answers captured from it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CeilingSpec } from './ceiling-server.js';
import { adminToken, JWT_SECRET } from './data.js';
import { freePort, readyLine, spawnNode, waitHttpOk, type Child } from './lib.js';

export interface Registry {
  child: Child;
  base: string;
  startupMs: number;
  dbDir: string;
}

/** The registry of this checkout, or of `root` (another checkout, e.g. the code before a change: `--wrk-before`). */
export async function startRegistry(
  dbDir: string,
  extraEnv: Record<string, string> = {},
  nodeArgs: string[] = [],
  root?: string,
): Promise<Registry> {
  const port = await freePort();
  const since = performance.now();
  const child = spawnNode(
    'src/cli/main.ts',
    ['serve'],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_PATH: join(dbDir, 'registry.db'),
      JWT_SECRET,
      RATE_LIMIT_MAX: '0',
      LOG_LEVEL: 'warn',
      BODY_LIMIT: String(512 * 1024 * 1024),
      ...extraEnv,
    },
    nodeArgs,
    root,
  );
  const base = `http://127.0.0.1:${port}`;
  const startupMs = await waitHttpOk(`${base}/healthz`, child, since);
  return { child, base, startupMs, dbDir };
}

/** POST /import; resolves with its duration in ms. */
export async function importBundle(registry: Registry, body: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${registry.base}/import`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' },
    body,
  });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`POST /import answered ${res.status}: ${text.slice(0, 500)}`);
  return ms;
}

/**
 * Waits until every written tool is searchable (`tool_registry_search_backlog` is 0): a big
 * import, or the load at startup, is indexed for search in slices after it is answered, and a
 * search row measured before that would measure a smaller index.
 */
export async function searchIndexed(registry: Registry, timeoutMs = 120_000): Promise<number> {
  const started = performance.now();
  for (;;) {
    const res = await fetch(`${registry.base}/metrics`, { headers: { authorization: `Bearer ${adminToken()}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 300)}`);
    const backlog = /^tool_registry_search_backlog (\d+)$/mu.exec(text)?.[1];
    if (backlog === undefined) throw new Error('GET /metrics has no tool_registry_search_backlog');
    if (backlog === '0') return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`search backlog still ${backlog} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The view headers the classic scenarios' ceiling repeats. */
const KEPT_HEADERS = ['content-type', 'etag', 'cache-control', 'vary', 'x-hidden-tools', 'x-registry-index', 'x-request-id'];

export async function fetchView(base: string, authorization: string | null) {
  const res = await fetch(`${base}/`, { headers: authorization ? { authorization } : {} });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`GET / answered ${res.status}`);
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const v = res.headers.get(name);
    if (v !== null) headers[name] = v;
  }
  return { body, headers };
}

/** Headers the ceiling must not repeat: Node writes them itself for each answer. */
const HOP_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

export interface Captured {
  /** The request URL as the load generator sends it: path and query. */
  url: string;
  status: number;
  body: Buffer;
  /** Every header the registry sent, but those Node computes per answer. */
  headers: Record<string, string>;
}

/** One answer of the registry, as the ceiling will repeat it. */
export async function capture(base: string, url: string, requestHeaders: Record<string, string> = {}): Promise<Captured> {
  const res = await fetch(`${base}${url}`, { headers: requestHeaders });
  const body = Buffer.from(await res.arrayBuffer());
  return { url, status: res.status, body, headers: keptHeaders(res) };
}

/** Every header of an answer, but those Node computes per answer. */
export function keptHeaders(res: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!HOP_HEADERS.has(name)) headers[name] = value;
  });
  return headers;
}

/** Captures many URLs, a few at a time; throws on the first answer that is not `expect`. */
export async function captureAll(base: string, urls: string[], expect = 200, concurrency = 8): Promise<Captured[]> {
  const out: Captured[] = new Array<Captured>(urls.length);
  let next = 0;
  const worker = async () => {
    for (let k = next++; k < urls.length; k = next++) {
      const url = urls[k] ?? '';
      const c = await capture(base, url);
      if (c.status !== expect) throw new Error(`GET ${url} answered ${c.status}: ${c.body.toString().slice(0, 300)}`);
      out[k] = c;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

/** Writes captured answers as the ceiling's `exact` part: one file of bodies and their slices. */
export function exactSpec(dir: string, name: string, answers: Captured[]): NonNullable<CeilingSpec['exact']> {
  const bodiesFile = join(dir, `${name}-bodies.bin`);
  let offset = 0;
  const entries = answers.map((a) => {
    const e = { url: a.url, status: a.status, headers: a.headers, offset, length: a.body.length };
    offset += a.body.length;
    return e;
  });
  writeFileSync(bodiesFile, Buffer.concat(answers.map((a) => a.body)));
  return { bodiesFile, entries };
}

export interface Ceiling {
  child: Child;
  base: string;
}

/** Starts bench/ceiling-server.ts with `spec` (port chosen here); resolves once every process listens. */
export async function startCeiling(dir: string, name: string, spec: Omit<CeilingSpec, 'port'>, nodeArgs: string[] = []): Promise<Ceiling> {
  const port = await freePort();
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ ...spec, port }));
  const since = performance.now();
  const child = spawnNode('bench/ceiling-server.ts', [file], {}, nodeArgs);
  const ready = readyLine(child, 'the ceiling', 60_000);
  const base = `http://127.0.0.1:${port}`;
  try {
    await ready;
    await waitHttpOk(`${base}/healthz`, child, since);
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { child, base };
}

/** Throws unless the ceiling answers `answers` with the very same status, bytes and ETag. */
export async function checkCeiling(ceiling: Ceiling, answers: Captured[]): Promise<void> {
  for (const a of answers) {
    const got = await capture(ceiling.base, a.url);
    if (got.status !== a.status || !got.body.equals(a.body) || got.headers['etag'] !== a.headers['etag']) {
      throw new Error(`the ceiling does not serve the registry's answer to ${a.url}`);
    }
  }
}
