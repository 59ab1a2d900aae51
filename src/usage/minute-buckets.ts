/**
 * Usage over time (issue 34): per minute and per tool, calls by outcome and a latency
 * histogram (src/usage/latency-histogram.ts), for the last day. A ring of 1,440 minutes holds a
 * map per minute of only the tools called in it, so memory is at most 1,440 x the tools called
 * in a minute x 380 to 700 bytes (50 tools called every minute of a day: 27 MB, measured);
 * minutes older than the ring are dropped as the clock moves. Recording a call is O(1) and
 * measured at about 100 ns: a map lookup, a few increments, and an allocation only the first
 * time a tool is called in a minute or when its durations spread past the buckets it holds.
 * Closed minutes are handed to the store in one batch per minute (src/usage/tracker.ts); what
 * the store gave back at startup is loaded again.
 */
import { CALL_OUTCOMES, type CallOutcome } from '../model/records.js';
import type { UsageMinuteRow } from '../store/usage-store.js';
import type { LatencySummary } from './tracker.js';
import { LATENCY_BUCKETS as IMPORTED_BUCKETS, bucketOf, percentileOf } from './latency-histogram.js';

/** A local copy: an imported binding read in a loop costs a getter call per read under tsx and vitest. */
const LATENCY_BUCKETS = IMPORTED_BUCKETS;

export const MINUTE_MS = 60_000;
/** Minutes kept: a day. */
export const MINUTES_KEPT = 1440;

const OUTCOMES: readonly CallOutcome[] = CALL_OUTCOMES;
const OUTCOME_INDEX = new Map(OUTCOMES.map((o, i) => [o, i]));
const DENIED = OUTCOME_INDEX.get('denied') ?? 4;
const OK = OUTCOME_INDEX.get('ok') ?? 0;
const LATENCY_AT = OUTCOMES.length;

/** Buckets a cell's latency range takes on each side of a new bucket, so it seldom grows again. */
const SLACK = 2;

/**
 * One tool's calls in one minute. The histogram holds only the range of buckets its calls fell
 * in (a tool's calls within a minute seldom spread over more than a few): measured, a cell whose
 * calls fell in one bucket takes about 380 bytes with its map entry, 700 with all 90 buckets.
 */
class Cell {
  /** Calls by outcome (in OUTCOMES order), then calls by latency bucket `lo` to `hi`: one array, not two. */
  counts = new Uint32Array(LATENCY_AT);
  /** The first latency bucket `counts` holds; it holds `counts.length - LATENCY_AT` of them. */
  lo = 0;
  /** Calls with a duration (every outcome but `denied`). */
  samples = 0;
  minMs = Number.POSITIVE_INFINITY;
  maxMs = 0;

  /** The last latency bucket held (lo - 1 when none is). */
  get hi(): number {
    return this.lo + this.counts.length - LATENCY_AT - 1;
  }

  addLatency(bucket: number, n: number): void {
    if (this.counts.length === LATENCY_AT || bucket < this.lo || bucket > this.hi) this.#widen(bucket);
    const i = LATENCY_AT + bucket - this.lo;
    this.counts[i] = (this.counts[i] ?? 0) + n;
    this.samples += n;
  }

  latencyAt(bucket: number): number {
    return bucket < this.lo || bucket > this.hi ? 0 : (this.counts[LATENCY_AT + bucket - this.lo] ?? 0);
  }

  /** Reallocates to take `bucket`: at most a few times a minute per tool. */
  #widen(bucket: number): void {
    const empty = this.counts.length === LATENCY_AT;
    const lo = Math.max(0, Math.min(bucket - SLACK, empty ? bucket : this.lo));
    const hi = Math.min(LATENCY_BUCKETS - 1, Math.max(bucket + SLACK, empty ? bucket : this.hi));
    const counts = new Uint32Array(LATENCY_AT + hi - lo + 1);
    counts.set(this.counts.subarray(0, LATENCY_AT));
    if (!empty) counts.set(this.counts.subarray(LATENCY_AT), LATENCY_AT + this.lo - lo);
    this.counts = counts;
    this.lo = lo;
  }
}

interface Slot {
  minute: number;
  cells: Map<string, Cell>;
  /** Changed since it was last handed to the store. */
  dirty: boolean;
}

/** One minute of a window, over the tools the caller may see. */
export interface MinuteBucket {
  /** The minute's first instant, RFC 3339 (`2026-12-03T10:15:00Z`). */
  start: string;
  calls: number;
  errors: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface WindowUsage {
  total_tool_calls: number;
  usage_by_tool: Record<string, number>;
  most_used_tool: string | null;
  errors_by_class: Record<string, number>;
  latency_ms_by_tool: Record<string, LatencySummary>;
  buckets: MinuteBucket[];
}

/** Sums of cells over a span. */
class Sum {
  readonly outcomes = new Float64Array(OUTCOMES.length);
  readonly latency = new Float64Array(LATENCY_BUCKETS);
  samples = 0;
  minMs = Number.POSITIVE_INFINITY;
  maxMs = 0;
  add(cell: Cell): void {
    const counts = cell.counts;
    for (let i = 0; i < LATENCY_AT; i++) this.outcomes[i] = (this.outcomes[i] ?? 0) + (counts[i] ?? 0);
    if (cell.samples === 0) return;
    const from = LATENCY_AT - cell.lo;
    for (let i = cell.lo, hi = cell.hi; i <= hi; i++) this.latency[i] = (this.latency[i] ?? 0) + (counts[from + i] ?? 0);
    this.samples += cell.samples;
    if (cell.minMs < this.minMs) this.minMs = cell.minMs;
    if (cell.maxMs > this.maxMs) this.maxMs = cell.maxMs;
  }
  reset(): void {
    this.outcomes.fill(0);
    this.latency.fill(0);
    this.samples = 0;
    this.minMs = Number.POSITIVE_INFINITY;
    this.maxMs = 0;
  }
  /** Calls that count as uses: every outcome but `denied`. */
  get calls(): number {
    let n = 0;
    for (let i = 0; i < OUTCOMES.length; i++) if (i !== DENIED) n += this.outcomes[i] ?? 0;
    return n;
  }
  get errors(): number {
    let n = 0;
    for (let i = 0; i < OUTCOMES.length; i++) if (i !== OK) n += this.outcomes[i] ?? 0;
    return n;
  }
  percentile(p: number): number {
    return percentileOf(this.latency, this.samples, p, this.minMs, this.maxMs);
  }
}

const byName = <T>([a]: [string, T], [b]: [string, T]) => (a < b ? -1 : a > b ? 1 : 0);
const rfc3339Minute = (minute: number) => `${new Date(minute * MINUTE_MS).toISOString().slice(0, 16)}:00Z`;

export class MinuteBuckets {
  readonly #slots: (Slot | undefined)[] = new Array<Slot | undefined>(MINUTES_KEPT);

  /** Counts one call at `nowMs` (epoch ms). */
  record(tool: string, outcome: CallOutcome, durationMs: number, nowMs: number): void {
    const slot = this.#slot(Math.floor(nowMs / MINUTE_MS));
    if (!slot) return;
    let cell = slot.cells.get(tool);
    if (!cell) {
      cell = new Cell();
      slot.cells.set(tool, cell);
    }
    slot.dirty = true;
    const o = OUTCOME_INDEX.get(outcome) ?? OUTCOME_INDEX.get('unavailable') ?? 3;
    cell.counts[o] = (cell.counts[o] ?? 0) + 1;
    if (o === DENIED) return;
    cell.addLatency(bucketOf(durationMs), 1);
    if (durationMs < cell.minMs) cell.minMs = durationMs;
    if (durationMs > cell.maxMs) cell.maxMs = durationMs;
  }

  /** How many (minute, tool) cells are held: the bound on memory. */
  get size(): number {
    let n = 0;
    for (const slot of this.#slots) n += slot?.cells.size ?? 0;
    return n;
  }

  /** Drops minutes older than the day ending with the minute of `nowMs`. */
  prune(nowMs: number): void {
    const oldest = Math.floor(nowMs / MINUTE_MS) - MINUTES_KEPT + 1;
    for (let i = 0; i < MINUTES_KEPT; i++) if ((this.#slots[i]?.minute ?? oldest) < oldest) this.#slots[i] = undefined;
  }

  /**
   * The rows of minutes changed since they were last taken, before the minute of `beforeMs`
   * (pass Infinity for all, open minute included, at shutdown); marks them taken. `restore`
   * marks them changed again when the store failed to take them.
   */
  takeChanged(beforeMs: number): { rows: UsageMinuteRow[]; restore: () => void } {
    const before = beforeMs === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : Math.floor(beforeMs / MINUTE_MS);
    const rows: UsageMinuteRow[] = [];
    const taken: Slot[] = [];
    for (const slot of this.#slots) {
      if (!slot?.dirty || slot.minute >= before) continue;
      slot.dirty = false;
      taken.push(slot);
      for (const [tool, cell] of slot.cells) rows.push(rowOf(slot.minute, tool, cell));
    }
    return {
      rows,
      restore: () => {
        for (const slot of taken) slot.dirty = true;
      },
    };
  }

  /** Loads rows an earlier run stored (those outside the day ending at `nowMs` are ignored). */
  load(rows: Iterable<UsageMinuteRow>, nowMs: number): void {
    const current = Math.floor(nowMs / MINUTE_MS);
    for (const row of rows) {
      if (row.minute > current || row.minute <= current - MINUTES_KEPT) continue;
      const slot = this.#slot(row.minute);
      if (!slot) continue;
      const cell = new Cell();
      for (let i = 0; i < LATENCY_AT; i++) cell.counts[i] = row.outcomes[i] ?? 0;
      for (const [bucket, n] of row.latency) if (bucket >= 0 && bucket < LATENCY_BUCKETS && n > 0) cell.addLatency(bucket, n);
      if (cell.samples > 0) {
        cell.minMs = row.minMs ?? 0;
        cell.maxMs = row.maxMs ?? 0;
      }
      slot.cells.set(row.tool, cell);
    }
  }

  /**
   * Usage over the `minutes` minutes ending with the minute of `nowMs` (the open one included),
   * over the tools `include` accepts, with one bucket per minute, oldest first, minutes without
   * calls included. Costs the cells in the window times the buckets they hold: measured, 20 ms
   * for a day of 50 tools called every minute (72,000 cells), 2 ms for an hour of them.
   */
  window(minutes: number, nowMs: number, include: (tool: string) => boolean): WindowUsage {
    const current = Math.floor(nowMs / MINUTE_MS);
    const perTool = new Map<string, Sum>();
    const seen = new Map<string, boolean>();
    const minute = new Sum();
    const buckets: MinuteBucket[] = [];
    for (let m = current - minutes + 1; m <= current; m++) {
      minute.reset();
      const slot = this.#slots[index(m)];
      if (slot?.minute === m) {
        for (const [tool, cell] of slot.cells) {
          let visible = seen.get(tool);
          if (visible === undefined) seen.set(tool, (visible = include(tool)));
          if (!visible) continue;
          minute.add(cell);
          let sum = perTool.get(tool);
          if (!sum) perTool.set(tool, (sum = new Sum()));
          sum.add(cell);
        }
      }
      const hasSamples = minute.samples > 0;
      buckets.push({
        start: rfc3339Minute(m),
        calls: minute.calls,
        errors: minute.errors,
        p50_ms: hasSamples ? minute.percentile(50) : null,
        p95_ms: hasSamples ? minute.percentile(95) : null,
      });
    }
    // Tool names are user input: a plain object would take `__proto__` as its prototype.
    const usageByTool = Object.create(null) as Record<string, number>;
    const latency = Object.create(null) as Record<string, LatencySummary>;
    const errors = new Map<string, number>();
    let total = 0;
    let mostUsed: string | null = null;
    let most = 0;
    for (const [tool, sum] of [...perTool].sort(byName)) {
      const calls = sum.calls;
      if (calls > 0) {
        usageByTool[tool] = calls;
        total += calls;
        if (calls > most) [mostUsed, most] = [tool, calls];
      }
      OUTCOMES.forEach((outcome, i) => {
        const n = sum.outcomes[i] ?? 0;
        if (i !== OK && n > 0) errors.set(outcome, (errors.get(outcome) ?? 0) + n);
      });
      if (sum.samples > 0)
        latency[tool] = { p50: sum.percentile(50), p95: sum.percentile(95), p99: sum.percentile(99), samples: sum.samples };
    }
    return {
      total_tool_calls: total,
      usage_by_tool: usageByTool,
      most_used_tool: mostUsed,
      errors_by_class: Object.fromEntries([...errors].sort(byName)),
      latency_ms_by_tool: latency,
      buckets,
    };
  }

  /** The slot of `minute`, emptied first if it still holds the minute a day earlier; undefined for a minute already gone. */
  #slot(minute: number): Slot | undefined {
    const i = index(minute);
    const slot = this.#slots[i];
    if (slot?.minute === minute) return slot;
    // A clock that went back by a day or more: that minute is gone from the ring.
    if (slot && slot.minute > minute) return undefined;
    const fresh: Slot = { minute, cells: new Map(), dirty: false };
    this.#slots[i] = fresh;
    return fresh;
  }
}

const index = (minute: number) => ((minute % MINUTES_KEPT) + MINUTES_KEPT) % MINUTES_KEPT;

function rowOf(minute: number, tool: string, cell: Cell): UsageMinuteRow {
  const latency: [number, number][] = [];
  for (let bucket = cell.lo; bucket <= cell.hi; bucket++) {
    const n = cell.latencyAt(bucket);
    if (n > 0) latency.push([bucket, n]);
  }
  return {
    minute,
    tool,
    outcomes: [...cell.counts.subarray(0, LATENCY_AT)],
    latency,
    minMs: cell.samples > 0 ? cell.minMs : null,
    maxMs: cell.samples > 0 ? cell.maxMs : null,
  };
}
