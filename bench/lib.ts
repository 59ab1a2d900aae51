/**
 * Helpers for the benchmark: free ports, child processes (spawn, readiness, stop), resident
 * memory, percentiles and an autocannon wrapper that records every response's latency itself
 * (autocannon's own histogram has 1 ms resolution, too coarse for sub-millisecond answers).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import autocannon from 'autocannon';

export const REPO_ROOT = new URL('..', import.meta.url).pathname.replace(/\/$/, '');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Children still running, stopped on exit whatever happens. */
const live = new Set<ChildProcess>();

export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  live.clear();
}

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** The last output lines, shown when the child fails. */
  output(): string;
  stop(): Promise<void>;
}

/**
 * Resolves when the child prints a line `ready` on stdout; rejects, with its last output, when
 * it exits first or after `timeoutMs`. `what` names it in the error.
 */
export function readyLine(child: Child, what: string, timeoutMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not get ready:\n${child.output()}`)), timeoutMs);
    child.proc.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready\n')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}):\n${child.output()}`));
    });
  });
}

/** Spawns `node [...nodeArgs] --import tsx <script> ...args` in the repository root (or another checkout's). */
export function spawnNode(script: string, args: string[], env: Record<string, string>, nodeArgs: string[] = [], root = REPO_ROOT): Child {
  const proc = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', script, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((l) => l !== ''),
    );
    if (lines.length > 40) lines.splice(0, lines.length - 40);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    proc,
    pid: proc.pid ?? -1,
    output: () => lines.join('\n'),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      live.delete(proc);
    },
  };
}

/** Polls `url` until it answers 200; resolves with the milliseconds since `since`. */
export async function waitHttpOk(url: string, child: Child, since: number, timeoutMs = 120_000): Promise<number> {
  for (;;) {
    if (child.proc.exitCode !== null) throw new Error(`process exited (${child.proc.exitCode}) before ${url} answered:\n${child.output()}`);
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (res.status === 200) return performance.now() - since;
    } catch {
      // not listening yet
    }
    if (performance.now() - since > timeoutMs) throw new Error(`${url} not ready after ${timeoutMs} ms:\n${child.output()}`);
    await sleep(10);
  }
}

/** CPU time (user + system) a process has used, in ms (clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** CPU time of a process's main thread (its JavaScript and event loop), in ms. */
export function mainThreadCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Pids of a process's children (from /proc/<pid>/task/<tid>/children); empty when unknown. */
function childPids(pid: number): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8')
        .split(' ')
        .filter((p) => p.trim() !== '')
        .map(Number),
    );
  } catch {
    return [];
  }
}

/** CPU time of a process and its descendants (a node:cluster primary and its workers), in ms. */
export function treeCpuMs(pid: number): number {
  return cpuMs(pid) + childPids(pid).reduce((sum, child) => sum + treeCpuMs(child), 0);
}

/** VmRSS of a process, in MiB. */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}

/** VmHWM (peak resident memory so far) of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+)\s+kB/.exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}

export function median(values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? NaN) : ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

/** Nearest-rank percentile of an unsorted sample (sorts it in place). */
export function percentile(values: Float64Array | number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = values instanceof Float64Array ? values.sort() : values.sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? NaN;
}

/** Growable sample of latencies in milliseconds. */
export class Latencies {
  #data = new Float64Array(1 << 16);
  #n = 0;
  add(ms: number): void {
    if (this.#n === this.#data.length) {
      const bigger = new Float64Array(this.#data.length * 2);
      bigger.set(this.#data);
      this.#data = bigger;
    }
    this.#data[this.#n++] = ms;
  }
  get count(): number {
    return this.#n;
  }
  percentiles(): { p50: number; p99: number } {
    const view = this.#data.slice(0, this.#n);
    return { p50: percentile(view, 50), p99: percentile(view, 99) };
  }
}

export interface RunResult {
  /** Responses with the expected status per second. */
  rps: number;
  p50: number;
  p99: number;
  /** Responses with another status, plus connection errors and timeouts. */
  errors: number;
  total: number;
  statuses: Record<string, number>;
  /** CPU the server process used per answered request, in microseconds (when its pid is known). */
  cpuUsPerReq?: number;
  /** Of which its main thread's (when its pid is known). */
  mainCpuUsPerReq?: number;
  /** CPU the load generator (this process: autocannon and the request setup) used per answered request. */
  loadCpuUsPerReq?: number;
  /** Cores the server kept busy on average during the run (1 = one core all the time). */
  serverCpuShare?: number;
  /** Cores the load generator kept busy. */
  loadCpuShare?: number;
}

export interface LoadOptions {
  url: string;
  durationS: number;
  connections: number;
  method?: 'GET' | 'PUT' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Per-request rewrite (token rotation, distinct names); called on the load generator. */
  setupRequest?: (request: autocannon.Request) => autocannon.Request;
  expectStatus: number;
  /** The server's pid, to report its CPU per request (with its child processes', if any). */
  serverPid?: number;
}

/** One autocannon run against one server. */
export async function load(options: LoadOptions): Promise<RunResult> {
  const latencies = new Latencies();
  const statuses: Record<string, number> = {};
  let good = 0;
  let bad = 0;
  const cpuBefore = options.serverPid === undefined ? NaN : treeCpuMs(options.serverPid);
  const mainBefore = options.serverPid === undefined ? NaN : mainThreadCpuMs(options.serverPid);
  const loadBefore = process.cpuUsage();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        duration: options.durationS,
        connections: options.connections,
        pipelining: 1,
        timeout: 30,
        method: options.method ?? 'GET',
        ...(options.headers && { headers: options.headers }),
        ...(options.body !== undefined && { body: options.body }),
        ...(options.setupRequest && { requests: [{ setupRequest: options.setupRequest }] }),
      },
      (err: unknown, res: autocannon.Result) => (err ? reject(err instanceof Error ? err : new Error(String(err))) : resolve(res)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      if (statusCode === options.expectStatus) {
        good++;
        latencies.add(responseTime);
      } else {
        bad++;
      }
    });
  });
  // autocannon v8 reports `duration` in seconds.
  const elapsedS = result.duration > 0 ? result.duration : options.durationS;
  const { p50, p99 } = latencies.percentiles();
  const answered = Math.max(1, good + bad);
  const load = process.cpuUsage(loadBefore);
  const loadCpuUsPerReq = (load.user + load.system) / answered;
  const cpuUsPerReq = options.serverPid === undefined ? undefined : ((treeCpuMs(options.serverPid) - cpuBefore) * 1000) / answered;
  const mainCpuUsPerReq =
    options.serverPid === undefined ? undefined : ((mainThreadCpuMs(options.serverPid) - mainBefore) * 1000) / answered;
  return {
    rps: good / elapsedS,
    p50,
    p99,
    errors: bad + result.errors + result.timeouts,
    total: good + bad,
    statuses,
    loadCpuUsPerReq,
    ...(cpuUsPerReq !== undefined && { cpuUsPerReq }),
    ...(mainCpuUsPerReq !== undefined && { mainCpuUsPerReq }),
  };
}

export function describeStatuses(statuses: Record<string, number>): string {
  return Object.entries(statuses)
    .map(([code, n]) => `${code}x${n}`)
    .join(' ');
}
