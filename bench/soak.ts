/**
 * `npm run soak`: a bounded mixed load on loopback against a registry child process, with a few
 * misbehaving clients alongside (issue 9, "What must be shown").
 *
 *   node --import tsx bench/soak.ts [--duration=180] [--quick] [--no-misbehaving]
 *
 * Well-behaved clients: anonymous and bearer discovery (plain, If-None-Match, pages, search,
 * /stats), writes (replace, delete, a bulk import every 15 s), HTTP tool calls through the
 * registry to a tool server in this process, blocking queries, change-stream readers, and
 * liveness probes. Misbehaving clients (bench/soak-misbehaving.ts), each from its own loopback
 * address: stalled /changes readers, connection hogs (idle and slowloris sockets), and callers
 * that hang up mid-call.
 *
 * Reports the errors the well-behaved clients saw (expected 0: any status outside a kind's
 * expected ones, or a network error), their p50/p99 latency per kind, what the registry did to
 * the misbehaving clients, and the registry's resident memory over time (VmRSS every few
 * seconds: start, max, end and the trend). Prints a table and writes JSON to .cache/soak/.
 * Exits 1 when a well-behaved client saw an error or the registry died.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { adminToken, httpTool, JWT_SECRET, token } from './data.js';
import { freePort, killAllChildren, percentile, REPO_ROOT, rssMiB, sleep, spawnNode, waitHttpOk } from './lib.js';
import {
  anonymousDiscovery,
  bearerDiscovery,
  blockingQuery,
  caller,
  changeReader,
  KindStats,
  probes,
  startToolServer,
  writer,
  type LoopContext,
  type Stats,
} from './soak-clients.js';
import { connectionHogs, disconnectingCallers, newCounts, stalledReaders } from './soak-misbehaving.js';

const { values: flags } = parseArgs({
  options: { duration: { type: 'string' }, quick: { type: 'boolean', default: false }, 'no-misbehaving': { type: 'boolean', default: false } },
});
const durationS = Number(flags.duration ?? (flags.quick ? 30 : 180));
if (!Number.isFinite(durationS) || durationS <= 0) throw new Error(`--duration must be a number of seconds, not ${flags.duration}`);

/** The load, sized for a 2-CPU machine that also runs the load generator. */
const LOAD = {
  anonLoops: 3,
  bearerLoops: 3,
  callLoops: 2,
  blockingQueries: 10,
  blockingWaitS: 5,
  changeReaders: 4,
  probeEveryMs: 250,
  writeThinkMs: 40,
  readThinkMs: 10,
  callThinkMs: 20,
  importEveryS: 15,
  importSize: 300,
  catalogueSize: 200,
  stalledReaders: 20,
  idleHogs: 250,
  slowHogs: 50,
  disconnectingCallers: 4,
  rssEveryMs: flags.quick ? 1000 : 2000,
};

/**
 * Registry settings: the defaults but for two. Rate limits stay on but high, since every
 * well-behaved loop here is one caller going faster than a real agent would; MAX_CONNECTIONS is
 * 2,000, so that each address's share (a tenth, where the registry has per-address caps) is
 * smaller than the hogs' 300 sockets.
 */
const REGISTRY_ENV = {
  LOG_LEVEL: 'warn',
  RATE_LIMIT_MAX: '100000',
  RATE_LIMIT_WRITE_MAX: '100000',
  MAX_CONNECTIONS: '2000',
};

const log = (msg: string) => process.stderr.write(`[soak] ${msg}\n`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the registry`);
    killAllChildren();
    process.exit(130);
  });
}

async function main(): Promise<number> {
  const tool = await startToolServer();
  const dbDir = mkdtempSync(join(tmpdir(), 'tool-registry-soak-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const since = performance.now();
  const registry = spawnNode('src/cli/main.ts', ['serve'], { PORT: String(port), HOST: '127.0.0.1', DATABASE_PATH: join(dbDir, 'registry.db'), JWT_SECRET, ...REGISTRY_ENV });
  try {
    await waitHttpOk(`${base}/healthz`, registry, since);
    log(`registry pid ${registry.pid} on ${base}; tool server on port ${tool.port}`);

    // The catalogue: generated tools for discovery, and the two tools calls go to.
    const admin = adminToken();
    const callTools = [
      { name: 'soak-echo', endpoint: '/echo', host: '127.0.0.1', port: tool.port, description: 'echoes its arguments', scopes: ['soak:call'] },
      { name: 'soak-slow', endpoint: '/slow', host: '127.0.0.1', port: tool.port, description: 'answers after the given sleepMs', scopes: ['soak:call'], timeoutMs: 10_000 },
    ];
    const tools = [...Array.from({ length: LOAD.catalogueSize }, (_, i) => httpTool(i, 'soak-tool')), ...callTools];
    const seeded = await fetch(`${base}/import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ 'tool-services': [], tools }),
    });
    if (seeded.status !== 200) throw new Error(`seeding answered ${seeded.status}: ${await seeded.text()}`);

    const expected = (...statuses: number[]) => new KindStats(new Set(statuses));
    const stats: Stats = new Map([
      ['discovery-anon', expected(200, 304)],
      ['discovery-bearer', expected(200, 304)],
      ['writes', expected(200, 201)],
      ['calls', expected(200)],
      ['blocking', expected(200, 304)],
      ['changes', expected(200)],
      ['healthz', expected(200)],
    ]);
    let stopped = false;
    const ctx: LoopContext = { base, stats, stopped: () => stopped };
    const writtenAt = new Map<number, number>();
    const arrivals: [number, number][] = [];
    const counts = newCounts();
    const target = { host: '127.0.0.1', port, stopped: () => stopped, counts };

    // Memory: one sample now (seeded, before load), then every few seconds.
    const rss: { t: number; mib: number }[] = [];
    const started = performance.now();
    const sampleRss = () => rss.push({ t: (performance.now() - started) / 1000, mib: rssMiB(registry.pid) });
    sampleRss();
    const sampler = setInterval(sampleRss, LOAD.rssEveryMs);

    log(`load for ${durationS} s`);
    const agent = (sub: string) => token(sub, ['soak:call', 'bench:scope-01', 'bench:scope-18']);
    const loops: Promise<unknown>[] = [
      ...Array.from({ length: LOAD.anonLoops }, () => anonymousDiscovery(ctx, LOAD.readThinkMs)),
      ...Array.from({ length: LOAD.bearerLoops }, (_, i) => bearerDiscovery(ctx, agent(`soak-reader-${i}`), LOAD.readThinkMs)),
      writer(ctx, admin, LOAD.writeThinkMs, writtenAt, tool.port, LOAD.importEveryS, LOAD.importSize),
      ...Array.from({ length: LOAD.callLoops }, (_, i) => caller(ctx, agent(`soak-caller-${i}`), LOAD.callThinkMs)),
      ...Array.from({ length: LOAD.blockingQueries }, (_, i) => blockingQuery(ctx, agent(`soak-watcher-${i}`), LOAD.blockingWaitS)),
      ...Array.from({ length: LOAD.changeReaders }, (_, i) => changeReader(ctx, agent(`soak-mirror-${i}`), arrivals)),
      probes(ctx, LOAD.probeEveryMs),
    ];
    const misbehaving = !flags['no-misbehaving'];
    if (misbehaving) loops.push(disconnectingCallers(target, base, 'soak-slow', agent('soak-hangup'), LOAD.disconnectingCallers));
    const stalled = misbehaving ? await stalledReaders(target, '127.0.0.2', LOAD.stalledReaders, agent('soak-stalled')) : [];
    const hogs = misbehaving ? await connectionHogs(target, '127.0.0.3', LOAD.idleHogs, LOAD.slowHogs) : [];

    const progressEvery = Math.max(10, Math.round(durationS / 6));
    for (let s = progressEvery; s < durationS; s += progressEvery) {
      await sleep(progressEvery * 1000);
      const errors = [...stats.values()].reduce((n, k) => n + k.errors, 0);
      log(`${s} s: ${[...stats.values()].reduce((n, k) => n + k.ok, 0)} good answers, ${errors} errors, RSS ${rss.at(-1)?.mib.toFixed(0)} MiB`);
    }
    await sleep((durationS % progressEvery || progressEvery) * 1000);

    stopped = true;
    clearInterval(sampler);
    sampleRss();
    for (const socket of [...stalled, ...hogs]) socket.destroy();
    // Loops end at their next turn; a blocking query may still be held for its wait.
    await Promise.race([Promise.allSettled(loops), sleep((LOAD.blockingWaitS + 2) * 1000)]);
    const alive = registry.proc.exitCode === null && registry.proc.signalCode === null;

    // write sent -> event received, over every event a reader got for a write this run timed
    const lags = arrivals.map(([index, at]) => at - (writtenAt.get(index) ?? NaN)).filter((ms) => Number.isFinite(ms) && ms >= 0);
    const rows = [...stats.entries()].map(([kind, k]) => {
      const { p50, p99 } = k.latencies.percentiles();
      return { kind, requests: k.ok + k.errors, ok: k.ok, errors: k.errors, p50, p99, statuses: Object.fromEntries(k.statuses), errorSamples: k.samples };
    });
    const errors = rows.reduce((n, r) => n + r.errors, 0);
    const mibs = rss.map((r) => r.mib);
    const memory = {
      startMiB: mibs[0] ?? NaN,
      maxMiB: Math.max(...mibs),
      endMiB: mibs.at(-1) ?? NaN,
      // Least squares over the second half of the run (the first is warm-up), MiB per minute.
      trendMiBPerMin: slope(rss.filter((r) => r.t >= durationS / 2)) * 60,
      samples: rss,
    };
    const result = {
      at: new Date().toISOString(),
      durationS,
      quick: flags.quick,
      cpus: availableParallelism(),
      node: process.version,
      load: LOAD,
      registryEnv: REGISTRY_ENV,
      registryAlive: alive,
      wellBehaved: rows,
      changeLagMs: { events: lags.length, p50: percentile([...lags], 50), p99: percentile([...lags], 99) },
      toolServerCalls: tool.calls(),
      misbehaving: counts,
      memory,
      verdict: errors === 0 && alive ? 'pass' : 'fail',
    };

    printReport(result.wellBehaved, result.changeLagMs, counts, memory, alive, errors);
    const outDir = join(REPO_ROOT, '.cache', 'soak');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `soak-${result.at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${file}`);
    if (!alive) log(`the registry died:\n${registry.output()}`);
    return result.verdict === 'pass' ? 0 : 1;
  } finally {
    await registry.stop();
    await new Promise<void>((resolve) => {
      tool.server.closeAllConnections();
      tool.server.close(() => resolve());
    });
    rmSync(dbDir, { recursive: true, force: true });
  }
}

function slope(points: { t: number; mib: number }[]): number {
  if (points.length < 2) return NaN;
  const n = points.length;
  const mt = points.reduce((s, p) => s + p.t, 0) / n;
  const mm = points.reduce((s, p) => s + p.mib, 0) / n;
  const num = points.reduce((s, p) => s + (p.t - mt) * (p.mib - mm), 0);
  const den = points.reduce((s, p) => s + (p.t - mt) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

const fmt = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(ms < 10 ? 2 : 1) : '-');

function printReport(
  rows: { kind: string; requests: number; errors: number; p50: number; p99: number; statuses: Record<string, number>; errorSamples: string[] }[],
  lag: { events: number; p50: number; p99: number },
  counts: ReturnType<typeof newCounts>,
  memory: { startMiB: number; maxMiB: number; endMiB: number; trendMiBPerMin: number; samples: { t: number; mib: number }[] },
  alive: boolean,
  errors: number,
): void {
  const out: string[] = [];
  out.push('', `## Soak: ${durationS} s on loopback`, '', '| Well-behaved kind | Answers | Errors | p50 ms | p99 ms | Statuses |', '| --- | ---: | ---: | ---: | ---: | --- |');
  for (const r of rows) {
    const statuses = Object.entries(r.statuses)
      .map(([code, n]) => `${code}×${n}`)
      .join(' ');
    out.push(`| ${r.kind} | ${r.requests} | ${r.errors} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${statuses} |`);
  }
  out.push(`| change events (write sent → event read) | ${lag.events} | - | ${fmt(lag.p50)} | ${fmt(lag.p99)} | |`);
  for (const r of rows.filter((row) => row.errorSamples.length > 0)) out.push(`\n${r.kind} errors, first few: ${r.errorSamples.join('; ')}`);
  out.push(
    '',
    `Misbehaving clients: ${counts.stalledReadersOpened} stalled readers opened (${counts.stalledReadersClosed} cut off by the registry); ` +
      `${counts.hogSocketsOpened} hog sockets opened (${counts.hogSocketsClosed} closed by the registry, ${counts.hogSocketsRefused} refused); ` +
      `${counts.disconnectingCalls} calls hung up mid-call.`,
  );
  const every = Math.max(1, Math.floor(memory.samples.length / 12));
  const curve = memory.samples
    .filter((_, i) => i % every === 0 || i === memory.samples.length - 1)
    .map((s) => `${s.t.toFixed(0)}s:${s.mib.toFixed(0)}`)
    .join(' ');
  out.push(
    `Registry RSS: start ${memory.startMiB.toFixed(1)} MiB, max ${memory.maxMiB.toFixed(1)} MiB, end ${memory.endMiB.toFixed(1)} MiB, ` +
      `trend ${memory.trendMiBPerMin >= 0 ? '+' : ''}${memory.trendMiBPerMin.toFixed(2)} MiB/min over the second half`,
    `RSS over time (s:MiB): ${curve}`,
    '',
    `Verdict: ${errors === 0 && alive ? 'PASS' : 'FAIL'}: ${errors} errors seen by well-behaved clients${alive ? '' : '; the registry process died'}.`,
    '',
  );
  process.stdout.write(out.join('\n'));
}

main()
  .then((code) => {
    killAllChildren();
    process.exit(code);
  })
  .catch((err: unknown) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    killAllChildren();
    process.exit(1);
  });
