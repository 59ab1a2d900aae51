/**
 * The soak's well-behaved side: a tiny HTTP tool server, and client loops that record every
 * answer's status and latency by kind. A well-behaved client paces itself, sends valid
 * requests, reads every answer and never hangs up early, so any answer outside its kind's
 * expected statuses (and any network error) is an error the registry caused.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Latencies, sleep } from './lib.js';

// ---------------------------------------------------------------------------------------------
// what the clients saw

export class KindStats {
  readonly latencies = new Latencies();
  readonly statuses = new Map<string, number>();
  ok = 0;
  errors = 0;
  /** The first few errors, to say what went wrong. */
  readonly samples: string[] = [];
  constructor(readonly expected: ReadonlySet<number>) {}

  /** `detail` (the answer's body) is kept in the error samples. */
  record(status: number, ms: number, detail = ''): void {
    this.statuses.set(String(status), (this.statuses.get(String(status)) ?? 0) + 1);
    if (this.expected.has(status)) {
      this.ok++;
      this.latencies.add(ms);
    } else {
      this.error(`HTTP ${status}${detail === '' ? '' : ` ${detail.slice(0, 200)}`}`);
    }
  }

  error(what: string): void {
    this.errors++;
    if (this.samples.length < 5) this.samples.push(what);
    if (!/^HTTP \d+/.test(what)) this.statuses.set('network', (this.statuses.get('network') ?? 0) + 1);
  }
}

export type Stats = Map<string, KindStats>;

// ---------------------------------------------------------------------------------------------
// the tool the calls reach

/** Echoes the arguments; `{"sleepMs": n}` answers after n ms (the disconnecting callers' tool). */
export async function startToolServer(): Promise<{ server: Server; port: number; calls: () => number }> {
  let calls = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls++;
      const text = Buffer.concat(chunks).toString();
      let sleepMs = 0;
      try {
        sleepMs = Number((JSON.parse(text) as { sleepMs?: number }).sleepMs ?? 0);
      } catch {
        // not JSON: echo it
      }
      const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(text === '' ? '{}' : text), sleepMs);
      res.once('close', () => clearTimeout(timer));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, calls: () => calls };
}

// ---------------------------------------------------------------------------------------------
// request loops

export interface LoopContext {
  base: string;
  stats: Stats;
  /** Resolves when the run is over; loops stop at their next turn. */
  stopped: () => boolean;
}

interface Timed {
  status: number;
  ms: number;
  headers: Headers;
  text: string;
}

async function timedFetch(url: string, init: RequestInit): Promise<Timed> {
  const started = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, ms: performance.now() - started, headers: res.headers, text };
}

/** Runs `step` until the run stops, `thinkMs` apart; a thrown error counts against `kind`. */
export async function loop(ctx: LoopContext, kind: string, thinkMs: number, step: (i: number) => Promise<void>): Promise<void> {
  const stats = ctx.stats.get(kind);
  if (!stats) throw new Error(`no stats for ${kind}`);
  for (let i = 0; !ctx.stopped(); i++) {
    try {
      await step(i);
    } catch (err) {
      stats.error(
        err instanceof Error ? `${err.name}: ${err.message}${err.cause instanceof Error ? ` (${err.cause.message})` : ''}` : String(err),
      );
    }
    if (thinkMs > 0) await sleep(thinkMs);
  }
}

/** One request, recorded under `kind`. */
export async function call(ctx: LoopContext, kind: string, path: string, init: RequestInit = {}): Promise<Timed> {
  const res = await timedFetch(`${ctx.base}${path}`, init);
  ctx.stats.get(kind)?.record(res.status, res.ms, res.text);
  return res;
}

const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

/** Anonymous rediscovery, with If-None-Match half of the time (304s are expected). */
export async function anonymousDiscovery(ctx: LoopContext, thinkMs: number): Promise<void> {
  let etag: string | null = null;
  await loop(ctx, 'discovery-anon', thinkMs, async (i) => {
    const res = await call(ctx, 'discovery-anon', i % 5 === 4 ? '/?q=soak%20tool&limit=20' : '/', {
      headers: etag !== null && i % 2 === 1 ? { 'if-none-match': etag } : {},
    });
    etag = res.headers.get('etag') ?? etag;
  });
}

/** Bearer rediscovery, /stats and the page walk, with a token per loop. */
export async function bearerDiscovery(ctx: LoopContext, token: string, thinkMs: number): Promise<void> {
  let cursor: string | null = null;
  await loop(ctx, 'discovery-bearer', thinkMs, async (i) => {
    const headers = { authorization: `Bearer ${token}` };
    if (i % 10 === 9) {
      await call(ctx, 'discovery-bearer', '/stats', { headers });
    } else if (i % 3 === 2) {
      const res = await call(ctx, 'discovery-bearer', `/?limit=50${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, {
        headers,
      });
      cursor = res.status === 200 ? ((JSON.parse(res.text) as { nextCursor: string | null }).nextCursor ?? null) : null;
    } else {
      await call(ctx, 'discovery-bearer', '/', { headers });
    }
  });
}

/** The periodic import: `tools` tools and `services` tool services, rewritten every round. */
export interface ImportShape {
  everyS: number;
  tools: number;
  /**
   * Tool services with 120-character ids: an event each for admin change streams only (so the
   * stalled readers, an admin's, fall behind), and no change to the tools anyone discovers.
   */
  services: number;
}

/**
 * Replaces, creates and deletes tools (a rolling set of 200 names), and imports a bundle
 * (`shape`) every few seconds. Records when the write of each registry index was sent, so that
 * the change streams' delay (write sent -> event received) can be measured.
 */
export async function writer(
  ctx: LoopContext,
  adminToken: string,
  thinkMs: number,
  writtenAt: Map<number, number>,
  toolPort: number,
  shape: ImportShape,
): Promise<void> {
  const pad = 'x'.repeat(100);
  let lastImport = performance.now();
  let round = 0;
  let lastPut: string | undefined;
  await loop(ctx, 'writes', thinkMs, async (i) => {
    const name = `soak-w-${String(i % 200).padStart(3, '0')}`;
    const sentAt = performance.now();
    let res: Timed;
    if (performance.now() - lastImport > shape.everyS * 1000) {
      lastImport = performance.now();
      round++;
      const services = Array.from({ length: shape.services }, (_, k) => ({
        id: `soak-svc-${pad}-${String(k).padStart(5, '0')}`,
        topic: `soak-round-${round}`,
      }));
      const tools = Array.from({ length: shape.tools }, (_, k) => ({
        name: `soak-bulk-${String(k).padStart(4, '0')}`,
        endpoint: '/echo',
        host: '127.0.0.1',
        port: toolPort,
        description: `soak bulk tool ${k}, round ${round}`,
        scopes: [`soak:scope-${k % 10}`],
      }));
      res = await call(ctx, 'writes', '/import', {
        method: 'POST',
        headers: json(adminToken),
        body: JSON.stringify({ 'tool-services': services, tools }),
      });
    } else if (i % 7 === 6 && lastPut !== undefined) {
      // The tool the previous step wrote, so it exists: a 404 would be the registry's fault.
      res = await call(ctx, 'writes', `/tools/${lastPut}`, { method: 'DELETE', headers: { authorization: `Bearer ${adminToken}` } });
      lastPut = undefined;
    } else {
      lastPut = name;
      const body = {
        endpoint: '/echo',
        host: '127.0.0.1',
        port: toolPort,
        description: `soak tool ${name}, write ${i}`,
        scopes: i % 2 === 0 ? [] : [`soak:scope-${i % 10}`],
      };
      res = await call(ctx, 'writes', `/tools/${name}`, { method: 'PUT', headers: json(adminToken), body: JSON.stringify(body) });
    }
    const index = Number(res.headers.get('x-registry-index'));
    if (Number.isFinite(index) && index > 0) writtenAt.set(index, sentAt);
  });
}

/** Calls the echo tool through the registry. */
export async function caller(ctx: LoopContext, token: string, thinkMs: number): Promise<void> {
  await loop(ctx, 'calls', thinkMs, async (i) => {
    await call(ctx, 'calls', '/tools/soak-echo/invoke', {
      method: 'POST',
      headers: json(token),
      body: JSON.stringify({ text: `call ${i}` }),
    });
  });
}

/** A blocking query that follows the registry index (Consul style), held up to `waitS`. */
export async function blockingQuery(ctx: LoopContext, token: string, waitS: number): Promise<void> {
  let index = 0;
  await loop(ctx, 'blocking', 0, async () => {
    const res = await call(ctx, 'blocking', `/?index=${index}&wait=${waitS}s`, { headers: { authorization: `Bearer ${token}` } });
    index = Number(res.headers.get('x-registry-index') ?? index);
  });
}

/** Liveness probes, as an orchestrator sends them. */
export async function probes(ctx: LoopContext, everyMs: number): Promise<void> {
  await loop(ctx, 'healthz', everyMs, async (i) => {
    await call(ctx, 'healthz', i % 2 === 0 ? '/healthz' : '/readyz');
  });
}

/** What one change reader received, to check that it missed no write. */
export interface ReaderLog {
  /** X-Registry-Index of its first stream: it follows every write after it. */
  firstIndex: number | null;
  /** The `id:` of every write it received, in order of arrival. */
  ids: number[];
  /** Streams it opened (1 + reconnects with Last-Event-ID). */
  streams: number;
}

/**
 * A change-feed reader that reads everything, resumes with Last-Event-ID, and notes when each
 * write's event (its `id:` line) arrives. A stream ended by the registry is an error for a
 * client that reads (it was not slow); the reader reconnects and goes on.
 */
export function changeReader(ctx: LoopContext, token: string, arrivals: [index: number, at: number][], log: ReaderLog): Promise<void> {
  const stats = ctx.stats.get('changes');
  if (!stats) throw new Error('no stats for changes');
  let lastId: string | undefined;
  const open = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      log.streams++;
      const req = request(
        `${ctx.base}/changes`,
        { headers: { authorization: `Bearer ${token}`, ...(lastId !== undefined && { 'last-event-id': lastId }) } },
        (res: IncomingMessage) => {
          stats.record(res.statusCode ?? 0, performance.now() - started);
          log.firstIndex ??= Number(res.headers['x-registry-index']);
          let buffer = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            buffer += chunk;
            let cut: number;
            while ((cut = buffer.indexOf('\n\n')) >= 0) {
              const event = buffer.slice(0, cut);
              buffer = buffer.slice(cut + 2);
              const id = /^id: (\d+)$/m.exec(event)?.[1];
              if (id !== undefined) {
                lastId = id;
                log.ids.push(Number(id));
                arrivals.push([Number(id), performance.now()]);
              }
            }
          });
          res.on('end', () => {
            if (!ctx.stopped()) stats.error('stream ended by the registry');
            resolve();
          });
          res.on('error', () => resolve());
        },
      );
      req.on('error', (err) => {
        if (!ctx.stopped()) stats.error(`${err.name}: ${err.message}`);
        resolve();
      });
      req.end();
      const stop = setInterval(() => {
        if (ctx.stopped()) {
          clearInterval(stop);
          req.destroy();
          resolve();
        }
      }, 200);
      req.once('close', () => clearInterval(stop));
    });
  return (async () => {
    while (!ctx.stopped()) {
      await open();
      if (!ctx.stopped()) await sleep(500);
    }
  })();
}

/**
 * Checks a reader against the writes the clients made: every write after its first index and
 * up to the last id it received must have arrived, once, in order. (A reader with a view of the
 * whole catalogue, an admin's, gets an event for every write.)
 */
export function checkReader(
  log: ReaderLog,
  written: ReadonlySet<number>,
): { received: number; missing: number; repeatedOrOutOfOrder: number } {
  const last = log.ids.at(-1) ?? -1;
  const got = new Set(log.ids);
  let missing = 0;
  for (const index of written) if (index > (log.firstIndex ?? Infinity) && index <= last && !got.has(index)) missing++;
  let repeatedOrOutOfOrder = 0;
  for (let i = 1; i < log.ids.length; i++) if ((log.ids[i] ?? 0) <= (log.ids[i - 1] ?? 0)) repeatedOrOutOfOrder++;
  return { received: log.ids.length, missing, repeatedOrOutOfOrder };
}
