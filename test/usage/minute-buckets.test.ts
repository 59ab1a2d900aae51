/**
 * Issue 34, usage over time: the per-minute bucket store on its own (percentiles merged from
 * histograms, pruning past a day, the bound on cells) and its rows through the real SQLite
 * store of migration 017 and back, and the tracker that writes closed minutes and loads them.
 */
import { describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { UsageStore } from '../../src/store/usage-store.js';
import { LATENCY_BUCKETS, bucketOf, lowerBoundOf, percentileOf } from '../../src/usage/latency-histogram.js';
import { MINUTES_KEPT, MINUTE_MS, MinuteBuckets } from '../../src/usage/minute-buckets.js';
import { UsageTracker } from '../../src/usage/tracker.js';

/** 2026-12-03T10:00:00Z, a minute boundary. */
const T0 = Date.UTC(2026, 11, 3, 10, 0, 0);
const all = () => true;
const nearestRank = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};
/** A deterministic spread of durations from 0.2 ms to about 20 s (log-uniform). */
const durations = (n: number, seed: number) => {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 0.2 * 10 ** ((x / 2 ** 31) * 5);
  });
};
const BOUND = 2 ** (1 / 8) + 1e-9;

describe('latency histogram', () => {
  it('puts each duration in the bucket whose bounds hold it', () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(-1)).toBe(0);
    expect(bucketOf(Number.NaN)).toBe(0);
    expect(bucketOf(0.124)).toBe(0);
    expect(bucketOf(0.125)).toBe(1);
    expect(bucketOf(10 * 60_000)).toBe(LATENCY_BUCKETS - 1);
    for (const ms of durations(2000, 7)) {
      const b = bucketOf(ms);
      expect(lowerBoundOf(b)).toBeLessThanOrEqual(ms);
      expect(ms).toBeLessThan(lowerBoundOf(b + 1) * (1 + 1e-12));
    }
  });

  it('gives percentiles within a factor 2^(1/8) of the exact nearest-rank value', () => {
    const values = durations(5000, 42);
    const counts = new Array<number>(LATENCY_BUCKETS).fill(0);
    for (const ms of values) counts[bucketOf(ms)]!++;
    for (const p of [1, 50, 90, 95, 99, 100]) {
      const exact = nearestRank(values, p);
      const estimate = percentileOf(counts, values.length, p, Math.min(...values), Math.max(...values));
      expect(estimate / exact, `p${p}: ${estimate} vs ${exact}`).toBeLessThanOrEqual(BOUND);
      expect(exact / estimate, `p${p}: ${estimate} vs ${exact}`).toBeLessThanOrEqual(BOUND + 0.01 / exact);
    }
  });

  it('keeps a percentile within the shortest and longest call (one call: its own duration)', () => {
    const counts = new Array<number>(LATENCY_BUCKETS).fill(0);
    counts[bucketOf(37.5)] = 1;
    expect(percentileOf(counts, 1, 50, 37.5, 37.5)).toBe(37.5);
    const long = new Array<number>(LATENCY_BUCKETS).fill(0);
    long[bucketOf(900_000)] = 1;
    expect(percentileOf(long, 1, 99, 900_000, 900_000)).toBe(900_000);
  });
});

describe('minute buckets', () => {
  it('merges minutes: percentiles over a window are those of every call in it, within the bound', () => {
    const buckets = new MinuteBuckets();
    const fast = durations(600, 1).map((ms) => ms / 100);
    const slow = durations(400, 2);
    fast.forEach((ms, i) => buckets.record('search', 'ok', ms, T0 + (i % 60) * 1000));
    slow.forEach((ms, i) => buckets.record('search', 'ok', ms, T0 + MINUTE_MS * 5 + (i % 60) * 1000));
    const window = buckets.window(60, T0 + MINUTE_MS * 10, all);
    const summary = window.latency_ms_by_tool['search']!;
    expect(summary.samples).toBe(1000);
    const every = [...fast, ...slow];
    for (const [p, estimate] of [
      [50, summary.p50],
      [95, summary.p95],
      [99, summary.p99],
    ] as const) {
      const exact = nearestRank(every, p);
      expect(Math.max(estimate / exact, exact / estimate), `p${p}`).toBeLessThanOrEqual(BOUND + 0.01 / exact);
    }
    // Each minute's own percentiles come from that minute's calls only.
    const first = window.buckets.find((b) => b.start === '2026-12-03T10:00:00Z')!;
    expect(first.calls).toBe(600);
    expect(first.p95_ms! / nearestRank(fast, 95)).toBeLessThanOrEqual(BOUND + 0.01);
    const sixth = window.buckets.find((b) => b.start === '2026-12-03T10:05:00Z')!;
    expect(sixth.calls).toBe(400);
    expect(sixth.p50_ms! / nearestRank(slow, 50)).toBeLessThanOrEqual(BOUND + 0.01);
  });

  it('holds every duration whatever order they come in (a cell widens its bucket range as needed)', () => {
    const values = [...durations(300, 9), 0, 0.01, 600_000, 1e9];
    const direct = new Map<number, number>();
    for (const ms of values) direct.set(bucketOf(ms), (direct.get(bucketOf(ms)) ?? 0) + 1);
    for (const order of [values, [...values].sort((a, b) => a - b), [...values].sort((a, b) => b - a)]) {
      const buckets = new MinuteBuckets();
      for (const ms of order) buckets.record('t', 'ok', ms, T0);
      const [row] = buckets.takeChanged(Number.POSITIVE_INFINITY).rows;
      expect(new Map(row!.latency)).toEqual(direct);
      expect([row!.minMs, row!.maxMs]).toEqual([0, 1e9]);
    }
  });

  it('answers one bucket per minute, oldest first, zero minutes included, the open minute last', () => {
    const buckets = new MinuteBuckets();
    buckets.record('a', 'ok', 3, T0 + 30_000);
    const now = T0 + 59 * MINUTE_MS + 5000;
    const hour = buckets.window(60, now, all);
    expect(hour.buckets).toHaveLength(60);
    expect(hour.buckets[0]).toEqual({ start: '2026-12-03T10:00:00Z', calls: 1, errors: 0, p50_ms: 3, p95_ms: 3 });
    expect(hour.buckets[1]).toEqual({ start: '2026-12-03T10:01:00Z', calls: 0, errors: 0, p50_ms: null, p95_ms: null });
    expect(hour.buckets.at(-1)!.start).toBe('2026-12-03T10:59:00Z');
    // A minute later the call is out of the hour, still in the day.
    expect(buckets.window(60, now + MINUTE_MS, all).total_tool_calls).toBe(0);
    const day = buckets.window(MINUTES_KEPT, now + MINUTE_MS, all);
    expect(day.buckets).toHaveLength(1440);
    expect(day.total_tool_calls).toBe(1);
  });

  it('counts as /stats does: denied calls only as errors, every other outcome as a call and an error class', () => {
    const buckets = new MinuteBuckets();
    buckets.record('a', 'ok', 1, T0);
    buckets.record('a', 'timeout', 300, T0);
    buckets.record('a', 'denied', 0, T0);
    buckets.record('b', 'denied', 0, T0);
    buckets.record('b', 'service-error', 2, T0);
    buckets.record('c', 'denied', 0, T0);
    const w = buckets.window(60, T0, all);
    expect(w.total_tool_calls).toBe(3);
    expect(w.usage_by_tool).toEqual({ a: 2, b: 1 });
    expect(w.most_used_tool).toBe('a');
    expect(w.errors_by_class).toEqual({ denied: 3, 'service-error': 1, timeout: 1 });
    expect(Object.keys(w.latency_ms_by_tool)).toEqual(['a', 'b']);
    expect(w.latency_ms_by_tool['a']!.samples).toBe(2);
    expect(w.buckets.at(-1)).toMatchObject({ calls: 3, errors: 5 });
  });

  it("follows the caller's view: tools it may not see count nowhere, buckets included", () => {
    const buckets = new MinuteBuckets();
    buckets.record('public', 'ok', 1, T0);
    buckets.record('secret', 'ok', 500, T0);
    buckets.record('secret', 'unavailable', 5, T0);
    const w = buckets.window(60, T0, (tool) => tool === 'public');
    expect(w.usage_by_tool).toEqual({ public: 1 });
    expect(w.errors_by_class).toEqual({});
    expect(Object.keys(w.latency_ms_by_tool)).toEqual(['public']);
    expect(w.buckets.at(-1)).toMatchObject({ calls: 1, errors: 0, p50_ms: 1, p95_ms: 1 });
  });

  it('takes tool names that are Object.prototype keys as plain names', () => {
    const buckets = new MinuteBuckets();
    buckets.record('__proto__', 'ok', 1, T0);
    const w = buckets.window(60, T0, all);
    expect(Object.keys(w.usage_by_tool)).toEqual(['__proto__']);
    expect(w.usage_by_tool['__proto__']).toBe(1);
  });

  it('keeps at most a day: 1,440 minutes x the tools called in each, older minutes pruned', () => {
    const buckets = new MinuteBuckets();
    // Two days, three tools, every minute; one more tool only on the first day.
    for (let m = 0; m < 2 * MINUTES_KEPT; m++) {
      for (const tool of ['a', 'b', 'c']) buckets.record(tool, 'ok', 1, T0 + m * MINUTE_MS);
      if (m < MINUTES_KEPT) buckets.record('gone', 'ok', 1, T0 + m * MINUTE_MS);
    }
    const now = T0 + (2 * MINUTES_KEPT - 1) * MINUTE_MS;
    expect(buckets.size).toBe(3 * MINUTES_KEPT);
    const day = buckets.window(MINUTES_KEPT, now, all);
    expect(day.usage_by_tool).toEqual({ a: 1440, b: 1440, c: 1440 });
    // An idle day later nothing is left once pruned.
    buckets.prune(now + MINUTES_KEPT * MINUTE_MS);
    expect(buckets.size).toBe(0);
    expect(buckets.window(MINUTES_KEPT, now + MINUTES_KEPT * MINUTE_MS, all).total_tool_calls).toBe(0);
  });

  it('round-trips through the migration 017 table: closed minutes taken once, loaded back whole', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    const store = new UsageStore(db);
    const buckets = new MinuteBuckets();
    buckets.record('a', 'ok', 12.5, T0);
    buckets.record('a', 'cancelled', 40, T0 + 1000);
    buckets.record('a', 'denied', 0, T0 + 2000);
    buckets.record('b', 'denied', 0, T0 + MINUTE_MS);
    buckets.record('a', 'ok', 7, T0 + 2 * MINUTE_MS); // the open minute
    const closed = buckets.takeChanged(T0 + 2 * MINUTE_MS);
    expect(closed.rows.map((r) => [r.minute - T0 / MINUTE_MS, r.tool])).toEqual([
      [0, 'a'],
      [1, 'b'],
    ]);
    store.writeMinutes(closed.rows, 0);
    expect(buckets.takeChanged(T0 + 2 * MINUTE_MS).rows).toEqual([]);
    // Every call, open minute included, at shutdown.
    store.writeMinutes(buckets.takeChanged(Number.POSITIVE_INFINITY).rows, 0);
    const again = new MinuteBuckets();
    again.load(store.minutesSince(0), T0 + 2 * MINUTE_MS);
    expect(again.window(60, T0 + 2 * MINUTE_MS, all)).toEqual(buckets.window(60, T0 + 2 * MINUTE_MS, all));
    expect(store.minutesSince(0).find((r) => r.tool === 'b')).toMatchObject({ outcomes: [0, 0, 0, 0, 1, 0], minMs: null, latency: [] });
    // Writing prunes minutes before the day.
    store.writeMinutes([], T0 / MINUTE_MS + 1);
    expect(store.minutesSince(0).map((r) => r.tool)).toEqual(['b', 'a']);
    db.close();
  });
});

describe('the tracker (per-minute figures)', () => {
  const options = (now: () => number) => ({ flushIntervalMs: 1000, window: 1024, retentionDays: 90, now });

  it('writes closed minutes in one batch and a restart on the same database loads the day', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    const store = new UsageStore(db);
    let now = T0 + 10_000;
    const first = new UsageTracker(
      store,
      options(() => now),
    );
    first.record({ at: new Date(now).toISOString(), tool: 'calc', sub: 's', outcome: 'ok', durationMs: 4 });
    first.record({ at: new Date(now).toISOString(), tool: 'calc', sub: 's', outcome: 'timeout', durationMs: 900 });
    now += MINUTE_MS;
    first.flushMinutes();
    expect(store.minutesSince(0)).toHaveLength(1);
    first.record({ at: new Date(now).toISOString(), tool: 'calc', sub: 's', outcome: 'ok', durationMs: 5 });
    // The open minute is not written until it closes, or at shutdown.
    first.flushMinutes();
    expect(store.minutesSince(0)).toHaveLength(1);
    first.close();
    expect(store.minutesSince(0)).toHaveLength(2);
    const second = new UsageTracker(
      store,
      options(() => now),
    );
    expect(second.windowStats('1h')).toEqual(first.windowStats('1h'));
    expect(second.windowStats('1h')).toMatchObject({ total_tool_calls: 3, errors_by_class: { timeout: 1 } });
    // A call after the restart in the same minute adds to it; the row written again holds both runs' calls.
    second.record({ at: new Date(now).toISOString(), tool: 'calc', sub: 's', outcome: 'ok', durationMs: 6 });
    second.close();
    expect(
      new UsageTracker(
        store,
        options(() => now),
      ).windowStats('24h').total_tool_calls,
    ).toBe(4);
    db.close();
  });

  it('writes each minute on its own just after it closes, not once per call', () => {
    vi.useFakeTimers({ now: T0 + 10_000, toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    try {
      const db = openDatabase(':memory:');
      migrate(db);
      const store = new UsageStore(db);
      const writes: number[] = [];
      const writeMinutes = store.writeMinutes.bind(store);
      store.writeMinutes = (rows, pruneBefore) => {
        writes.push(rows.length);
        writeMinutes(rows, pruneBefore);
      };
      const tracker = new UsageTracker(store, { flushIntervalMs: 1000, window: 1024, retentionDays: 90 });
      for (let i = 0; i < 100; i++)
        tracker.record({ at: new Date().toISOString(), tool: `t${i % 3}`, sub: null, outcome: 'ok', durationMs: i });
      vi.advanceTimersByTime(49_000); // 10:00:59
      expect(store.minutesSince(0)).toEqual([]);
      vi.advanceTimersByTime(1_000 + 100); // just after 10:01:00
      expect(store.minutesSince(0).map((r) => r.tool)).toEqual(['t0', 't1', 't2']);
      expect(writes.filter((n) => n > 0)).toEqual([3]);
      // A minute without calls writes nothing new; the next busy one is written after it closes.
      vi.advanceTimersByTime(60_000);
      tracker.record({ at: new Date().toISOString(), tool: 't0', sub: null, outcome: 'ok', durationMs: 1 });
      vi.advanceTimersByTime(60_000);
      expect(store.minutesSince(0)).toHaveLength(4);
      expect(writes.filter((n) => n > 0)).toEqual([3, 1]);
      tracker.close();
      db.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps minutes a failed write did not take for the next round', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    const store = new UsageStore(db);
    let now = T0;
    const errors: string[] = [];
    const tracker = new UsageTracker(store, { ...options(() => now), onError: (_err, what) => errors.push(what) });
    tracker.record({ at: new Date(now).toISOString(), tool: 'calc', sub: null, outcome: 'ok', durationMs: 1 });
    now += MINUTE_MS;
    db.exec('ALTER TABLE usage_minutes RENAME TO usage_minutes_away');
    tracker.flushMinutes();
    expect(errors).toEqual(['writing per-minute usage failed']);
    db.exec('ALTER TABLE usage_minutes_away RENAME TO usage_minutes');
    tracker.flushMinutes();
    expect(store.minutesSince(0)).toHaveLength(1);
    tracker.close();
    db.close();
  });
});
