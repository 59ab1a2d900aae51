/**
 * `npm run soak`: a bounded mixed load on loopback against a registry child process, with a few
 * misbehaving clients alongside (issue 9, "What must be shown").
 *
 *   node --import tsx bench/soak.ts [--duration=180] [--quick] [--no-misbehaving] [--services-per-import=5000]
 *     [--stream-buffer-bytes=N] [--malloc-arena-max=N]
 *
 * Well-behaved clients: anonymous and bearer discovery (plain, If-None-Match, pages, search,
 * /stats), writes (replace, delete, and every 15 s an import of 300 tools and 5,000 tool
 * services: the services are events only admin streams see, so the stalled readers fall behind
 * within minutes while the tools anyone discovers stay as they were), HTTP tool calls through
 * the registry to a tool server in this process, blocking queries, change-stream readers with an admin token (checked
 * to receive every write, once and in order), and liveness probes. Misbehaving clients (bench/soak-misbehaving.ts), each from its own loopback
 * address: stalled /changes readers, connection hogs (idle and slowloris sockets), and callers
 * that hang up mid-call.
 *
 * Reports the errors the well-behaved clients saw (expected 0: any status outside a kind's
 * expected ones, or a network error), their p50/p99 latency per kind, what the registry did to
 * the misbehaving clients, and the registry's memory over time with what it is made of
 * (bench/soak-memory.ts: RSS, V8 heap, external memory, and the catalogue and logs that grow;
 * start, max, end and the trends). Prints tables and writes JSON to .cache/soak/.
 *
 * --stream-buffer-bytes sets the registry's CHANGE_STREAM_BUFFER_BYTES (default: its own, 1 MiB);
 * --malloc-arena-max sets MALLOC_ARENA_MAX for the registry only (glibc malloc arenas).
 * Exits 1 when a well-behaved client saw an error or the registry died.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ADMIN_SCOPE, adminToken, httpTool, JWT_SECRET, token } from './data.js';
import { freePort, killAllChildren, median, percentile, REPO_ROOT, sleep, spawnNode, waitHttpOk } from './lib.js';
import {
  anonymousDiscovery,
  bearerDiscovery,
  blockingQuery,
  caller,
  changeReader,
  checkReader,
  KindStats,
  probes,
  startToolServer,
  writer,
  type LoopContext,
  type ReaderLog,
  type Stats,
} from './soak-clients.js';
import { heapFloorByMinute, memoryTable, MemorySampler, trendPerMin, type MemorySample } from './soak-memory.js';
import { connectionHogs, disconnectingCallers, newCounts, stalledReaders } from './soak-misbehaving.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string' },
    quick: { type: 'boolean', default: false },
    'no-misbehaving': { type: 'boolean', default: false },
    'services-per-import': { type: 'string', default: '5000' },
    'stream-buffer-bytes': { type: 'string' },
    'malloc-arena-max': { type: 'string' },
  },
});
const durationS = Number(flags.duration ?? (flags.quick ? 30 : 180));
if (!Number.isFinite(durationS) || durationS <= 0) throw new Error(`--duration must be a number of seconds, not ${flags.duration}`);
if (!Number.isInteger(Number(flags['services-per-import'])) || Number(flags['services-per-import']) < 0) {
  throw new Error(`--services-per-import must be a whole number, not ${flags['services-per-import']}`);
}

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
  /**
   * The periodic import. Its 5,000 services (~0.95 MB of events for an admin stream) are what
   * gets the stalled readers cut off: the kernel takes about 4 MB of a loopback stream that is
   * never read (tcp_wmem's 4 MiB) before the registry buffers a byte of its own, and the rest
   * of the load writes ~3 KB/s of events, which would take half an hour to fill that.
   */
  import: { everyS: 15, tools: 300, services: Number(flags['services-per-import']) },
  catalogueSize: 200,
  stalledReaders: 20,
  idleHogs: 250,
  slowHogs: 50,
  disconnectingCallers: 4,
  memoryEveryMs: flags.quick ? 2000 : 5000,
};

/**
 * Registry settings: the defaults but for two. Rate limits stay on but high, since every
 * well-behaved loop here is one caller going faster than a real agent would; MAX_CONNECTIONS is
 * 2,000, so that each address's share (a tenth, where the registry has per-address caps) is
 * smaller than the hogs' 300 sockets.
 */
const REGISTRY_ENV: Record<string, string> = {
  LOG_LEVEL: 'warn',
  RATE_LIMIT_MAX: '100000',
  RATE_LIMIT_WRITE_MAX: '100000',
  MAX_CONNECTIONS: '2000',
  ...(flags['stream-buffer-bytes'] !== undefined && { CHANGE_STREAM_BUFFER_BYTES: flags['stream-buffer-bytes'] }),
  ...(flags['malloc-arena-max'] !== undefined && { MALLOC_ARENA_MAX: flags['malloc-arena-max'] }),
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
  const dbPath = join(dbDir, 'registry.db');
  const registry = spawnNode('src/cli/main.ts', ['serve'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: dbPath,
    JWT_SECRET,
    ...REGISTRY_ENV,
  });
  let sampler: MemorySampler | undefined;
  try {
    await waitHttpOk(`${base}/healthz`, registry, since);
    log(`registry pid ${registry.pid} on ${base}; tool server on port ${tool.port}`);

    // The catalogue: generated tools for discovery, and the two tools calls go to.
    const admin = adminToken();
    const callTools = [
      // The registry checks arguments against the declared parameters: undeclared ones are a 400.
      {
        name: 'soak-echo',
        endpoint: '/echo',
        host: '127.0.0.1',
        port: tool.port,
        description: 'echoes its arguments',
        scopes: ['soak:call'],
        parameters: { text: { type: 'string', description: 'echoed' } },
      },
      {
        name: 'soak-slow',
        endpoint: '/slow',
        host: '127.0.0.1',
        port: tool.port,
        description: 'answers after the given sleepMs',
        scopes: ['soak:call'],
        timeoutMs: 10_000,
        parameters: { sleepMs: { type: 'integer', description: 'how long to wait before answering' } },
      },
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

    // Memory: one sample now (seeded, before load), then every few seconds until the load stops.
    const memory: MemorySample[] = [];
    const started = performance.now();
    sampler = new MemorySampler(registry.pid, base, admin, dbPath);
    const takeSample = async () => {
      if (sampler) memory.push(await sampler.sample((performance.now() - started) / 1000));
    };
    await takeSample();
    const sampling = (async () => {
      while (!stopped) {
        await sleep(LOAD.memoryEveryMs);
        if (!stopped) await takeSample();
      }
    })();

    log(`load for ${durationS} s`);
    // The soak's own event loop: when it is held, every latency it measures grows with it.
    const ownLoop = monitorEventLoopDelay({ resolution: 10 });
    ownLoop.enable();
    // Mirrors with the admin's view: every write is an event for them, so none may be missing.
    const readerLogs: ReaderLog[] = Array.from({ length: LOAD.changeReaders }, () => ({ firstIndex: null, ids: [], streams: 0 }));
    const agent = (sub: string) => token(sub, ['soak:call', 'bench:scope-01', 'bench:scope-18']);
    // A caller of its own each (per-caller caps count by token subject), with the admin's view.
    const mirror = (sub: string) => token(sub, [ADMIN_SCOPE]);
    const loops: Promise<unknown>[] = [
      ...Array.from({ length: LOAD.anonLoops }, () => anonymousDiscovery(ctx, LOAD.readThinkMs)),
      ...Array.from({ length: LOAD.bearerLoops }, (_, i) => bearerDiscovery(ctx, agent(`soak-reader-${i}`), LOAD.readThinkMs)),
      writer(ctx, admin, LOAD.writeThinkMs, writtenAt, tool.port, LOAD.import),
      ...Array.from({ length: LOAD.callLoops }, (_, i) => caller(ctx, agent(`soak-caller-${i}`), LOAD.callThinkMs)),
      ...Array.from({ length: LOAD.blockingQueries }, (_, i) => blockingQuery(ctx, agent(`soak-watcher-${i}`), LOAD.blockingWaitS)),
      ...readerLogs.map((readerLog, i) => changeReader(ctx, mirror(`soak-mirror-${i}`), arrivals, readerLog)),
      probes(ctx, LOAD.probeEveryMs),
    ];
    const misbehaving = !flags['no-misbehaving'];
    if (misbehaving) loops.push(disconnectingCallers(target, base, 'soak-slow', agent('soak-hangup'), LOAD.disconnectingCallers));
    // Stalled mirrors: the admin's view, so that the imports' tool services reach them too.
    const stalled = misbehaving ? await stalledReaders(target, '127.0.0.2', LOAD.stalledReaders, mirror('soak-stalled')) : [];
    const hogs = misbehaving ? await connectionHogs(target, '127.0.0.3', LOAD.idleHogs, LOAD.slowHogs) : [];

    const progressEvery = Math.max(10, Math.round(durationS / 6));
    for (let s = progressEvery; s < durationS; s += progressEvery) {
      await sleep(progressEvery * 1000);
      const errors = [...stats.values()].reduce((n, k) => n + k.errors, 0);
      const m = memory.at(-1);
      log(
        `${s} s: ${[...stats.values()].reduce((n, k) => n + k.ok, 0)} good answers, ${errors} errors, ` +
          `${counts.stalledReadersClosed} stalled streams cut off, RSS ${m?.rssMiB.toFixed(0)} MiB (heap ${m?.heapUsedMiB.toFixed(0)}, external ${m?.externalMiB.toFixed(0)})`,
      );
    }
    await sleep((durationS % progressEvery || progressEvery) * 1000);

    await takeSample();
    stopped = true;
    ownLoop.disable();
    await sampling;
    for (const socket of [...stalled, ...hogs]) socket.destroy();
    // Loops end at their next turn; a blocking query may still be held for its wait.
    await Promise.race([Promise.allSettled(loops), sleep((LOAD.blockingWaitS + 2) * 1000)]);
    const alive = registry.proc.exitCode === null && registry.proc.signalCode === null;

    // write sent -> event received, over every event a reader got for a write this run timed
    const lags = arrivals.map(([index, at]) => at - (writtenAt.get(index) ?? NaN)).filter((ms) => Number.isFinite(ms) && ms >= 0);
    const rows = [...stats.entries()].map(([kind, k]) => {
      const { p50, p99 } = k.latencies.percentiles();
      return {
        kind,
        requests: k.ok + k.errors,
        ok: k.ok,
        errors: k.errors,
        p50,
        p99,
        statuses: Object.fromEntries(k.statuses),
        errorSamples: k.samples,
      };
    });
    const errors = rows.reduce((n, r) => n + r.errors, 0);
    const secondHalf = memory.filter((m) => m.t >= durationS / 2);
    const trend = (value: (m: MemorySample) => number) => trendPerMin(secondHalf, value);
    // Whole minutes after the first (warm-up); the last, partial one only if nothing else.
    const floors = heapFloorByMinute(memory).filter((f, i, all) => f.minute > 0 && (i < all.length - 1 || all.length <= 2));
    const memorySummary = {
      startMiB: memory[0]?.rssMiB ?? NaN,
      maxMiB: Math.max(...memory.map((m) => m.rssMiB)),
      endMiB: memory.at(-1)?.rssMiB ?? NaN,
      // Least squares over the second half of the run (the first is warm-up), per minute.
      trendPerMin: {
        rssMiB: trend((m) => m.rssMiB),
        anonMiB: trend((m) => m.anonMiB),
        heapUsedMiB: trend((m) => m.heapUsedMiB),
        heapTotalMiB: trend((m) => m.heapTotalMiB),
        externalMiB: trend((m) => m.externalMiB),
        tools: trend((m) => m.tools),
        changeRows: trend((m) => m.changeRows),
        callRows: trend((m) => m.callRows),
        auditRows: trend((m) => m.auditRows),
        // Over every whole minute after the first: the leak figure (see heapFloorByMinute).
        heapFloorMiB: trendPerMin(
          floors.map((f) => ({ t: f.minute * 60, v: f.heapUsedMiB })),
          (f) => f.v,
        ),
      },
      heapFloorMiBByMinute: floors.map((f) => Math.round(f.heapUsedMiB)),
      samples: memory,
    };
    // Every write the clients made is an event for the admin's view: none may be missing.
    const written = new Set(writtenAt.keys());
    const readers = readerLogs.map((readerLog) => ({ streams: readerLog.streams, ...checkReader(readerLog, written) }));
    const readersComplete = readers.every((r) => r.missing === 0 && r.repeatedOrOutOfOrder === 0);
    const lifetimes = counts.stalledReaderLifetimesS;
    const stalledSummary = {
      opened: counts.stalledReadersOpened,
      cutOff: counts.stalledReadersClosed,
      distinctCutOff: Math.min(LOAD.stalledReaders, counts.stalledReadersClosed),
      medianLifetimeS: median(lifetimes),
      maxLifetimeS: lifetimes.length > 0 ? Math.max(...lifetimes) : NaN,
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
      stalledReaders: stalledSummary,
      changeReaders: readers,
      memory: memorySummary,
      eventLoops: {
        // The registry's longest hold in each sample interval (its prom-client lag gauge).
        registryHeldMs: summariseHolds(memory.map((m) => m.loopLagMaxMs)),
        soakDelayMs: { p50: ownLoop.percentile(50) / 1e6, p99: ownLoop.percentile(99) / 1e6, max: ownLoop.max / 1e6 },
      },
      verdict: errors === 0 && alive && readersComplete ? 'pass' : 'fail',
    };

    printReport(result.wellBehaved, result.changeLagMs, counts, stalledSummary, readers, memorySummary, result.eventLoops, alive, errors);
    const outDir = join(REPO_ROOT, '.cache', 'soak');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `soak-${result.at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    log(`wrote ${file}`);
    if (!alive) log(`the registry died:\n${registry.output()}`);
    return result.verdict === 'pass' ? 0 : 1;
  } finally {
    sampler?.close();
    await registry.stop();
    await new Promise<void>((resolve) => {
      tool.server.closeAllConnections();
      tool.server.close(() => resolve());
    });
    rmSync(dbDir, { recursive: true, force: true });
  }
}

/** The registry's longest event-loop hold per sample interval, over the run. */
function summariseHolds(values: readonly (number | undefined)[]): { median: number; max: number; over500: number } {
  const held = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  return { median: median(held), max: held.length > 0 ? Math.max(...held) : NaN, over500: held.filter((v) => v > 500).length };
}

const fmt = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(ms < 10 ? 2 : 1) : '-');

function printReport(
  rows: {
    kind: string;
    requests: number;
    errors: number;
    p50: number;
    p99: number;
    statuses: Record<string, number>;
    errorSamples: string[];
  }[],
  lag: { events: number; p50: number; p99: number },
  counts: ReturnType<typeof newCounts>,
  stalled: { opened: number; cutOff: number; medianLifetimeS: number; maxLifetimeS: number },
  readers: { streams: number; received: number; missing: number; repeatedOrOutOfOrder: number }[],
  memory: {
    startMiB: number;
    maxMiB: number;
    endMiB: number;
    trendPerMin: Record<string, number>;
    heapFloorMiBByMinute: number[];
    samples: MemorySample[];
  },
  loops: { registryHeldMs: { median: number; max: number; over500: number }; soakDelayMs: { p50: number; p99: number; max: number } },
  alive: boolean,
  errors: number,
): void {
  const out: string[] = [];
  out.push(
    '',
    `## Soak: ${durationS} s on loopback`,
    '',
    '| Well-behaved kind | Answers | Errors | p50 ms | p99 ms | Statuses |',
    '| --- | ---: | ---: | ---: | ---: | --- |',
  );
  for (const r of rows) {
    const statuses = Object.entries(r.statuses)
      .map(([code, n]) => `${code}×${n}`)
      .join(' ');
    out.push(`| ${r.kind} | ${r.requests} | ${r.errors} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${statuses} |`);
  }
  out.push(`| change events (write sent → event read) | ${lag.events} | - | ${fmt(lag.p50)} | ${fmt(lag.p99)} | |`);
  for (const r of rows.filter((row) => row.errorSamples.length > 0))
    out.push(`\n${r.kind} errors, first few: ${r.errorSamples.join('; ')}`);
  const sum = (f: (r: (typeof readers)[number]) => number) => readers.reduce((n, r) => n + f(r), 0);
  out.push(
    '',
    `Change readers (admin view, ${readers.length}): ${sum((r) => r.received)} writes received over ${sum((r) => r.streams)} streams, ` +
      `${sum((r) => r.missing)} missing, ${sum((r) => r.repeatedOrOutOfOrder)} repeated or out of order.`,
    `Misbehaving clients: ${stalled.opened} stalled readers opened, ${stalled.cutOff} cut off by the registry ` +
      `(after ${fmt(stalled.medianLifetimeS)} s median, ${fmt(stalled.maxLifetimeS)} s at most); ` +
      `${counts.hogSocketsOpened} hog sockets opened (${counts.hogSocketsClosed} closed by the registry, ${counts.hogSocketsRefused} refused); ` +
      `${counts.disconnectingCalls} calls hung up mid-call.`,
  );
  const t = memory.trendPerMin;
  const signed = (v: number | undefined, digits = 2) =>
    v === undefined || !Number.isFinite(v) ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(digits)}`;
  out.push(
    `Registry RSS: start ${memory.startMiB.toFixed(1)} MiB, max ${memory.maxMiB.toFixed(1)} MiB, end ${memory.endMiB.toFixed(1)} MiB; ` +
      `trends over the second half, per minute: RSS ${signed(t.rssMiB)} MiB (anonymous ${signed(t.anonMiB)}), heap used ${signed(t.heapUsedMiB)} MiB, ` +
      `heap total ${signed(t.heapTotalMiB)} MiB, external ${signed(t.externalMiB)} MiB; tools ${signed(t.tools, 0)}, change rows ${signed(t.changeRows, 0)}, ` +
      `call rows ${signed(t.callRows, 0)}, audit rows ${signed(t.auditRows, 0)}`,
    `Heap used after collection (least per minute, from minute 1): ${memory.heapFloorMiBByMinute.join(', ') || '-'} MiB, trend ${signed(t.heapFloorMiB)} MiB/min ` +
      "(a leak raises this floor; RSS and heap over a few minutes follow the collector's sawtooth)",
    `Event loops: the registry's longest hold per sample, median ${fmt(loops.registryHeldMs.median)} ms, max ${fmt(loops.registryHeldMs.max)} ms, ` +
      `${loops.registryHeldMs.over500} samples over 500 ms; the soak's own loop delay p50 ${fmt(loops.soakDelayMs.p50)} ms, p99 ${fmt(loops.soakDelayMs.p99)} ms, ` +
      `max ${fmt(loops.soakDelayMs.max)} ms (it adds to every latency above).`,
    '',
    'Registry memory over time (MiB; counts of what grows):',
    '',
    ...memoryTable(memory.samples),
    '',
    `Verdict: ${errors === 0 && alive && sum((r) => r.missing + r.repeatedOrOutOfOrder) === 0 ? 'PASS' : 'FAIL'}: ${errors} errors seen by well-behaved clients, ` +
      `${sum((r) => r.missing)} writes missed by change readers${alive ? '' : '; the registry process died'}.`,
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
