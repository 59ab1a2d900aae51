/**
 * Issue 33, every core: does a multi-process registry pay on this machine, with wrk on the same
 * cores? One registry process against N registry processes sharing one port
 * (bench/registry-workers.ts: node:cluster, each worker a whole `serve` with its own read model
 * built from the same SQLite file), for a lookup by name, the 304 of `GET /` and a first page,
 * each measured side by side (interleaved runs). Per-core figures (requests per CPU-second of
 * the server's processes, and per worker) let the scaling be judged for a machine with more
 * cores than this one: what a core buys stays the same or not when N processes share the load.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundle, JWT_SECRET, toolName } from './data.js';
import { freePort, readyLine, spawnNode, waitHttpOk, type Child } from './lib.js';
import { measureSides, type Side } from './measure.js';
import { log, opts } from './options.js';
import { f0, f2, pct, table, type Section } from './report.js';
import { capture, captureAll, importBundle, startRegistry, type Registry } from './servers.js';
import { wrkLoad, wrkMissing, type WrkRequest } from './wrk.js';

export interface WorkersRow {
  row: string;
  n: number;
  workers: number;
  single: Side;
  many: Side;
  /** many / single throughput. */
  gain: number;
}

/** The settings of both sides: those of the wrk rows (a budget the load cannot use up), and one PUBLIC_URL (the views carry URLs made from it, so the ports would tell their bytes apart). */
const SETTINGS = { RATE_LIMIT_MAX: '10000000', PUBLIC_URL: 'http://registry.bench.invalid' };

async function startWorkers(dir: string, workers: number): Promise<{ child: Child; base: string; startupMs: number }> {
  const port = await freePort();
  const since = performance.now();
  const child = spawnNode('bench/registry-workers.ts', [], {
    WORKERS: String(workers),
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: join(dir, 'registry.db'),
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    ...SETTINGS,
  });
  const ready = readyLine(child, 'the workers', 120_000);
  const base = `http://127.0.0.1:${port}`;
  try {
    await ready;
    const startupMs = await waitHttpOk(`${base}/healthz`, child, since);
    return { child, base, startupMs };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

export async function workersBench(): Promise<WorkersRow[]> {
  const missing = wrkMissing();
  if (missing !== null) throw new Error(missing);
  const n = opts.workersSize;
  const workers = opts.workersProcesses;
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-workers-'));
  let registry: Registry | undefined;
  let many: Awaited<ReturnType<typeof startWorkers>> | undefined;
  try {
    registry = await startRegistry(dir, SETTINGS);
    const importMs = await importBundle(registry, bundle(n));
    log(`workers: imported ${n} tools in ${importMs.toFixed(0)} ms; starting ${workers} workers on the same database`);
    many = await startWorkers(dir, workers);
    log(`workers: ${workers} workers ready in ${many.startupMs.toFixed(0)} ms`);

    const count = Math.min(n, opts.lookupNames);
    const lookups = await captureAll(
      registry.base,
      Array.from({ length: count }, (_, k) => `/tools/${toolName(Math.floor(((k + 0.5) * n) / count))}`),
    );
    const view = await capture(registry.base, '/');
    const etag = view.headers['etag'];
    if (etag === undefined) throw new Error('GET / carries no ETag');
    // Both sides serve the same catalogue: the workers' view has the single process's ETag.
    const theirs = await capture(many.base, '/');
    if (theirs.headers['etag'] !== etag)
      throw new Error(
        `the workers do not serve the single process's view: ${theirs.status} ${theirs.headers['etag']} against ${view.status} ${etag}: ${theirs.body.toString().slice(0, 300)}`,
      );

    const cases: { row: string; requests: WrkRequest[]; expectStatus: number }[] = [
      { row: `one tool by name (${lookups.length} names)`, requests: lookups.map((a) => ({ path: a.url })), expectStatus: 200 },
      { row: 'GET / with If-None-Match -> 304', requests: [{ path: '/', headers: { 'if-none-match': etag } }], expectStatus: 304 },
      { row: 'first page of 100', requests: [{ path: '/?limit=100' }], expectStatus: 200 },
    ];
    const rows: WorkersRow[] = [];
    for (const c of cases) {
      const runner = (base: string, pid: number) => (durationS: number) =>
        wrkLoad({
          base,
          requests: c.requests,
          expectStatus: c.expectStatus,
          durationS,
          threads: opts.wrkThreads,
          connections: opts.wrkConnections,
          serverPid: pid,
          dir,
        });
      const [single, several] = await measureSides(`workers ${c.row} @${n}`, [
        ['1 process', runner(registry.base, registry.child.pid)],
        [`${workers} workers`, runner(many.base, many.child.pid)],
      ]);
      if (!single || !several) throw new Error('workers: missing side');
      rows.push({ row: c.row, n, workers, single, many: several, gain: several.rps / single.rps });
    }
    return rows;
  } finally {
    await many?.child.stop();
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function workersSection(rows: WorkersRow[]): Section {
  const workers = rows[0]?.workers ?? opts.workersProcesses;
  /** Requests per CPU-second of the server's processes: what one core buys. */
  const perCore = (s: Side) => s.rps / s.serverCpuShare;
  const t = table(
    [
      'read',
      'tools',
      '1 process req/s',
      'p99 ms',
      'server cores',
      'wrk cores',
      'req/s per server core',
      `${workers} workers req/s`,
      'p99 ms',
      'server cores',
      'wrk cores',
      'req/s per server core',
      'req/s per worker',
      `x${workers} / x1`,
      'per-core efficiency',
    ],
    rows.map((r) => [
      r.row,
      f0(r.n),
      f0(r.single.rps),
      f2(r.single.p99),
      f2(r.single.serverCpuShare),
      f2(r.single.loadCpuShare),
      f0(perCore(r.single)),
      f0(r.many.rps),
      f2(r.many.p99),
      f2(r.many.serverCpuShare),
      f2(r.many.loadCpuShare),
      f0(perCore(r.many)),
      f0(r.many.rps / r.workers),
      pct(r.gain),
      pct(perCore(r.many) / perCore(r.single)),
    ]),
  );
  return {
    title:
      `Every core under wrk (issue 33; 1 registry process against ${workers} workers sharing one port via node:cluster, each with its own read model of the same SQLite file; ` +
      `wrk -t${opts.wrkThreads} -c${opts.wrkConnections} on the same cores; median of ${opts.runs} x ${opts.durationS} s, interleaved; ` +
      `"server cores" = CPU seconds per second of all the server's processes; "per-core efficiency" = req/s per server core, ${workers} workers over 1)`,
    ...t,
  };
}
