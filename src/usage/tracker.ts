/**
 * Usage figures for /stats: counts per tool, per agent and per outcome, and latency
 * percentiles per tool from a bounded window of recent calls. Records reach SQLite in batches
 * (one transaction per flush, not per call) and the figures are rebuilt from it at startup.
 * Beside them, the last day minute by minute (src/usage/minute-buckets.ts) for
 * `GET /stats?window=`: each minute is written once it closes, all its tools in one
 * transaction, and the open one at shutdown, so a crash loses at most the open minute.
 */
import { BatchWriter } from '../store/batch-writer.js';
import type { CallOutcome, CallRecord } from '../model/records.js';
import type { UsageStore } from '../store/usage-store.js';
import { MINUTES_KEPT, MINUTE_MS, MinuteBuckets, type WindowUsage } from './minute-buckets.js';

export interface UsageOptions {
  flushIntervalMs: number;
  /** Durations kept per tool for percentiles. */
  window: number;
  /** Call records older than this are deleted (hourly), so the table does not grow for ever. */
  retentionDays: number;
  onError?: (err: unknown, what: string) => void;
  onPruned?: (removed: number) => void;
  /** The clock of the per-minute figures (tests move it); Date.now by default. */
  now?: () => number;
}

/** The windows `GET /stats?window=` takes, in minutes. */
const USAGE_WINDOWS = { '1h': 60, '24h': MINUTES_KEPT } as const;
export type UsageWindow = keyof typeof USAGE_WINDOWS;

/** Closed minutes are written this long after the minute turns, so a call that ended at :59.999 is in. */
const AFTER_MINUTE_MS = 100;

const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

export interface LatencySummary {
  p50: number;
  p95: number;
  p99: number;
  samples: number;
}

export interface UsageStats {
  total_tool_calls: number;
  usage_by_tool: Record<string, number>;
  most_used_tool: string | null;
  usage_by_agent: Record<string, Record<string, number>>;
  errors_by_class: Record<string, number>;
  latency_ms_by_tool: Record<string, LatencySummary>;
  deprecated_tool_calls: number;
  deprecated_calls_by_tool: Record<string, number>;
}

/** A fixed-size ring of the latest durations. */
class Ring {
  readonly #values: Float64Array;
  #next = 0;
  #size = 0;
  constructor(capacity: number) {
    this.#values = new Float64Array(capacity);
  }
  push(value: number): void {
    this.#values[this.#next] = value;
    this.#next = (this.#next + 1) % this.#values.length;
    this.#size = Math.min(this.#size + 1, this.#values.length);
  }
  summary(): LatencySummary {
    const sorted = this.#values.slice(0, this.#size).sort();
    // Nearest-rank percentiles.
    const at = (p: number) => round(sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0);
    return { p50: at(50), p95: at(95), p99: at(99), samples: this.#size };
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;
/** Calls by tokens without a `sub` claim (anonymous callers are always denied, so never counted). */
const NO_SUBJECT = '(no subject)';

export class UsageTracker {
  readonly #store: UsageStore;
  readonly #options: UsageOptions;
  readonly #byTool = new Map<string, number>();
  readonly #byAgent = new Map<string, Map<string, number>>();
  /** tool -> outcome -> count, so error figures follow the caller's view too. */
  readonly #outcomes = new Map<string, Map<CallOutcome, number>>();
  readonly #latency = new Map<string, Ring>();
  /** Issue 34: calls to deprecated tools that count as uses, since this process started. */
  readonly #deprecatedByTool = new Map<string, number>();
  readonly #writer: BatchWriter<CallRecord>;
  readonly #pruneTimer: NodeJS.Timeout;
  /** Told of every call as it is recorded (metrics), whatever pruning later does to the records. */
  readonly #observers = new Set<(call: CallRecord) => void>();
  /** The last day, minute by minute (issue 34), written once a minute. */
  readonly #minutes = new MinuteBuckets();
  readonly #now: () => number;
  #minuteTimer: NodeJS.Timeout | undefined;

  /** Prunes past retention, then rebuilds the figures from what earlier runs stored. */
  constructor(store: UsageStore, options: UsageOptions) {
    this.#store = store;
    this.#options = options;
    this.#writer = new BatchWriter((batch) => store.insertMany(batch), {
      flushIntervalMs: options.flushIntervalMs,
      maxBatch: 1000,
      maxPending: 100_000,
      onError: (err) => options.onError?.(err, 'writing usage records failed'),
      gate: store.gate,
    });
    this.#now = options.now ?? Date.now;
    this.prune();
    this.#pruneTimer = setInterval(() => this.prune(), PRUNE_EVERY_MS).unref();
    this.#load();
    this.#scheduleMinute();
  }

  prune(): void {
    try {
      const removed = this.#store.prune(new Date(Date.now() - this.#options.retentionDays * DAY_MS).toISOString());
      if (removed > 0) this.#options.onPruned?.(removed);
    } catch (err) {
      this.#options.onError?.(err, 'pruning tool-call records failed');
    }
  }

  /** Writes what is pending, the open minute included (a clean shutdown loses no minute). */
  close(): void {
    clearInterval(this.#pruneTimer);
    clearTimeout(this.#minuteTimer);
    this.#writer.flush();
    this.flushMinutes(Number.POSITIVE_INFINITY);
  }

  #load(): void {
    for (const { tool, sub, outcome, n } of this.#store.counts()) this.#count(tool, sub, outcome, n);
    for (const { tool, durationMs } of this.#store.recentDurations(this.#options.window)) this.#ring(tool).push(durationMs);
    try {
      const now = this.#now();
      this.#minutes.load(this.#store.minutesSince(Math.floor(now / MINUTE_MS) - MINUTES_KEPT + 1), now);
    } catch (err) {
      this.#options.onError?.(err, 'reading per-minute usage failed');
    }
  }

  /**
   * Writes the minutes that closed before `beforeMs` (all of them, the open one too, for
   * Infinity) in one transaction and prunes past a day. Waits while an import holds the
   * connection, and keeps what a failed write did not take for the next round.
   */
  flushMinutes(beforeMs = this.#now()): void {
    const now = this.#now();
    this.#minutes.prune(now);
    if (this.#store.gate.held) return;
    const { rows, restore } = this.#minutes.takeChanged(beforeMs);
    try {
      this.#store.writeMinutes(rows, Math.floor(now / MINUTE_MS) - MINUTES_KEPT + 1);
    } catch (err) {
      restore();
      this.#options.onError?.(err, 'writing per-minute usage failed');
    }
  }

  /** Each minute, just after it turns: the minute that closed goes to SQLite. */
  #scheduleMinute(): void {
    const now = this.#now();
    const wait = MINUTE_MS - (now % MINUTE_MS) + AFTER_MINUTE_MS;
    this.#minuteTimer = setTimeout(() => {
      this.flushMinutes();
      this.#scheduleMinute();
    }, wait).unref();
  }

  record(call: CallRecord): void {
    this.#count(call.tool, call.sub, call.outcome, 1);
    if (call.deprecated === true && call.outcome !== 'denied')
      this.#deprecatedByTool.set(call.tool, (this.#deprecatedByTool.get(call.tool) ?? 0) + 1);
    if (call.outcome !== 'denied') this.#ring(call.tool).push(call.durationMs);
    this.#minutes.record(call.tool, call.outcome, call.durationMs, this.#now());
    this.#writer.push(call);
    for (const observer of this.#observers) observer(call);
  }

  /** Calls `observer` with every call recorded from now on; returns the unsubscribe. */
  observe(observer: (call: CallRecord) => void): () => void {
    this.#observers.add(observer);
    return () => {
      this.#observers.delete(observer);
    };
  }

  flush(): void {
    this.#writer.flush();
  }

  /**
   * Figures over the tools `include` accepts (the caller's view). `perAgent` false leaves
   * `usage_by_agent` empty: it names token subjects, which only operators may read.
   */
  stats(include: (tool: string) => boolean = () => true, perAgent = true): UsageStats {
    // Tool names are user input: a plain object would take `__proto__` as its prototype.
    const usageByTool: Record<string, number> = Object.create(null) as Record<string, number>;
    let total = 0;
    let mostUsed: string | null = null;
    for (const [tool, n] of [...this.#byTool].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!include(tool)) continue;
      usageByTool[tool] = n;
      total += n;
      if (mostUsed === null || n > (usageByTool[mostUsed] ?? 0)) mostUsed = tool;
    }
    const usageByAgent: Record<string, Record<string, number>> = Object.create(null) as Record<string, Record<string, number>>;
    for (const [agent, tools] of perAgent ? [...this.#byAgent].sort(([a], [b]) => (a < b ? -1 : 1)) : []) {
      const visible = Object.fromEntries([...tools].filter(([tool]) => include(tool)).sort(([a], [b]) => (a < b ? -1 : 1)));
      if (Object.keys(visible).length > 0) usageByAgent[agent] = visible;
    }
    const errors: Record<string, number> = {};
    for (const [tool, outcomes] of this.#outcomes) {
      if (!include(tool)) continue;
      for (const [outcome, n] of outcomes) if (outcome !== 'ok') errors[outcome] = (errors[outcome] ?? 0) + n;
    }
    const latency: Record<string, LatencySummary> = {};
    for (const [tool, ring] of [...this.#latency].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (include(tool)) latency[tool] = ring.summary();
    }
    const deprecatedByTool: Record<string, number> = Object.create(null) as Record<string, number>;
    let deprecatedTotal = 0;
    for (const [tool, n] of [...this.#deprecatedByTool].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!include(tool)) continue;
      deprecatedByTool[tool] = n;
      deprecatedTotal += n;
    }
    return {
      total_tool_calls: total,
      usage_by_tool: usageByTool,
      most_used_tool: mostUsed,
      usage_by_agent: usageByAgent,
      errors_by_class: Object.fromEntries(Object.entries(errors).sort(([a], [b]) => (a < b ? -1 : 1))),
      latency_ms_by_tool: latency,
      deprecated_tool_calls: deprecatedTotal,
      deprecated_calls_by_tool: deprecatedByTool,
    };
  }

  /**
   * Usage over the last hour or day (the open minute included) over the tools `include`
   * accepts, minute by minute. Per-agent figures are not kept by the minute: tools x agents x
   * 1,440 minutes has no useful bound.
   */
  windowStats(window: UsageWindow, include: (tool: string) => boolean = () => true): WindowUsage {
    return this.#minutes.window(USAGE_WINDOWS[window], this.#now(), include);
  }

  /**
   * Denied calls count only as errors: they are not uses of the tool, and counting them would
   * let anyone inflate a tool's figures.
   */
  #count(tool: string, sub: string | null, outcome: CallOutcome, n: number): void {
    const outcomes = this.#outcomes.get(tool) ?? new Map<CallOutcome, number>();
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + n);
    this.#outcomes.set(tool, outcomes);
    if (outcome === 'denied') return;
    this.#byTool.set(tool, (this.#byTool.get(tool) ?? 0) + n);
    const agent = sub ?? NO_SUBJECT;
    const tools = this.#byAgent.get(agent) ?? new Map<string, number>();
    tools.set(tool, (tools.get(tool) ?? 0) + n);
    this.#byAgent.set(agent, tools);
  }

  #ring(tool: string): Ring {
    let ring = this.#latency.get(tool);
    if (!ring) {
      ring = new Ring(this.#options.window);
      this.#latency.set(tool, ring);
    }
    return ring;
  }
}
