/**
 * Issue 10: reads during a large import. A registry seeded with `--import-seed` tools (1,000)
 * and restarted (so the baseline is a freshly started process), then POST /import of
 * `--import-size` new tools (100,000) while one client loads anonymous GET / over 4
 * connections and another loads /healthz over 1. Latency counts only requests in flight during
 * the import (sent before its answer arrived, answered after it was sent); the clients are
 * plain keep-alive loops that finish the request in flight before stopping, so a slow answer
 * at the end of the window is not lost. A closed loop sends nothing while it waits, so a
 * stalled server yields few slow samples among many fast ones (coordinated omission): the
 * table also gives percentiles corrected for it and the longest time with no answer at all.
 * Each latency is given twice: to the answer's first byte (its status line and headers: when
 * the server answered) and to its last byte. A read answered once the import is in the
 * catalogue gets the new full list (66 MiB at 101,000 tools), whose transfer alone takes the
 * client about a second on this machine; those answers are also counted apart. The goal is
 * read on the first byte. The server's VmRSS is sampled every 10 ms from the
 * import's start until memory settles after it (VmHWM read then: the catalogue may be built
 * after the import is answered); the catalogue's memory is VmRSS once it settles minus VmRSS
 * before, and (cross-check) VmRSS of a restart on the imported database minus the same baseline.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminToken, bundle } from './data.js';
import { peakRssMiB, percentile, rssMiB, sleep } from './lib.js';
import { log, opts, TARGETS } from './options.js';
import { f0, f1, f2, passMiss, table, type Section } from './report.js';
import { importBundle, startRegistry, type Registry } from './servers.js';

/** Latency percentiles of the answered requests of a window, by one measure of latency. */
interface Percentiles {
  /** Per answered request (a stalled connection sends nothing, so these understate a stall). */
  p50: number;
  p99: number;
  max: number;
  /**
   * Corrected for coordinated omission (HdrHistogram's recordValueWithExpectedInterval): an
   * answer that took L ms also counts the requests the connection would have sent meanwhile,
   * L - I, L - 2I, ... down to I, with I the median latency before the import.
   */
  correctedP50: number;
  correctedP99: number;
  expectedIntervalMs: number;
}

interface WindowStats extends Percentiles {
  /** Requests in flight during the import window. */
  count: number;
  /** The same requests, to the first byte of their answers (Percentiles above: to the last). */
  firstByte: Percentiles;
  /** Answers that carried the catalogue with the import in it, and the longest of them (last byte). */
  afterSwap: number;
  afterSwapMaxMs: number;
  /** The longest time during the import with no answer on any connection. */
  longestGapMs: number;
  /** Answers other than 200, and connection errors, in the window. */
  errors: number;
  statuses: Record<string, number>;
  /** The slowest requests: when each was sent and answered, in ms from the import's start. */
  slowest: { sentMs: number; answeredMs: number; status: number }[];
}

export interface ImportReadsResult {
  seed: number;
  imported: number;
  bundleMiB: number;
  importMs: number;
  get: WindowStats;
  healthz: WindowStats;
  rssBeforeMiB: number;
  /** Highest VmRSS sampled while POST /import was in flight. */
  rssPeakWindowMiB: number;
  /** Highest VmRSS sampled from the import's start until memory settled, and VmHWM then. */
  rssPeakSampledMiB: number;
  hwmMiB: number;
  rssSettledMiB: number;
  rssAfterRestartMiB: number;
  /** Settled minus before: the catalogue's memory as the issue defines it. */
  catalogueMiB: number;
  /** max(VmHWM, sampled) minus before: what the import held at its peak above the baseline (until settled). */
  peakAboveBaselineMiB: number;
  /** peakAboveBaseline / catalogue (the goal: < 2). */
  memoryRatio: number;
  /** Peak RSS itself over the catalogue's memory, for reference. */
  peakOverCatalogue: number;
}

interface Sample {
  start: number;
  /** When the status line and headers arrived. */
  first: number;
  end: number;
  status: number;
  /** The answer's X-Registry-Index. */
  index: number;
}

/** `connections` keep-alive loops of GET `path`, until stopped; stop() waits for the requests in flight. */
function loop(base: string, path: string, connections: number) {
  const url = new URL(path, base);
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const samples: Sample[] = [];
  let stopped = false;
  const once = () =>
    new Promise<void>((resolve) => {
      const start = performance.now();
      const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, agent }, (res) => {
        const first = performance.now();
        const index = Number(res.headers['x-registry-index'] ?? NaN);
        res.resume();
        res.once('end', () => {
          samples.push({ start, first, end: performance.now(), status: res.statusCode ?? 0, index });
          resolve();
        });
        res.once('error', () => {
          samples.push({ start, first, end: performance.now(), status: 0, index });
          resolve();
        });
      });
      req.setTimeout(60_000, () => req.destroy(new Error('timeout')));
      req.once('error', () => {
        const end = performance.now();
        samples.push({ start, first: end, end, status: 0, index: NaN });
        resolve();
      });
      req.end();
    });
  const loops = Array.from({ length: connections }, async () => {
    while (!stopped) await once();
  });
  return {
    async stop(): Promise<Sample[]> {
      stopped = true;
      await Promise.all(loops);
      agent.destroy();
      return samples;
    },
  };
}

function percentiles(ok: number[], before: number[]): Percentiles {
  const interval = Math.max(0.1, percentile(before.length > 0 ? before : [10], 50));
  const corrected: number[] = [];
  for (const latency of ok) {
    corrected.push(latency);
    for (let missed = latency - interval; missed >= interval && corrected.length < 5_000_000; missed -= interval) corrected.push(missed);
  }
  return {
    p50: percentile([...ok], 50),
    p99: percentile([...ok], 99),
    max: ok.length === 0 ? NaN : Math.max(...ok),
    correctedP50: percentile(corrected, 50),
    correctedP99: percentile(corrected, 99),
    expectedIntervalMs: interval,
  };
}

function windowStats(samples: Sample[], from: number, to: number): WindowStats {
  const inWindow = samples.filter((s) => s.start < to && s.end > from);
  const answered = inWindow.filter((s) => s.status === 200);
  const statuses: Record<string, number> = {};
  for (const s of inWindow) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
  const beforeImport = samples.filter((s) => s.end <= from && s.status === 200);
  // The index before the import: an answer with a later one carries the import.
  const indexBefore = Math.max(...beforeImport.map((s) => s.index).filter((i) => Number.isFinite(i)), 0);
  const afterSwap = answered.filter((s) => s.index > indexBefore);
  const ends = [from, ...samples.filter((s) => s.end > from && s.end < to).map((s) => s.end), to].sort((a, b) => a - b);
  let longestGapMs = 0;
  for (let k = 1; k < ends.length; k++) longestGapMs = Math.max(longestGapMs, (ends[k] ?? 0) - (ends[k - 1] ?? 0));
  return {
    count: inWindow.length,
    ...percentiles(
      answered.map((s) => s.end - s.start),
      beforeImport.map((s) => s.end - s.start),
    ),
    firstByte: percentiles(
      answered.map((s) => s.first - s.start),
      beforeImport.map((s) => s.first - s.start),
    ),
    afterSwap: afterSwap.length,
    afterSwapMaxMs: afterSwap.length === 0 ? NaN : Math.max(...afterSwap.map((s) => s.end - s.start)),
    longestGapMs,
    errors: inWindow.length - answered.length,
    statuses,
    slowest: [...inWindow]
      .sort((a, b) => b.end - b.start - (a.end - a.start))
      .slice(0, 3)
      .map((x) => ({ sentMs: Math.round(x.start - from), answeredMs: Math.round(x.end - from), status: x.status })),
  };
}

/**
 * POST /import from a child process started (and holding the bundle) before the clock starts:
 * sent from this process, which also runs the read loops, encoding the 43 MiB body held them
 * for ~0.25 s, and spawning a sender at the import's start for ~0.1 s, both of which showed
 * as server stalls. `post()` sends it and resolves with the time to the answer, in ms.
 */
async function importPoster(base: string, body: Buffer, dir: string): Promise<{ post(): Promise<number>; close(): void }> {
  const file = join(dir, 'import-bundle.json');
  writeFileSync(file, body);
  const script = `
    const { readFileSync } = require('node:fs');
    const body = readFileSync(process.env.BUNDLE_FILE);
    process.stdout.write('ready\\n');
    process.stdin.once('data', async () => {
      const res = await fetch(process.env.IMPORT_URL, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.ADMIN_TOKEN, 'content-type': 'application/json' }, body });
      const text = await res.text();
      process.stdout.write(JSON.stringify({ status: res.status, text: text.slice(0, 500) }) + '\\n');
      process.exit(0);
    });`;
  const child = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, BUNDLE_FILE: file, IMPORT_URL: `${base}/import`, ADMIN_TOKEN: adminToken() },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  let waiting: (() => void) | null = null;
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    lines.push(...parts);
    waiting?.();
  });
  const line = async () => {
    while (lines.length === 0) {
      if (child.exitCode !== null) throw new Error('the import sender exited early');
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 100);
      });
    }
    return lines.shift() as string;
  };
  if ((await line()) !== 'ready') throw new Error('the import sender did not start');
  return {
    async post() {
      const started = performance.now();
      child.stdin.write('go\n');
      const answer = JSON.parse(await line()) as { status: number; text: string };
      const ms = performance.now() - started;
      if (answer.status !== 200) throw new Error(`POST /import answered ${answer.status}: ${answer.text}`);
      return ms;
    },
    close() {
      if (child.exitCode === null) child.kill();
    },
  };
}

/** VmRSS every 500 ms until two readings in a row differ by under 1 MiB (at most 15 s). */
async function settledRss(pid: number): Promise<number> {
  let last = rssMiB(pid);
  for (let waited = 0; waited < 15_000; waited += 500) {
    await sleep(500);
    const now = rssMiB(pid);
    if (Math.abs(now - last) < 1) return now;
    last = now;
  }
  return last;
}

export async function importDuringReads(): Promise<ImportReadsResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  try {
    log(`import: seeding ${opts.importSeed} tools, then restarting`);
    registry = await startRegistry(dir);
    await importBundle(registry, bundle(opts.importSeed));
    await registry.child.stop();
    registry = await startRegistry(dir);
    const body = Buffer.from(bundle(opts.importSize, 'imp'));
    const bundleMiB = body.length / 1024 / 1024;
    const poster = await importPoster(registry.base, body, dir);
    await sleep(1000);
    const rssBeforeMiB = rssMiB(registry.child.pid);

    const pid = registry.child.pid;
    const gets = loop(registry.base, '/', opts.importReadConnections);
    const health = loop(registry.base, '/healthz', 1);
    await sleep(1000);
    // Sampled from before the import until memory settles after it: the catalogue may be
    // built (and the old one released) after the import is answered.
    const samples: { at: number; mib: number }[] = [];
    const sampler = setInterval(() => {
      try {
        samples.push({ at: performance.now(), mib: rssMiB(pid) });
      } catch {
        // the process is gone: the import below fails and says so
      }
    }, 10);
    log(`import: POST /import of ${opts.importSize} tools (${bundleMiB.toFixed(1)} MiB) under load`);
    const from = performance.now();
    let importMs: number;
    let clients: [Sample[], Sample[]];
    let rssSettledMiB: number;
    try {
      importMs = await poster.post();
      clients = await Promise.all([gets.stop(), health.stop()]);
      rssSettledMiB = await settledRss(pid);
    } finally {
      clearInterval(sampler);
      poster.close();
      // Idempotent: after a failed import the clients must not go on against a stopped server.
      await Promise.all([gets.stop(), health.stop()]);
    }
    const to = from + importMs;
    const get = windowStats(clients[0], from, to);
    const healthz = windowStats(clients[1], from, to);
    const hwmMiB = peakRssMiB(pid);
    const rssPeakWindowMiB = Math.max(...samples.filter((x) => x.at >= from && x.at <= to).map((x) => x.mib));
    const rssPeakSampledMiB = Math.max(...samples.map((x) => x.mib));

    await registry.child.stop();
    registry = await startRegistry(dir);
    await sleep(1000);
    const rssAfterRestartMiB = rssMiB(registry.child.pid);

    const catalogueMiB = rssSettledMiB - rssBeforeMiB;
    const peakAboveBaselineMiB = Math.max(hwmMiB, rssPeakSampledMiB) - rssBeforeMiB;
    const result: ImportReadsResult = {
      seed: opts.importSeed,
      imported: opts.importSize,
      bundleMiB,
      importMs,
      get,
      healthz,
      rssBeforeMiB,
      rssPeakWindowMiB,
      rssPeakSampledMiB,
      hwmMiB,
      rssSettledMiB,
      rssAfterRestartMiB,
      catalogueMiB,
      peakAboveBaselineMiB,
      memoryRatio: peakAboveBaselineMiB / catalogueMiB,
      peakOverCatalogue: Math.max(hwmMiB, rssPeakSampledMiB) / catalogueMiB,
    };
    log(
      `import: ${importMs.toFixed(0)} ms; GET / in window: ${get.count} p50 ${f2(get.p50)} p99 ${f2(get.p99)} max ${f2(get.max)} ms, corrected p99 ${f2(get.correctedP99)} ms, ` +
        `first byte p99 ${f2(get.firstByte.p99)} max ${f2(get.firstByte.max)} corrected p99 ${f2(get.firstByte.correctedP99)} ms, ${get.afterSwap} answered with the import (max ${f0(get.afterSwapMaxMs)} ms), ` +
        `longest gap ${f0(get.longestGapMs)} ms (${JSON.stringify(get.statuses)}); ` +
        `/healthz: ${healthz.count} p99 ${f2(healthz.p99)} max ${f2(healthz.max)} ms; ` +
        `slowest GET / (sent -> answered, ms from the import's start): ${get.slowest.map((x) => `${x.sentMs} -> ${x.answeredMs}`).join(', ')}; RSS ${f0(rssBeforeMiB)} -> peak ${f0(Math.max(hwmMiB, rssPeakSampledMiB))} -> settled ${f0(rssSettledMiB)} (restart ${f0(rssAfterRestartMiB)}) MiB`,
    );
    return result;
  } finally {
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function importSection(r: ImportReadsResult): Section[] {
  const row = (name: string, w: WindowStats, goal: boolean) => [
    name,
    f0(w.count),
    f2(w.firstByte.p50),
    f2(w.firstByte.p99),
    f2(w.firstByte.max),
    f2(w.firstByte.correctedP99),
    f2(w.p50),
    f2(w.p99),
    f2(w.max),
    f2(w.correctedP99),
    `${f0(w.afterSwap)} (max ${f0(w.afterSwapMaxMs)} ms)`,
    f0(w.longestGapMs),
    f0(w.errors),
    goal ? `first byte, corrected p99 < ${TARGETS.importReadP99Ms} ms` : '-',
    goal ? passMiss(w.firstByte.correctedP99 < TARGETS.importReadP99Ms && w.errors === 0) : '-',
  ];
  const latency = table(
    [
      'during the import',
      'requests',
      'first byte p50 ms',
      'p99 ms',
      'max ms',
      'corrected p99 ms',
      'last byte p50 ms',
      'p99 ms',
      'max ms',
      'corrected p99 ms',
      'answered with the import',
      'longest gap ms',
      'not 200',
      'goal',
      'met',
    ],
    [row(`GET / (${opts.importReadConnections} connections)`, r.get, true), row('/healthz (1 connection)', r.healthz, false)],
    1,
    ['goal'],
  );
  const peak = Math.max(r.hwmMiB, r.rssPeakSampledMiB);
  const memory = table(
    [
      'import',
      'bundle MiB',
      'import ms',
      'RSS before MiB',
      'peak RSS in request MiB',
      'peak RSS MiB',
      'RSS settled MiB',
      'RSS restart MiB',
      'catalogue MiB',
      'peak above before MiB',
      'ratio',
      'peak / catalogue',
      'goal',
      'met',
    ],
    [
      [
        `${f0(r.imported)} new onto ${f0(r.seed)}`,
        f1(r.bundleMiB),
        f0(r.importMs),
        f0(r.rssBeforeMiB),
        f0(r.rssPeakWindowMiB),
        f0(peak),
        f0(r.rssSettledMiB),
        f0(r.rssAfterRestartMiB),
        f0(r.catalogueMiB),
        f0(r.peakAboveBaselineMiB),
        f2(r.memoryRatio),
        f2(r.peakOverCatalogue),
        `ratio < ${TARGETS.importMemoryRatio}`,
        passMiss(r.memoryRatio < TARGETS.importMemoryRatio),
      ],
    ],
    1,
    ['goal'],
  );
  return [
    {
      title:
        `Reads during a ${f0(r.imported)}-tool import (issue 10; requests in flight during POST /import; latency to the answer's first byte and to its last; ` +
        `"corrected" counts the requests a stalled connection would have sent, at the median latency before the import; the goal is read on the corrected ` +
        `p99 to the first byte; "answered with the import" = answers carrying the new full list, whose transfer is most of their last-byte latency; ` +
        `longest gap = the longest time with no answer on any connection)`,
      ...latency,
    },
    {
      title:
        'Import memory (issue 10; peak RSS = VmHWM from the import until memory settled, "in request" = sampled while POST /import was in flight; ' +
        'catalogue = RSS settled - RSS before; ratio = (peak RSS - RSS before) / catalogue; RSS restart = a fresh process on the imported database, a cross-check)',
      ...memory,
    },
  ];
}
