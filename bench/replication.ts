/**
 * Issue 14, replicated mode: registries that meet on a Pulsar topic (REPLICATION_TOPIC), each
 * applying every write in the topic's order to its own SQLite (src/replication/).
 *
 * The broker: PULSAR_WS_URL when set; else the one `scripts/pulsar.sh status` reports running
 * (its default state directory); else one started here with `scripts/pulsar.sh start` (its own
 * state directory and free ports, PULSAR_MAX_TEXT_FRAME_SIZE=8388608), stopped at the end. Only a
 * broker started here is stopped. Each run uses topics of its own in tg/registry, deleted at the
 * end (best effort).
 *
 * Three replicas on loopback (A, B, C: child processes as in the other groups, each on its own
 * empty database, the same PUBLIC_URL), and one registry without REPLICATION_TOPIC:
 *   1. Visibility: a writer registers a new tool on A (POST /tools/register), one at a time;
 *      before each write every replica holds a blocking query (`GET /?index=<last>&wait=30s`,
 *      anonymous: the full view). The time until a write is visible on every replica runs from
 *      sending the write until the last replica's answer listing the tool has arrived in full;
 *      the write's own answer is timed too. The same loop against the single registry is the
 *      reference. --replication-writes writes per run; p50 and p99 of each run, then the median
 *      of the runs.
 *   2. Throughput: 16 clients doing POST /tools/register of new names for --duration seconds
 *      against the single registry, and against the three replicas (autocannon spreads its
 *      connections over the three URLs: 6, 5 and 5); sides alternate in each run after a
 *      warm-up of each (bench/measure.ts). CPU per write is that of every registry process on a
 *      side (and the broker's apart, when its pid is known). Afterwards the replicas must agree:
 *      the same X-Registry-Index and ETag of GET /.
 *   3. Catch-up: a loader replica on a topic of its own is fed the generated catalogue
 *      (bench/data.ts) through POST /import of 1,000 tools each (one message each, 436 KB), up
 *      to each of --replication-sizes (with REPLICATION_APPLY_TIMEOUT_MS raised to 10 minutes:
 *      on a loaded machine an import onto 90,000 tools took more than the default 10 s to apply,
 *      and the loader would answer 503); then, --replication-catch-up-runs times (default
 *      --runs), a fresh replica on an empty database
 *      is started and timed from process start to /healthz 200 and to /readyz 200 (caught up:
 *      it has read back a marker it published after starting). It must then show the loader's
 *      X-Registry-Index.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { adminToken, httpTool } from './data.js';
import { freePort, load, median, percentile, REPO_ROOT, rssMiB, sleep, treeCpuMs, waitHttpOk } from './lib.js';
import { measureSides, type Side } from './measure.js';
import { log, opts } from './options.js';
import { f0, f1, f2, pct, table, type Section } from './report.js';
import { importBundle, startRegistry, type Registry } from './servers.js';

const REPLICAS = 3;
/** Tools per POST /import when loading the catch-up topic: one message of ~436 KB, under the 1 MiB frame. */
const IMPORT_BATCH = 1000;
/** The same PUBLIC_URL for every registry, so that their views are the same bytes. */
const PUBLIC_URL = 'http://registry.bench.invalid';
/** How long a fresh replica may take to catch up. */
const CATCH_UP_TIMEOUT_MS = 30 * 60_000;

interface Broker {
  wsUrl: string;
  adminUrl: string;
  /** Where it came from: PULSAR_WS_URL, a running scripts/pulsar.sh broker, or started here. */
  source: 'PULSAR_WS_URL' | 'running' | 'started';
  /** The JVM's pid, for its CPU (unknown for PULSAR_WS_URL). */
  pid: number | undefined;
  startS?: number;
}

export interface VisibilityRow {
  mode: string;
  replicas: number;
  writes: number;
  runs: number;
  /** The write's answer on the replica that took it. */
  answerP50: number;
  answerP99: number;
  /** Until every replica's blocking query has answered with the tool. */
  visibleP50: number;
  visibleP99: number;
  /** Until the replica that took the write has shown it. */
  writerP50: number;
  writerP99: number;
  /** The slowest of the other replicas (null for one process). */
  othersP50: number | null;
  othersP99: number | null;
  /** Writes whose answer's X-Registry-Index differed from the index a replica showed it at. */
  indexMismatches: number;
  /** Bytes of the last view a replica answered (the views grow with every write). */
  lastViewBytes: number;
}

export interface ThroughputResult {
  single: Side;
  replicated: Side;
  /** Replicated writes/s over single-process writes/s. */
  ratio: number;
  /** Median broker CPU per write of the replicated side, microseconds (when its pid is known). */
  brokerCpuUsPerWrite: number | null;
  /** Whether all replicas showed the same index and view after the runs, and how long that took. */
  converged: boolean;
  convergedAfterMs: number;
  index: number | null;
  tools: number;
}

export interface CatchUpRow {
  tools: number;
  /** POST /import calls (messages) that carry the catalogue. */
  imports: number;
  /** Time to load the catalogue up to this size through the loader (cumulative). */
  loadS: number;
  /** Median answer time of the loader's last (up to) 10 imports before this size. */
  lastImportsMs: number;
  runs: number;
  healthzS: number;
  readyS: number;
  /** From /healthz 200 to /readyz 200. */
  catchUpS: number;
  toolsPerS: number;
  catchUpToolsPerS: number;
  rssMiB: number;
  /** Whether every fresh replica ended at the loader's X-Registry-Index. */
  indexMatches: boolean;
  perRun: { healthzS: number; readyS: number; rssMiB: number; index: number }[];
}

export interface ReplicationResult {
  broker: { source: Broker['source']; wsUrl: string; startS?: number };
  loadAverageAtStart: number[];
  visibility: VisibilityRow[];
  throughput: ThroughputResult | { skipped: string };
  catchUp: CatchUpRow[];
  /** Why the catch-up rows stopped short, if they did. */
  catchUpFailed?: string;
}

// ---------------------------------------------------------------------------------------------
// The broker

let startedBrokerEnv: Record<string, string> | null = null;

function pulsarScript(command: 'start' | 'stop' | 'status' | 'env', env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn('bash', [join(REPO_ROOT, 'scripts/pulsar.sh'), command], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (command === 'start' || command === 'stop' ? process.stderr.write(d) : undefined));
    proc.once('error', reject);
    proc.once('exit', (code) => resolve({ code: code ?? 1, out }));
  });
}

/** Stops the broker this group started, if any (for signal handlers and failures). */
export function stopReplicationBrokerSync(): void {
  if (!startedBrokerEnv) return;
  const env = startedBrokerEnv;
  startedBrokerEnv = null;
  spawnSync('bash', [join(REPO_ROOT, 'scripts/pulsar.sh'), 'stop'], { env: { ...process.env, ...env }, stdio: 'inherit' });
}

const adminUrlOf = (wsUrl: string) => {
  const url = new URL(wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  return url.origin;
};
const pidIn = (statusOut: string) => {
  const m = /pid (\d+)/.exec(statusOut);
  return m ? Number(m[1]) : undefined;
};

async function acquireBroker(): Promise<Broker> {
  const given = process.env['PULSAR_WS_URL'];
  if (given)
    return { wsUrl: given, adminUrl: process.env['PULSAR_ADMIN_URL'] ?? adminUrlOf(given), source: 'PULSAR_WS_URL', pid: undefined };
  // A broker scripts/pulsar.sh already runs (its default state directory): used, never stopped.
  const status = await pulsarScript('status', {});
  if (status.code === 0 && status.out.includes('ready')) {
    const env = await pulsarScript('env', {});
    const wsUrl = /PULSAR_WS_URL=(\S+)/.exec(env.out)?.[1];
    if (wsUrl) {
      log(`replication: using the running broker (${status.out.trim()})`);
      return {
        wsUrl,
        adminUrl: /PULSAR_ADMIN_URL=(\S+)/.exec(env.out)?.[1] ?? adminUrlOf(wsUrl),
        source: 'running',
        pid: pidIn(status.out),
      };
    }
  }
  for (const command of ['java', 'mvn', 'curl']) {
    const found = await new Promise<boolean>((resolve) =>
      spawn('bash', ['-c', `command -v ${command}`], { stdio: 'ignore' }).once('exit', (code) => resolve(code === 0)),
    );
    if (!found)
      throw new Error(`no PULSAR_WS_URL, no running broker, and ${command} is not on PATH (scripts/pulsar.sh needs java and mvn)`);
  }
  const env = {
    PULSAR_STATE_DIR: join(REPO_ROOT, '.cache/bench-pulsar-replication'),
    PULSAR_WEB_PORT: String(await freePort()),
    PULSAR_BROKER_PORT: String(await freePort()),
    PULSAR_MAX_TEXT_FRAME_SIZE: String(8 * 1024 * 1024),
  };
  log('replication: starting a Pulsar broker (scripts/pulsar.sh start)');
  const t0 = performance.now();
  startedBrokerEnv = env;
  const started = await pulsarScript('start', env);
  if (started.code !== 0) throw new Error(`scripts/pulsar.sh start exited with ${started.code}`);
  const wsUrl = /PULSAR_WS_URL=(\S+)/.exec(started.out)?.[1];
  if (!wsUrl) throw new Error(`scripts/pulsar.sh start printed no PULSAR_WS_URL:\n${started.out}`);
  const own = await pulsarScript('status', env);
  return { wsUrl, adminUrl: adminUrlOf(wsUrl), source: 'started', pid: pidIn(own.out), startS: (performance.now() - t0) / 1000 };
}

async function releaseBroker(broker: Broker): Promise<void> {
  if (broker.source !== 'started' || !startedBrokerEnv) return;
  const env = startedBrokerEnv;
  startedBrokerEnv = null;
  log('replication: stopping the broker (scripts/pulsar.sh stop)');
  await pulsarScript('stop', env);
}

/** Deletes a topic of this run (best effort: the broker keeps every message otherwise). */
async function deleteTopic(broker: Broker, topic: string): Promise<void> {
  const path = topic.replace(/^persistent:\/\//, 'persistent/');
  try {
    const res = await fetch(`${broker.adminUrl}/admin/v2/${path}?force=true`, { method: 'DELETE', signal: AbortSignal.timeout(30_000) });
    await res.arrayBuffer();
    if (res.status !== 204 && res.status !== 404) log(`replication: deleting ${topic} answered ${res.status}`);
  } catch (err) {
    log(`replication: deleting ${topic}: ${(err as Error).message}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Registries

let keyFile: string | undefined;

/** The key every replica of this run signs the topic's messages with (REPLICATION_SECRET_FILE), made once, removed at exit. */
function replicationKeyFile(): string {
  if (keyFile === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-key-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    keyFile = join(dir, 'replication.key');
    writeFileSync(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  }
  return keyFile;
}

function replicaEnv(broker: Broker, topic: string, replicaId: string): Record<string, string> {
  return {
    PULSAR_WS_URL: broker.wsUrl,
    PULSAR_ADMIN_URL: broker.adminUrl,
    REPLICATION_TOPIC: topic,
    REPLICA_ID: replicaId,
    REPLICATION_SECRET_FILE: replicationKeyFile(),
    PUBLIC_URL,
  };
}

async function waitReady(registry: Registry, since: number, timeoutMs = 120_000): Promise<number> {
  return waitHttpOk(`${registry.base}/readyz`, registry.child, since, timeoutMs);
}

const agent = new Agent({ keepAlive: true });

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** performance.now() when the last byte arrived. */
  at: number;
}

/** One request over a kept-alive connection, timed to the answer's last byte. */
function send(base: string, path: string, method = 'GET', headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), at: performance.now() }),
      );
      res.once('error', reject);
    });
    req.once('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no answer in 60 s`)));
    req.end(body);
  });
}

const indexOf = (a: Answer) => Number(a.headers['x-registry-index'] ?? NaN);

async function registryIndex(base: string): Promise<number> {
  const a = await send(base, '/?limit=1');
  if (a.status !== 200) throw new Error(`GET /?limit=1 answered ${a.status}`);
  return indexOf(a);
}

const admin = () => ({ authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' });

// ---------------------------------------------------------------------------------------------
// 1. Visibility

/** Resolves once a blocking query on `base` answers a view listing `name`. */
async function watch(
  base: string,
  fromIndex: number,
  name: Buffer,
  deadline: number,
): Promise<{ at: number; index: number; bytes: number }> {
  let from = fromIndex;
  for (;;) {
    const a = await send(base, `/?index=${from}&wait=30s`);
    if (a.status !== 200) throw new Error(`${base}: blocking query answered ${a.status}: ${a.body.toString().slice(0, 200)}`);
    if (a.body.includes(name)) return { at: a.at, index: indexOf(a), bytes: a.body.length };
    if (performance.now() > deadline) throw new Error(`${base}: the write was not visible within 30 s`);
    from = indexOf(a);
  }
}

interface VisibilityRun {
  answer: number[];
  visible: number[];
  writer: number[];
  others: number[];
  mismatches: number;
  lastViewBytes: number;
}

let visibilityCounter = 0;

/** `writes` sequential registrations on `bases[0]`, each watched on every base. */
async function visibilityRun(bases: string[], writes: number): Promise<VisibilityRun> {
  const out: VisibilityRun = { answer: [], visible: [], writer: [], others: [], mismatches: 0, lastViewBytes: 0 };
  const last = await Promise.all(bases.map(registryIndex));
  const writer = bases[0] ?? '';
  for (let k = 0; k < writes; k++) {
    const tool = httpTool(visibilityCounter++, 'bench-vis');
    const name = Buffer.from(JSON.stringify(tool['name']));
    const deadline = performance.now() + 30_000;
    const watches = bases.map((base, r) => watch(base, last[r] ?? 0, name, deadline));
    // Let the blocking queries reach the replicas and be held before the write.
    await sleep(5);
    const t0 = performance.now();
    const answer = await send(writer, '/tools/register', 'POST', admin(), JSON.stringify(tool));
    if (answer.status !== 201) throw new Error(`POST /tools/register answered ${answer.status}: ${answer.body.toString().slice(0, 300)}`);
    const writeIndex = indexOf(answer);
    const seen = await Promise.all(watches);
    seen.forEach((s, r) => {
      last[r] = s.index;
      if (s.index !== writeIndex) out.mismatches++;
    });
    const at = seen.map((s) => s.at - t0);
    out.answer.push(answer.at - t0);
    out.visible.push(Math.max(...at));
    out.writer.push(at[0] ?? NaN);
    if (at.length > 1) out.others.push(Math.max(...at.slice(1)));
    out.lastViewBytes = Math.max(...seen.map((s) => s.bytes));
  }
  return out;
}

async function visibility(replicas: Registry[], single: Registry): Promise<VisibilityRow[]> {
  const sides = [
    { mode: `replicated, written on A, watched on A, B and C`, bases: replicas.map((r) => r.base) },
    { mode: 'one process (reference, no topic)', bases: [single.base] },
  ];
  log(`replication: visibility: warm-up`);
  for (const s of sides) await visibilityRun(s.bases, 20);
  const runs = sides.map(() => [] as VisibilityRun[]);
  for (let i = 0; i < opts.runs; i++) {
    for (let k = 0; k < sides.length; k++) {
      const s = (k + i) % sides.length;
      const side = sides[s];
      if (side) runs[s]?.push(await visibilityRun(side.bases, opts.replicationWrites));
    }
    const parts = sides.map((side, s) => {
      const r = runs[s]?.at(-1);
      return r
        ? `${side.bases.length} registr${side.bases.length === 1 ? 'y' : 'ies'}: answer p50 ${f2(percentile(r.answer, 50))} visible p50 ${f2(percentile(r.visible, 50))} p99 ${f2(percentile(r.visible, 99))} ms`
        : '-';
    });
    log(`replication: visibility run ${i + 1}/${opts.runs}: ${parts.join(' | ')}`);
  }
  return sides.map((side, s) => {
    const r = runs[s] ?? [];
    const m = (pick: (v: VisibilityRun) => number[], p: number) => median(r.map((v) => percentile([...pick(v)], p)));
    return {
      mode: side.mode,
      replicas: side.bases.length,
      writes: opts.replicationWrites,
      runs: r.length,
      answerP50: m((v) => v.answer, 50),
      answerP99: m((v) => v.answer, 99),
      visibleP50: m((v) => v.visible, 50),
      visibleP99: m((v) => v.visible, 99),
      writerP50: m((v) => v.writer, 50),
      writerP99: m((v) => v.writer, 99),
      othersP50: side.bases.length > 1 ? m((v) => v.others, 50) : null,
      othersP99: side.bases.length > 1 ? m((v) => v.others, 99) : null,
      indexMismatches: r.reduce((sum, v) => sum + v.mismatches, 0),
      lastViewBytes: Math.max(...r.map((v) => v.lastViewBytes)),
    };
  });
}

// ---------------------------------------------------------------------------------------------
// 2. Throughput

let throughputCounter = 0;

/** Every replica at the same index and the same view (ETag of GET /), within 60 s. */
async function converge(replicas: Registry[]): Promise<{ converged: boolean; afterMs: number; index: number | null; tools: number }> {
  const t0 = performance.now();
  for (;;) {
    const views = await Promise.all(replicas.map((r) => send(r.base, '/')));
    const indexes = views.map(indexOf);
    const etags = views.map((v) => String(v.headers['etag']));
    if (indexes.every((i) => i === indexes[0]) && etags.every((e) => e === etags[0])) {
      const tools = (JSON.parse(views[0]?.body.toString() ?? '{}') as { tools?: unknown[] }).tools?.length ?? 0;
      return { converged: true, afterMs: performance.now() - t0, index: indexes[0] ?? null, tools };
    }
    if (performance.now() - t0 > 60_000) {
      log(`replication: replicas disagree after 60 s: indexes ${indexes.join(', ')}, etags ${etags.join(', ')}`);
      return { converged: false, afterMs: performance.now() - t0, index: null, tools: 0 };
    }
    await sleep(50);
  }
}

async function throughput(replicas: Registry[], single: Registry, broker: Broker): Promise<ThroughputResult> {
  const registerRequests =
    (prefix: string) =>
    (request: autocannon.Request): autocannon.Request => {
      request.path = '/tools/register';
      request.body = JSON.stringify(httpTool(throughputCounter++, prefix));
      return request;
    };
  const spec = { connections: opts.writeConnections, method: 'POST' as const, headers: admin(), expectStatus: 201 };
  const brokerCpu: number[] = [];
  const pids = replicas.map((r) => r.child.pid);
  const [s, r] = await measureSides('replication: writes', [
    [
      'one process',
      (durationS) =>
        load({
          ...spec,
          url: `${single.base}/tools/register`,
          durationS,
          setupRequest: registerRequests('bench-one'),
          serverPid: single.child.pid,
        }),
    ],
    [
      `${REPLICAS} replicas`,
      async (durationS) => {
        const cpu = () => pids.reduce((sum, pid) => sum + treeCpuMs(pid), 0);
        const before = cpu();
        const brokerBefore = broker.pid === undefined ? NaN : treeCpuMs(broker.pid);
        // autocannon takes several URLs: connection i goes to URL i mod 3.
        const urls = replicas.map((x) => `${x.base}/tools/register`);
        const result = await load({ ...spec, url: urls as unknown as string, durationS, setupRequest: registerRequests('bench-rep') });
        const requests = Math.max(1, result.total);
        if (broker.pid !== undefined) brokerCpu.push(((treeCpuMs(broker.pid) - brokerBefore) * 1000) / requests);
        return { ...result, cpuUsPerReq: ((cpu() - before) * 1000) / requests };
      },
    ],
  ]);
  if (!s || !r) throw new Error('replication: writes: missing side');
  const agreed = await converge(replicas);
  return {
    single: s,
    replicated: r,
    ratio: r.rps / s.rps,
    brokerCpuUsPerWrite: brokerCpu.length > 0 ? median(brokerCpu) : null,
    converged: agreed.converged,
    convergedAfterMs: agreed.afterMs,
    index: agreed.index,
    tools: agreed.tools,
  };
}

// ---------------------------------------------------------------------------------------------
// 3. Catch-up

function importSlice(from: number, to: number): string {
  const tools: Record<string, unknown>[] = [];
  for (let i = from; i < to; i++) tools.push(httpTool(i));
  return JSON.stringify({ 'tool-services': [], tools });
}

/** Pushes one row per size as it is measured, so that the rows before a failure are kept. */
async function catchUp(broker: Broker, dir: string, topic: string, rows: CatchUpRow[]): Promise<void> {
  mkdirSync(join(dir, 'loader'));
  const since = performance.now();
  const loader = await startRegistry(join(dir, 'loader'), {
    ...replicaEnv(broker, topic, 'bench-loader'),
    REPLICATION_APPLY_TIMEOUT_MS: String(10 * 60_000),
  });
  try {
    await waitReady(loader, since);
    let loaded = 0;
    let imports = 0;
    let loadMs = 0;
    for (const n of [...opts.replicationSizes].sort((a, b) => a - b)) {
      const t0 = performance.now();
      const importMs: number[] = [];
      while (loaded < n) {
        const to = Math.min(n, loaded + IMPORT_BATCH);
        importMs.push(await importBundle(loader, importSlice(loaded, to)));
        loaded = to;
        imports++;
        if (imports % 10 === 0)
          log(`replication: catch-up: loaded ${loaded} tools (${imports} imports, the last in ${(importMs.at(-1) ?? NaN).toFixed(0)} ms)`);
      }
      loadMs += performance.now() - t0;
      const index = await registryIndex(loader.base);
      log(`replication: catch-up: ${n} tools in the topic (${imports} imports, ${(loadMs / 1000).toFixed(1)} s), index ${index}`);
      const perRun: CatchUpRow['perRun'] = [];
      for (let run = 0; run < opts.replicationCatchUpRuns; run++) {
        const freshDir = join(dir, `fresh-${n}-${run}`);
        mkdirSync(freshDir);
        const start = performance.now();
        const fresh = await startRegistry(freshDir, replicaEnv(broker, topic, `bench-fresh-${n}-${run}`));
        try {
          const healthzMs = performance.now() - start;
          const readyMs = await waitReady(fresh, start, CATCH_UP_TIMEOUT_MS);
          const freshIndex = await registryIndex(fresh.base);
          const rss = rssMiB(fresh.child.pid);
          perRun.push({ healthzS: healthzMs / 1000, readyS: readyMs / 1000, rssMiB: rss, index: freshIndex });
          log(
            `replication: catch-up ${n}: run ${run + 1}/${opts.replicationCatchUpRuns}: /healthz ${(healthzMs / 1000).toFixed(2)} s, /readyz ${(readyMs / 1000).toFixed(2)} s, index ${freshIndex}${freshIndex === index ? '' : ` (loader: ${index})`}, RSS ${rss.toFixed(0)} MiB`,
          );
        } finally {
          await fresh.child.stop();
          rmSync(freshDir, { recursive: true, force: true });
        }
      }
      const healthzS = median(perRun.map((p) => p.healthzS));
      const readyS = median(perRun.map((p) => p.readyS));
      const catchUpS = median(perRun.map((p) => p.readyS - p.healthzS));
      rows.push({
        tools: n,
        imports,
        loadS: loadMs / 1000,
        lastImportsMs: median(importMs.slice(-10)),
        runs: perRun.length,
        healthzS,
        readyS,
        catchUpS,
        toolsPerS: n / readyS,
        catchUpToolsPerS: n / catchUpS,
        rssMiB: median(perRun.map((p) => p.rssMiB)),
        indexMatches: perRun.every((p) => p.index === index),
        perRun,
      });
    }
  } finally {
    await loader.child.stop();
  }
}

// ---------------------------------------------------------------------------------------------

export async function replication(): Promise<ReplicationResult> {
  const loadAverageAtStart = loadavg().map((v) => Math.round(v * 100) / 100);
  log(`replication: load average at start ${loadAverageAtStart.join(' ')}`);
  const broker = await acquireBroker();
  const stamp = `${Date.now().toString(36)}-${process.pid}`;
  const writesTopic = `persistent://tg/registry/bench-${stamp}-writes`;
  const catchUpTopic = `persistent://tg/registry/bench-${stamp}-catch-up`;
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-replication-'));
  const started: Registry[] = [];
  try {
    log(`replication: broker ${broker.wsUrl} (${broker.source}); ${REPLICAS} replicas on ${writesTopic}`);
    const replicas: Registry[] = [];
    for (let k = 0; k < REPLICAS; k++) {
      const id = String.fromCharCode(65 + k);
      mkdirSync(join(dir, id));
      const since = performance.now();
      const replica = await startRegistry(join(dir, id), replicaEnv(broker, writesTopic, `bench-${id}`));
      started.push(replica);
      replicas.push(replica);
      await waitReady(replica, since);
    }
    mkdirSync(join(dir, 'one'));
    const single = await startRegistry(join(dir, 'one'), { PUBLIC_URL });
    started.push(single);

    const rows = await visibility(replicas, single);
    let tp: ThroughputResult | { skipped: string };
    try {
      tp = await throughput(replicas, single, broker);
    } catch (err) {
      tp = { skipped: `failed: ${(err as Error).message}` };
      log(`replication: writes: ${tp.skipped}`);
    }
    for (const r of started.splice(0)) await r.child.stop();
    await deleteTopic(broker, writesTopic);

    const catchUpRows: CatchUpRow[] = [];
    let catchUpFailed: string | undefined;
    try {
      await catchUp(broker, dir, catchUpTopic, catchUpRows);
    } catch (err) {
      catchUpFailed = `failed: ${(err as Error).message}`;
      log(`replication: catch-up: ${catchUpFailed}`);
    }
    return {
      broker: { source: broker.source, wsUrl: broker.wsUrl, ...(broker.startS !== undefined && { startS: broker.startS }) },
      loadAverageAtStart,
      visibility: rows,
      throughput: tp,
      catchUp: catchUpRows,
      ...(catchUpFailed !== undefined && { catchUpFailed }),
    };
  } finally {
    for (const r of started) await r.child.stop();
    await deleteTopic(broker, writesTopic);
    await deleteTopic(broker, catchUpTopic);
    await releaseBroker(broker);
    rmSync(dir, { recursive: true, force: true });
  }
}

export function replicationSections(r: ReplicationResult): Section[] {
  const sections: Section[] = [];
  const where = `${REPLICAS} replicas on loopback, broker ${r.broker.source === 'started' ? 'started by the bench' : r.broker.source === 'running' ? 'already running (scripts/pulsar.sh)' : 'at PULSAR_WS_URL'}; load average at start ${r.loadAverageAtStart.join(' ')}`;
  const v = table(
    [
      'mode',
      'writes',
      'write answered p50 ms',
      'p99 ms',
      'visible on all p50 ms',
      'p99 ms',
      'on the writer p50 ms',
      'p99 ms',
      'slowest other p50 ms',
      'p99 ms',
      'index mismatches',
      'last view',
    ],
    r.visibility.map((row) => [
      row.mode,
      `${row.runs} x ${f0(row.writes)}`,
      f2(row.answerP50),
      f2(row.answerP99),
      f2(row.visibleP50),
      f2(row.visibleP99),
      f2(row.writerP50),
      f2(row.writerP99),
      f2(row.othersP50),
      f2(row.othersP99),
      f0(row.indexMismatches),
      `${f0(row.lastViewBytes / 1024)} KiB`,
    ]),
  );
  sections.push({
    title: `Replicated mode: a write until visible on every replica (issue 14; median of ${opts.runs} runs of ${opts.replicationWrites} sequential POST /tools/register, each watched by a blocking GET / per replica; ${where})`,
    ...v,
  });
  const t = r.throughput;
  if ('skipped' in t) {
    sections.push({ title: 'Replicated mode: write throughput', text: `skipped: ${t.skipped}`, markdown: `Skipped: ${t.skipped}` });
  } else {
    const line = (mode: string, s: Side, brokerCpu: string, ratio: string) => [
      mode,
      f0(s.rps),
      f2(s.p50),
      f2(s.p99),
      f0(s.cpuUsPerReq),
      brokerCpu,
      f0(s.errors),
      ratio,
    ];
    const w = table(
      ['mode', 'writes/s', 'p50 ms', 'p99 ms', 'registry CPU us/write (all processes)', 'broker CPU us/write', 'errors', 'ratio'],
      [
        line('one process, no topic', t.single, '-', '100%'),
        line(`${REPLICAS} replicas, connections spread 6/5/5`, t.replicated, f0(t.brokerCpuUsPerWrite), pct(t.ratio)),
      ],
    );
    const brokerNote =
      t.brokerCpuUsPerWrite === null
        ? ' Broker CPU: unknown (PULSAR_WS_URL).'
        : r.broker.source === 'running'
          ? " Broker CPU: the whole JVM's over the run divided by the writes, so it includes other clients of a shared broker."
          : '';
    const agreed = t.converged
      ? `After the runs the replicas agreed (same X-Registry-Index ${t.index ?? '-'} and ETag of GET /, ${f0(t.tools)} tools) within ${f0(t.convergedAfterMs)} ms.`
      : 'After the runs the replicas did NOT agree within 60 s.';
    sections.push({
      title: `Replicated mode: write throughput (median of ${opts.runs} x ${opts.durationS} s, ${opts.writeConnections} clients, POST /tools/register of new names, admin token; ratio = replicated over one process)`,
      text: `${w.text}\n${agreed}${brokerNote}`,
      markdown: `${w.markdown}\n\n${agreed}${brokerNote}`,
    });
  }
  if (r.catchUp.length > 0 || r.catchUpFailed !== undefined) {
    const c = table(
      [
        'tools',
        'imports (messages)',
        'loaded through the topic s',
        'last imports ms',
        'start -> /healthz s',
        'start -> /readyz s',
        '/healthz -> caught up s',
        'tools/s from start',
        'tools/s catching up',
        'RSS MiB',
        'index matches',
      ],
      r.catchUp.map((row) => [
        f0(row.tools),
        f0(row.imports),
        f1(row.loadS),
        f0(row.lastImportsMs),
        f2(row.healthzS),
        f2(row.readyS),
        f2(row.catchUpS),
        f0(row.toolsPerS),
        f0(row.catchUpToolsPerS),
        f0(row.rssMiB),
        row.indexMatches ? 'yes' : 'NO',
      ]),
    );
    const failed = r.catchUpFailed === undefined ? '' : `Stopped short: ${r.catchUpFailed}`;
    sections.push({
      title: `Replicated mode: catch-up of a new replica on an empty database (median of ${opts.replicationCatchUpRuns}; the topic loaded through POST /import of ${f0(IMPORT_BATCH)} tools each; load time cumulative; last imports: median answer of the loader's last 10 imports)`,
      text: failed === '' ? c.text : `${c.text}\n${failed}`,
      markdown: failed === '' ? c.markdown : `${c.markdown}\n\n${failed}`,
    });
  }
  return sections;
}
