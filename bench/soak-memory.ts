/**
 * What the soak's registry is made of over time (issue 9: explain the RSS trend). Each sample
 * holds the process's resident memory split as the kernel sees it (/proc/<pid>/status: anonymous
 * and file-backed pages), the V8 heap and external memory as the registry's own prom-client
 * default metrics report them (`GET /metrics` with an admin token), and the size of the state
 * that may legitimately grow: tools and services in the catalogue (/stats), and the rows of the
 * change log, call records and audit log (read from the registry's database on a read-only
 * connection of this process, so that the registry does no extra work for it).
 *
 * Reading the three together tells the cases apart: heap growing while the catalogue does not
 * is a leak; heap growing with the catalogue or the log is state; RSS growing while heap and
 * external memory stay flat is the allocator (or file pages), not JavaScript.
 */
import { readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';

export interface MemorySample {
  /** Seconds since the load started. */
  t: number;
  /** VmRSS, and its anonymous and file-backed parts (RssAnon, RssFile + RssShmem), MiB. */
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  /** V8 heap used and reserved, and memory outside it held by JS objects (Buffers), MiB; NaN when the scrape failed. */
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
  /** The longest the registry's event loop was held since the previous sample (prom-client resets it per scrape), ms. */
  loopLagMaxMs: number;
  /** Change streams and MCP streams held (tool_registry_streams). */
  streams: number;
  /** Live tools and tool services, and the registry index (/stats, whole catalogue). */
  tools: number;
  services: number;
  index: number;
  /** Rows kept on disk: the change log (replayed by /changes), call records, audit entries. */
  changeRows: number;
  callRows: number;
  auditRows: number;
  /** The database file and its WAL, MiB. */
  dbMiB: number;
  walMiB: number;
}

const MiB = 1024 * 1024;

function statusKiB(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
  return match ? Number(match[1]) : NaN;
}

/** An unlabelled sample of the Prometheus text format, or NaN. */
function metric(text: string, name: string): number {
  const match = new RegExp(`^${name} ([0-9.eE+-]+)$`, 'm').exec(text);
  return match ? Number(match[1]) : NaN;
}

const fileMiB = (path: string) => {
  try {
    return statSync(path).size / MiB;
  } catch {
    return 0;
  }
};

export class MemorySampler {
  readonly #db: Database.Database;
  readonly #counts: { changes: Database.Statement; calls: Database.Statement; audit: Database.Statement };

  constructor(
    readonly pid: number,
    readonly base: string,
    readonly adminToken: string,
    readonly dbPath: string,
  ) {
    this.#db = new Database(dbPath, { readonly: true, fileMustExist: true });
    // Row ids grow by one per row and rows are only pruned by age, so max - min + 1 is the count
    // (an index seek instead of a scan of a table that reaches millions of rows).
    const span = (table: string) => this.#db.prepare(`SELECT coalesce(max(rowid) - min(rowid) + 1, 0) AS n FROM ${table}`).pluck();
    this.#counts = { changes: span('changes'), calls: span('tool_calls'), audit: span('audit_log') };
  }

  async sample(t: number): Promise<MemorySample> {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const headers = { authorization: `Bearer ${this.adminToken}` };
    const [metrics, stats] = await Promise.all([
      fetch(`${this.base}/metrics`, { headers }).then((r) => (r.ok ? r.text() : '')),
      fetch(`${this.base}/stats`, { headers }).then((r) =>
        r.ok ? (r.json() as Promise<{ total_tools: number; total_tool_services: number; registry_index: number }>) : null,
      ),
    ]).catch(() => ['', null] as const);
    const rows = (statement: Database.Statement) => Number(statement.get());
    return {
      t,
      rssMiB: statusKiB(status, 'VmRSS') / 1024,
      anonMiB: statusKiB(status, 'RssAnon') / 1024,
      fileMiB: (statusKiB(status, 'RssFile') + statusKiB(status, 'RssShmem')) / 1024,
      heapUsedMiB: metric(metrics, 'nodejs_heap_size_used_bytes') / MiB,
      heapTotalMiB: metric(metrics, 'nodejs_heap_size_total_bytes') / MiB,
      externalMiB: metric(metrics, 'nodejs_external_memory_bytes') / MiB,
      loopLagMaxMs: metric(metrics, 'nodejs_eventloop_lag_max_seconds') * 1000,
      streams: metric(metrics, 'tool_registry_streams'),
      tools: stats?.total_tools ?? NaN,
      services: stats?.total_tool_services ?? NaN,
      index: stats?.registry_index ?? NaN,
      changeRows: rows(this.#counts.changes),
      callRows: rows(this.#counts.calls),
      auditRows: rows(this.#counts.audit),
      dbMiB: fileMiB(this.dbPath),
      walMiB: fileMiB(`${this.dbPath}-wal`),
    };
  }

  close(): void {
    this.#db.close();
  }
}

/** Least-squares slope of `value` over `t`, per minute. */
export function trendPerMin<T extends { t: number }>(points: readonly T[], value: (p: T) => number): number {
  const usable = points.filter((p) => Number.isFinite(value(p)));
  if (usable.length < 2) return NaN;
  const n = usable.length;
  const mt = usable.reduce((s, p) => s + p.t, 0) / n;
  const mv = usable.reduce((s, p) => s + value(p), 0) / n;
  const num = usable.reduce((s, p) => s + (p.t - mt) * (value(p) - mv), 0);
  const den = usable.reduce((s, p) => s + (p.t - mt) ** 2, 0);
  return den === 0 ? 0 : (num / den) * 60;
}

/**
 * The least heap used in each minute: what survives garbage collection, near enough (heap used
 * saws up and down by 50-150 MiB between collections under this load, so the RSS and heap
 * figures of any few minutes slope up or down by tens of MiB a minute by chance). A leak raises
 * this floor; a sawtooth does not.
 */
export function heapFloorByMinute(samples: readonly MemorySample[]): { minute: number; heapUsedMiB: number }[] {
  const floors = new Map<number, number>();
  for (const s of samples) {
    if (!Number.isFinite(s.heapUsedMiB)) continue;
    const minute = Math.floor(s.t / 60);
    floors.set(minute, Math.min(floors.get(minute) ?? Infinity, s.heapUsedMiB));
  }
  return [...floors].map(([minute, heapUsedMiB]) => ({ minute, heapUsedMiB }));
}

/** A markdown table of about `rows` samples, first and last included. */
export function memoryTable(samples: readonly MemorySample[], rows = 12): string[] {
  const every = Math.max(1, Math.floor(samples.length / rows));
  const picked = samples.filter((_, i) => i % every === 0 || i === samples.length - 1);
  const f = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '-');
  const out = [
    '| t s | RSS | anon | file | heap used | heap total | external | loop held ms | streams | tools | services | index | change rows | call rows | audit rows | db+wal MiB |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const s of picked) {
    out.push(
      `| ${f(s.t)} | ${f(s.rssMiB)} | ${f(s.anonMiB)} | ${f(s.fileMiB)} | ${f(s.heapUsedMiB)} | ${f(s.heapTotalMiB)} | ${f(s.externalMiB)} | ${f(s.loopLagMaxMs)} | ${f(s.streams)} | ${f(s.tools)} | ${f(s.services)} | ${f(s.index)} | ${f(s.changeRows)} | ${f(s.callRows)} | ${f(s.auditRows)} | ${f(s.dbMiB + s.walMiB)} |`,
    );
  }
  return out;
}
