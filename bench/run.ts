/**
 * `npm run bench`: throughput and latency of the registry against a ceiling, on this machine.
 *
 *   npm run bench [-- --quick] [--runs=3] [--duration=5] [--sizes=1000,10000]
 *                 [--growth-sizes=1000,10000,100000] [--no-scenarios] [--no-growth] [--no-bridge]
 *                 [--no-waiters] [--waiters=10000]
 *
 * 1. Scenarios at each size: the registry (a child process, `node --import tsx src/cli/main.ts
 *    serve`) seeded with N generated HTTP tools through POST /import, and a ceiling (a bare
 *    Fastify child process serving the exact bytes the registry returned, from Buffers, with the
 *    same headers). Anonymous GET /, bearer GET / over 50 tokens with 50 scope sets, If-None-Match
 *    revalidation (304) and durable registrations (PUT /tools/{name}, 16 clients). Runs
 *    alternate registry and ceiling; each figure is the median of the runs.
 * 2. Growth: import time, startup time with N tools in the database, resident memory, and
 *    anonymous discovery latency at 1,000 to 100,000 tools.
 * 3. Bridged calls (needs java and mvn): a Pulsar broker (scripts/pulsar.sh), a TS echo tool
 *    service, calls through POST /tools/{name}/invoke against the same calls made directly on
 *    the bus.
 *
 * Prints tables, and writes the raw results to .cache/bench/ (JSON and Markdown).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { directBus } from './bus.js';
import { runWaitersBench, type WaitersResult } from './waiters.js';
import { adminToken, agentTokens, bundle, httpTool, JWT_SECRET, token } from './data.js';
import {
  describeStatuses,
  freePort,
  killAllChildren,
  load,
  median,
  REPO_ROOT,
  peakRssMiB,
  rssMiB,
  spawnNode,
  waitHttpOk,
  type Child,
  type LoadOptions,
  type RunResult,
} from './lib.js';

// ---------------------------------------------------------------------------------------------
// options

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const numbers = (text: string | undefined, fallback: number[]) => (text === undefined ? fallback : text.split(',').map(Number));

const quick = flag('quick');
const opts = {
  quick,
  runs: Number(value('runs') ?? (quick ? 1 : 3)),
  durationS: Number(value('duration') ?? (quick ? 2 : 5)),
  warmupS: quick ? 1 : 2,
  growthDurationS: quick ? 3 : 5,
  /** Few connections: at 100,000 tools one answer is ~66 MiB, and 10 of them at once take longer than the run. */
  growthConnections: 2,
  sizes: numbers(value('sizes'), [1000, 10_000]),
  growthSizes: numbers(value('growth-sizes'), [1000, 10_000, 100_000]),
  readConnections: 10,
  writeConnections: 16,
  bridgeConcurrency: 16,
  scenarios: !flag('no-scenarios'),
  growth: !flag('no-growth'),
  bridge: !flag('no-bridge'),
  waiters: !flag('no-waiters'),
  waiterCount: Number(value('waiters') ?? 10_000),
};

const TARGETS = { readRatio: 0.8, notModifiedRatio: 0.8, writesPerS: 2000, startup100kMs: 3000 };

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

// ---------------------------------------------------------------------------------------------
// cleanup: every child stops, whatever happens

let pulsarEnv: Record<string, string> | null = null;

function stopPulsarSync(): void {
  if (!pulsarEnv) return;
  spawnSync('bash', [join(REPO_ROOT, 'scripts/pulsar.sh'), 'stop'], { env: { ...process.env, ...pulsarEnv }, stdio: 'inherit' });
  pulsarEnv = null;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping children`);
    killAllChildren();
    stopPulsarSync();
    process.exit(130);
  });
}

// ---------------------------------------------------------------------------------------------
// the registry as a child process

interface Registry {
  child: Child;
  base: string;
  startupMs: number;
  dbDir: string;
}

async function startRegistry(dbDir: string, extraEnv: Record<string, string> = {}): Promise<Registry> {
  const port = await freePort();
  const since = performance.now();
  const child = spawnNode('src/cli/main.ts', ['serve'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: join(dbDir, 'registry.db'),
    JWT_SECRET,
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'warn',
    BODY_LIMIT: String(512 * 1024 * 1024),
    ...extraEnv,
  });
  const base = `http://127.0.0.1:${port}`;
  const startupMs = await waitHttpOk(`${base}/healthz`, child, since);
  return { child, base, startupMs, dbDir };
}

async function importBundle(registry: Registry, body: string): Promise<number> {
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

const KEPT_HEADERS = ['content-type', 'etag', 'cache-control', 'vary', 'x-hidden-tools', 'x-registry-index', 'x-request-id'];

async function fetchView(base: string, authorization: string | null) {
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

// ---------------------------------------------------------------------------------------------
// measuring: registry and ceiling, alternating, median of runs

interface Side {
  runs: RunResult[];
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Median CPU of the server process per request, microseconds. */
  cpuUsPerReq: number;
}

interface Comparison {
  scenario: string;
  n: number;
  registry: Side;
  ceiling: Side;
  ratio: number;
  target: string;
  met: boolean | null;
}

const summarise = (runs: RunResult[]): Side => ({
  runs,
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  errors: runs.reduce((sum, r) => sum + r.errors, 0),
  cpuUsPerReq: median(runs.map((r) => r.cpuUsPerReq ?? NaN)),
});

type Runner = (durationS: number) => Promise<RunResult>;

/** Warms both sides up, then alternates which goes first in each run. */
async function compare(label: string, registry: Runner, ceiling: Runner): Promise<{ registry: Side; ceiling: Side }> {
  log(`${label}: warm-up`);
  await registry(opts.warmupS);
  await ceiling(opts.warmupS);
  const r: RunResult[] = [];
  const c: RunResult[] = [];
  for (let i = 0; i < opts.runs; i++) {
    if (i % 2 === 0) {
      r.push(await registry(opts.durationS));
      c.push(await ceiling(opts.durationS));
    } else {
      c.push(await ceiling(opts.durationS));
      r.push(await registry(opts.durationS));
    }
    const [lr, lc] = [r.at(-1), c.at(-1)];
    if (lr && lc) {
      log(
        `${label}: run ${i + 1}/${opts.runs}: registry ${lr.rps.toFixed(0)}/s p50 ${lr.p50.toFixed(2)} p99 ${lr.p99.toFixed(2)} ms cpu ${f0(lr.cpuUsPerReq)} us/req` +
          ` | ceiling ${lc.rps.toFixed(0)}/s p50 ${lc.p50.toFixed(2)} p99 ${lc.p99.toFixed(2)} ms cpu ${f0(lc.cpuUsPerReq)} us/req` +
          (lr.errors + lc.errors > 0 ? ` | unexpected: registry ${describeStatuses(lr.statuses)} errors ${lr.errors}, ceiling ${describeStatuses(lc.statuses)} errors ${lc.errors}` : ''),
      );
    }
  }
  return { registry: summarise(r), ceiling: summarise(c) };
}

/** What a scenario sends, without where and for how long. */
type LoadSpec = Omit<LoadOptions, 'url' | 'durationS'> & { path?: string };

const loader = (base: string, { path, ...o }: LoadSpec, serverPid?: number): Runner => (durationS) =>
  load({ ...o, url: `${base}${path ?? '/'}`, durationS, ...(serverPid !== undefined && { serverPid }) });

// ---------------------------------------------------------------------------------------------
// 1. scenarios

let writeCounter = 0;

async function scenarios(n: number): Promise<Comparison[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  let ceiling: Child | undefined;
  try {
    log(`scenarios at ${n} tools: starting the registry`);
    registry = await startRegistry(dir);
    const importMs = await importBundle(registry, bundle(n));
    log(`imported ${n} tools in ${importMs.toFixed(0)} ms`);
    const admin = `Bearer ${adminToken()}`;

    // A sample write (replacing an existing tool with itself) for the ceiling's PUT answer.
    const sample = httpTool(1);
    const putRes = await fetch(`${registry.base}/tools/${String(sample['name'])}`, {
      method: 'PUT',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify(sample),
    });
    const putBody = Buffer.from(await putRes.arrayBuffer());
    if (putRes.status !== 200) throw new Error(`sample PUT answered ${putRes.status}: ${putBody.toString()}`);

    // The exact bytes of every view the scenarios ask for.
    const tokens = agentTokens().map((t) => `Bearer ${t}`);
    const anonymous = await fetchView(registry.base, null);
    const views = [{ authorization: '', ...anonymous }];
    for (const t of tokens) views.push({ authorization: t, ...(await fetchView(registry.base, t)) });
    const bearerBytes = views.slice(1).map((v) => v.body.length);
    log(
      `views: anonymous ${(anonymous.body.length / 1024).toFixed(0)} KiB; ${new Set(views.slice(1).map((v) => v.headers['etag'])).size} distinct bearer views, ` +
        `${(Math.min(...bearerBytes) / 1024).toFixed(0)}-${(Math.max(...bearerBytes) / 1024).toFixed(0)} KiB`,
    );

    const spec = {
      port: await freePort(),
      views: views.map((v, i) => {
        const bodyFile = join(dir, `view-${i}.json`);
        writeFileSync(bodyFile, v.body);
        return { authorization: v.authorization, bodyFile, headers: v.headers };
      }),
      write: {
        status: 201,
        bodyFile: join(dir, 'write.json'),
        headers: { 'content-type': putRes.headers.get('content-type') ?? 'application/json; charset=utf-8', 'x-registry-index': putRes.headers.get('x-registry-index') ?? '0' },
      },
    };
    writeFileSync(spec.write.bodyFile, putBody);
    writeFileSync(join(dir, 'ceiling.json'), JSON.stringify(spec));
    const ceilingSince = performance.now();
    ceiling = spawnNode('bench/ceiling-server.ts', [join(dir, 'ceiling.json')], {});
    await waitHttpOk(`http://127.0.0.1:${spec.port}/healthz`, ceiling, ceilingSince);
    const ceilingBase = `http://127.0.0.1:${spec.port}`;
    // The ceiling must serve the very same bytes.
    for (const v of [views[0], views[1]]) {
      if (!v) continue;
      const got = await fetchView(ceilingBase, v.authorization || null);
      if (!got.body.equals(v.body) || got.headers['etag'] !== v.headers['etag']) throw new Error('the ceiling does not serve the registry\'s bytes');
    }

    const results: Comparison[] = [];
    const reads = (scenario: string, ratioTarget: number, o: LoadSpec) => async () => {
      const { registry: r, ceiling: c } = await compare(`${scenario} @${n}`, loader(registry?.base ?? '', o, registry?.child.pid), loader(ceilingBase, o, ceiling?.pid));
      const ratio = r.rps / c.rps;
      results.push({ scenario, n, registry: r, ceiling: c, ratio, target: `>= ${ratioTarget} of ceiling`, met: ratio >= ratioTarget });
    };
    let rotation = 0;
    const rotate = (request: autocannon.Request): autocannon.Request => {
      request.headers = { ...request.headers, authorization: tokens[rotation++ % tokens.length] ?? '' };
      return request;
    };

    await reads('anonymous GET /', TARGETS.readRatio, { connections: opts.readConnections, expectStatus: 200 })();
    await reads('bearer GET / (50 scope sets)', TARGETS.readRatio, { connections: opts.readConnections, expectStatus: 200, setupRequest: rotate })();
    await reads('If-None-Match -> 304', TARGETS.notModifiedRatio, {
      connections: opts.readConnections,
      expectStatus: 304,
      headers: { 'if-none-match': anonymous.headers['etag'] ?? '' },
    })();

    // Durable registrations: distinct new names, so every request is a committed insert.
    const putNew = (request: autocannon.Request): autocannon.Request => {
      const i = writeCounter++;
      const tool = httpTool(i, 'bench-write');
      request.path = `/tools/${String(tool['name'])}`;
      request.body = JSON.stringify(tool);
      return request;
    };
    const writeOpts: LoadSpec = {
      connections: opts.writeConnections,
      method: 'PUT',
      headers: { authorization: admin, 'content-type': 'application/json' },
      expectStatus: 201,
      setupRequest: putNew,
    };
    const w = await compare(`registrations @${n}`, loader(registry.base, writeOpts, registry.child.pid), loader(ceilingBase, writeOpts, ceiling.pid));
    results.push({
      scenario: 'registrations (PUT, 16 clients)',
      n,
      registry: w.registry,
      ceiling: w.ceiling,
      ratio: w.registry.rps / w.ceiling.rps,
      target: `>= ${TARGETS.writesPerS} writes/s`,
      met: w.registry.rps >= TARGETS.writesPerS,
    });
    return results;
  } finally {
    await ceiling?.stop();
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// 2. growth

interface GrowthRow {
  n: number;
  importMs: number | null;
  importPeakRssMiB: number | null;
  bundleMiB: number | null;
  startupMs: number;
  rssAfterStartMiB: number;
  firstGetMs: number;
  rssAfterGetMiB: number;
  viewBytes: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function growth(n: number): Promise<GrowthRow> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  try {
    let importMs: number | null = null;
    let importPeakRssMiB: number | null = null;
    let bundleMiB: number | null = null;
    registry = await startRegistry(dir);
    if (n > 0) {
      const body = bundle(n);
      bundleMiB = body.length / 1024 / 1024;
      log(`growth ${n}: importing (${bundleMiB.toFixed(1)} MiB bundle)`);
      importMs = await importBundle(registry, body);
      // The import's memory bound: the server's peak resident memory, which includes the
      // parsed body, the validated descriptors and the new catalogue.
      importPeakRssMiB = peakRssMiB(registry.child.pid);
    }
    await registry.child.stop();
    registry = await startRegistry(dir);
    const rssAfterStartMiB = rssMiB(registry.child.pid);
    const t0 = performance.now();
    const first = await fetch(`${registry.base}/`);
    const viewBytes = (await first.arrayBuffer()).byteLength;
    const firstGetMs = performance.now() - t0;
    const rssAfterGetMiB = rssMiB(registry.child.pid);
    const run = await load({ url: `${registry.base}/`, durationS: opts.growthDurationS, connections: opts.growthConnections, expectStatus: 200 });
    const row: GrowthRow = { n, importMs, importPeakRssMiB, bundleMiB, startupMs: registry.startupMs, rssAfterStartMiB, firstGetMs, rssAfterGetMiB, viewBytes, rps: run.rps, p50: run.p50, p99: run.p99, errors: run.errors };
    log(
      `growth ${n}: import ${importMs === null ? '-' : `${importMs.toFixed(0)} ms`}, startup ${row.startupMs.toFixed(0)} ms, RSS ${rssAfterStartMiB.toFixed(0)} -> ${rssAfterGetMiB.toFixed(0)} MiB, ` +
        `first GET ${firstGetMs.toFixed(0)} ms, ${run.rps.toFixed(0)}/s p50 ${run.p50.toFixed(2)} p99 ${run.p99.toFixed(2)} ms`,
    );
    return row;
  } finally {
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// 3. bridged calls

interface BridgeResult {
  skipped: string | null;
  registry?: Side;
  direct?: Side;
  ratio?: number;
  brokerStartS?: number;
}

function missingCommand(): string | null {
  for (const command of ['java', 'mvn', 'curl']) {
    if (spawnSync('bash', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status !== 0) return command;
  }
  return null;
}

async function runPulsarScript(command: 'start' | 'stop', env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn('bash', [join(REPO_ROOT, 'scripts/pulsar.sh'), command], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    proc.once('error', reject);
    proc.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`scripts/pulsar.sh ${command} exited with ${code}`))));
  });
}

async function bridge(): Promise<BridgeResult> {
  const missing = missingCommand();
  if (missing) return { skipped: `${missing} is not on PATH (the Pulsar broker needs java and mvn)` };
  const env = {
    PULSAR_WEB_PORT: String(await freePort()),
    PULSAR_BROKER_PORT: String(await freePort()),
    PULSAR_STATE_DIR: join(REPO_ROOT, '.cache/bench-pulsar'),
  };
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let service: Child | undefined;
  let registry: Registry | undefined;
  let direct: ReturnType<typeof directBus> | undefined;
  try {
    log('bridge: starting the Pulsar broker (scripts/pulsar.sh start)');
    const t0 = performance.now();
    pulsarEnv = env;
    const out = await runPulsarScript('start', env);
    const brokerStartS = (performance.now() - t0) / 1000;
    const wsUrl = /PULSAR_WS_URL=(\S+)/.exec(out)?.[1];
    if (!wsUrl) throw new Error(`scripts/pulsar.sh start printed no PULSAR_WS_URL:\n${out}`);

    service = spawnNode('bench/tool-service.ts', [wsUrl], {});
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the tool service did not get ready:\n${service?.output() ?? ''}`)), 60_000);
      service?.proc.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      service?.proc.once('exit', () => reject(new Error(`the tool service exited:\n${service?.output() ?? ''}`)));
    });

    registry = await startRegistry(dir, { PULSAR_WS_URL: wsUrl });
    await importBundle(
      registry,
      JSON.stringify({
        'tool-services': [{ id: 'bench-echo', topic: 'bench-echo' }],
        tools: [
          {
            type: 'tool-service',
            name: 'bench-echo',
            description: 'Answers ok at once',
            service: 'bench-echo',
            scopes: ['bench:call'],
            arguments: [{ name: 'text', type: 'string', description: 'Anything' }],
          },
        ],
      }),
    );
    const callToken = `Bearer ${token('bench-caller', ['bench:call'])}`;
    const invokeOpts: LoadSpec = {
      path: '/tools/bench-echo/invoke',
      connections: opts.bridgeConcurrency,
      method: 'POST',
      headers: { authorization: callToken, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
      expectStatus: 200,
    };
    const probe = await fetch(`${registry.base}/tools/bench-echo/invoke`, { method: 'POST', headers: invokeOpts.headers ?? {}, body: invokeOpts.body ?? '' });
    const probeText = await probe.text();
    if (probe.status !== 200) throw new Error(`a bridged call answered ${probe.status}: ${probeText}`);

    direct = directBus(wsUrl, 'bench-direct');
    const d = direct;
    await d.run(0.2, 1);
    const { registry: r, ceiling: c } = await compare('bridged calls', loader(registry.base, invokeOpts, registry.child.pid), (s) => d.run(s, opts.bridgeConcurrency));
    return { skipped: null, registry: r, direct: c, ratio: r.rps / c.rps, brokerStartS };
  } finally {
    direct?.close();
    await registry?.child.stop();
    await service?.stop();
    if (pulsarEnv) {
      log('bridge: stopping the broker (scripts/pulsar.sh stop)');
      await runPulsarScript('stop', env).catch((err: unknown) => log(String(err)));
      pulsarEnv = null;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// reporting

const f0 = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : Math.round(v).toLocaleString('en-US'));
const f2 = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(2));
const pct = (v: number) => `${(v * 100).toFixed(0)}%`;

function table(head: string[], rows: string[][]): { text: string; markdown: string } {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  const text = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
  const md = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  return { text, markdown: md };
}

function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  return {
    nproc: availableParallelism(),
    cpuModel: /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}

// ---------------------------------------------------------------------------------------------
// main

async function main(): Promise<void> {
  const startedAt = new Date();
  const results: {
    date: string;
    command: string;
    machine: ReturnType<typeof machine>;
    options: typeof opts;
    targets: typeof TARGETS;
    scenarios: Comparison[];
    growth: GrowthRow[];
    bridge: BridgeResult | null;
    waiters: WaitersResult | { skipped: string } | null;
    elapsedS?: number;
  } = {
    date: startedAt.toISOString(),
    command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
    machine: machine(),
    options: opts,
    targets: TARGETS,
    scenarios: [],
    growth: [],
    bridge: null,
    waiters: null,
  };
  log(`options: ${JSON.stringify(opts)}`);

  if (opts.scenarios) for (const n of opts.sizes) results.scenarios.push(...(await scenarios(n)));
  if (opts.growth) {
    results.growth.push(await growth(0));
    for (const n of opts.growthSizes) results.growth.push(await growth(n));
  }
  if (opts.bridge) {
    try {
      results.bridge = await bridge();
    } catch (err) {
      results.bridge = { skipped: `failed: ${err instanceof Error ? err.message : String(err)}` };
      log(`bridge: ${results.bridge.skipped}`);
    }
  }
  if (opts.waiters) {
    try {
      log(`waiters: ${opts.waiterCount} blocking queries on one process`);
      results.waiters = await runWaitersBench(opts.waiterCount);
    } catch (err) {
      results.waiters = { skipped: `failed: ${err instanceof Error ? err.message : String(err)}` };
      log(`waiters: ${results.waiters.skipped}`);
    }
  }
  results.elapsedS = Math.round((Date.now() - startedAt.getTime()) / 1000);

  // Tables.
  const sections: { title: string; text: string; markdown: string }[] = [];
  if (results.scenarios.length > 0) {
    const t = table(
      ['scenario', 'tools', 'registry req/s', 'p50 ms', 'p99 ms', 'CPU us/req', 'ceiling req/s', 'p50 ms', 'p99 ms', 'CPU us/req', 'ratio', 'target', 'met'],
      results.scenarios.map((s) => [
        s.scenario,
        f0(s.n),
        f0(s.registry.rps),
        f2(s.registry.p50),
        f2(s.registry.p99),
        f0(s.registry.cpuUsPerReq),
        f0(s.ceiling.rps),
        f2(s.ceiling.p50),
        f2(s.ceiling.p99),
        f0(s.ceiling.cpuUsPerReq),
        pct(s.ratio),
        s.target,
        s.met === null ? '-' : s.met ? 'yes' : 'NO',
      ]),
    );
    sections.push({ title: `Discovery and registrations (median of ${opts.runs} x ${opts.durationS} s; reads ${opts.readConnections} connections, writes ${opts.writeConnections})`, ...t });
  }
  if (results.bridge) {
    const b = results.bridge;
    if (b.skipped !== null || !b.registry || !b.direct || b.ratio === undefined) {
      sections.push({ title: 'Bridged calls', text: `skipped: ${b.skipped ?? 'no result'}`, markdown: `Skipped: ${b.skipped ?? 'no result'}` });
    } else {
      const t = table(
        ['path', 'calls/s', 'p50 ms', 'p99 ms', 'registry CPU us/call', 'ratio'],
        [
          ['through the registry (POST /tools/bench-echo/invoke)', f0(b.registry.rps), f2(b.registry.p50), f2(b.registry.p99), f0(b.registry.cpuUsPerReq), pct(b.ratio)],
          ['direct on the bus (PulsarWsClient)', f0(b.direct.rps), f2(b.direct.p50), f2(b.direct.p99), '-', '100%'],
        ],
      );
      sections.push({ title: `Bridged calls (median of ${opts.runs} x ${opts.durationS} s, ${opts.bridgeConcurrency} in flight)`, ...t });
    }
  }
  if (results.waiters) {
    const w = results.waiters;
    if ('skipped' in w) {
      sections.push({ title: 'Blocking waiters', text: `skipped: ${w.skipped}`, markdown: `Skipped: ${w.skipped}` });
    } else {
      const t = table(
        ['waiters', 'answered', 'RSS idle MiB', 'RSS held MiB', 'bytes per waiter', 'write to last answer ms', 'target'],
        [[f0(w.waiters), f0(w.answered), f0(w.rssIdleMiB), f0(w.rssHeldMiB), f0(w.bytesPerWaiter), f0(w.writeToLastAnswerMs), `all within 1000 ms: ${w.answered === w.waiters && w.writeToLastAnswerMs <= 1000 ? 'yes' : 'NO'}`]],
      );
      sections.push({ title: 'Blocking waiters (one write wakes them all)', ...t });
    }
  }
  if (results.growth.length > 0) {
    const t = table(
      ['tools', 'import ms', 'bundle MiB', 'import peak RSS MiB', 'startup ms', 'RSS start MiB', 'RSS after GET / MiB', 'first GET / ms', 'view MiB', 'req/s', 'p50 ms', 'p99 ms'],
      results.growth.map((g) => [
        f0(g.n),
        f0(g.importMs),
        g.bundleMiB === null ? '-' : g.bundleMiB.toFixed(1),
        f0(g.importPeakRssMiB),
        f0(g.startupMs),
        f0(g.rssAfterStartMiB),
        f0(g.rssAfterGetMiB),
        f0(g.firstGetMs),
        (g.viewBytes / 1024 / 1024).toFixed(2),
        f0(g.rps),
        f2(g.p50),
        f2(g.p99),
      ]),
    );
    sections.push({ title: `Growth (anonymous GET /, ${opts.growthDurationS} s, ${opts.growthConnections} connections; target: startup with 100,000 tools < ${TARGETS.startup100kMs} ms)`, ...t });
  }

  const m = results.machine;
  const header = `${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}; ${results.date}; ${results.elapsedS} s`;
  process.stdout.write(`\n${header}\n`);
  for (const s of sections) process.stdout.write(`\n${s.title}\n${s.text}\n`);

  const outDir = join(REPO_ROOT, '.cache/bench');
  mkdirSync(outDir, { recursive: true });
  const stamp = results.date.replace(/[:.]/g, '-');
  writeFileSync(join(outDir, `results-${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, 'latest.md'), `${header}\n\n${sections.map((s) => `### ${s.title}\n\n${s.markdown}\n`).join('\n')}`);
  process.stdout.write(`\nraw results: .cache/bench/results-${stamp}.json (tables in .cache/bench/latest.md)\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    killAllChildren();
    stopPulsarSync();
    process.exit(1);
  },
);
