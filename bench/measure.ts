/**
 * Measuring sides against each other: every side warmed up, then runs alternating which side
 * goes first, each figure the median of the runs.
 */
import { describeStatuses, load, median, type LoadOptions, type RunResult } from './lib.js';
import { log, opts } from './options.js';

export interface Side {
  runs: RunResult[];
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Median CPU of the server process per request, microseconds. */
  cpuUsPerReq: number;
  /** Of which its main thread's. */
  mainCpuUsPerReq: number;
  /** Median CPU of the load generator per request. */
  loadCpuUsPerReq: number;
  /** Median cores the server and the load generator kept busy (wrk rows only). */
  serverCpuShare: number;
  loadCpuShare: number;
}

export const summarise = (runs: RunResult[]): Side => ({
  runs,
  rps: median(runs.map((r) => r.rps)),
  p50: median(runs.map((r) => r.p50)),
  p99: median(runs.map((r) => r.p99)),
  errors: runs.reduce((sum, r) => sum + r.errors, 0),
  cpuUsPerReq: median(runs.map((r) => r.cpuUsPerReq ?? NaN)),
  mainCpuUsPerReq: median(runs.map((r) => r.mainCpuUsPerReq ?? NaN)),
  loadCpuUsPerReq: median(runs.map((r) => r.loadCpuUsPerReq ?? NaN)),
  serverCpuShare: median(runs.map((r) => r.serverCpuShare ?? NaN)),
  loadCpuShare: median(runs.map((r) => r.loadCpuShare ?? NaN)),
});

export type Runner = (durationS: number) => Promise<RunResult>;

const f0 = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '-' : Math.round(v).toLocaleString('en-US'));

/**
 * Warms every side up, then runs each `opts.runs` times, rotating which goes first (two sides:
 * A B, B A, A B). Resolves with one Side per runner, in the order given.
 */
export async function measureSides(label: string, sides: readonly (readonly [string, Runner])[]): Promise<Side[]> {
  log(`${label}: warm-up`);
  for (const [, run] of sides) await run(opts.warmupS);
  const results: RunResult[][] = sides.map(() => []);
  for (let i = 0; i < opts.runs; i++) {
    for (let k = 0; k < sides.length; k++) {
      const s = (k + i) % sides.length;
      const run = sides[s]?.[1];
      if (run) results[s]?.push(await run(opts.durationS));
    }
    const parts = sides.map(([name], s) => {
      const r = results[s]?.at(-1);
      if (!r) return `${name} -`;
      return (
        `${name} ${r.rps.toFixed(0)}/s p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} ms cpu ${f0(r.cpuUsPerReq)} us/req` +
        (r.errors > 0 ? ` (unexpected: ${describeStatuses(r.statuses)} errors ${r.errors})` : '')
      );
    });
    log(`${label}: run ${i + 1}/${opts.runs}: ${parts.join(' | ')}`);
  }
  return results.map(summarise);
}

/** Registry against ceiling. */
export async function compare(label: string, registry: Runner, ceiling: Runner): Promise<{ registry: Side; ceiling: Side }> {
  const [r, c] = await measureSides(label, [
    ['registry', registry],
    ['ceiling', ceiling],
  ]);
  if (!r || !c) throw new Error('compare: missing side');
  return { registry: r, ceiling: c };
}

/** What a scenario sends, without where and for how long. */
export type LoadSpec = Omit<LoadOptions, 'url' | 'durationS'> & { path?: string };

export const loader =
  (base: string, { path, ...o }: LoadSpec, serverPid?: number): Runner =>
  (durationS) =>
    load({ ...o, url: `${base}${path ?? '/'}`, durationS, ...(serverPid !== undefined && { serverPid }) });
