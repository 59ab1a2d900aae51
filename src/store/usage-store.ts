import { CALL_OUTCOMES, type CallOutcome, type CallRecord } from '../model/records.js';
import type { SqliteDatabase } from './database.js';
import { writeGateOf, type WriteGate } from './write-gate.js';

/** One tool's calls in one minute (issue 34, migration 017). */
export interface UsageMinuteRow {
  /** Minutes since 1970-01-01T00:00Z. */
  minute: number;
  tool: string;
  /** Calls by outcome, in the order of CALL_OUTCOMES. */
  outcomes: number[];
  /** [bucket, calls] for the latency buckets with calls (src/usage/latency-histogram.ts). */
  latency: [number, number][];
  minMs: number | null;
  maxMs: number | null;
}

interface StoredMinute {
  minute: number;
  tool: string;
  ok: number;
  service_error: number;
  timeout: number;
  unavailable: number;
  denied: number;
  cancelled: number;
  latency: string;
  min_ms: number | null;
  max_ms: number | null;
}

const OUTCOME_COLUMNS = CALL_OUTCOMES.map((o) => o.replace('-', '_'));

/** A stored histogram, or none if the text is not one (a hand-edited row costs that minute's latency, not the startup). */
function latencyOf(text: string): [number, number][] {
  try {
    const value: unknown = JSON.parse(text);
    if (!Array.isArray(value)) return [];
    return value.filter(
      (pair): pair is [number, number] =>
        Array.isArray(pair) && pair.length === 2 && pair.every((n) => Number.isSafeInteger(n) && (n as number) >= 0),
    );
  } catch {
    return [];
  }
}

/** Tool-call records in SQLite: written in batches, aggregated once at startup. */
export class UsageStore {
  readonly #db: SqliteDatabase;
  readonly #insert;
  readonly #counts;
  readonly #recent;
  readonly #prune;
  readonly #upsertMinute;
  readonly #minutesSince;
  readonly #pruneMinutes;
  /** Held by an import written in slices: flushes and pruning wait for it. */
  readonly gate: WriteGate;

  constructor(db: SqliteDatabase) {
    this.#db = db;
    this.gate = writeGateOf(db);
    this.#insert = db.prepare(
      'INSERT INTO tool_calls (at, tool, sub, outcome, duration_ms) VALUES (@at, @tool, @sub, @outcome, @durationMs)',
    );
    this.#counts = db.prepare('SELECT tool, sub, outcome, count(*) AS n FROM tool_calls GROUP BY tool, sub, outcome');
    this.#recent = db.prepare(`SELECT tool, duration_ms AS durationMs FROM (
        SELECT tool, duration_ms, row_number() OVER (PARTITION BY tool ORDER BY id DESC) AS r FROM tool_calls WHERE outcome != 'denied'
      ) WHERE r <= ? ORDER BY tool`);
    this.#prune = db.prepare('DELETE FROM tool_calls WHERE at < ?');
    this.#upsertMinute = db.prepare(
      `INSERT OR REPLACE INTO usage_minutes (minute, tool, ${OUTCOME_COLUMNS.join(', ')}, latency, min_ms, max_ms)
       VALUES (@minute, @tool, ${OUTCOME_COLUMNS.map((c) => `@${c}`).join(', ')}, @latency, @min_ms, @max_ms)`,
    );
    this.#minutesSince = db.prepare('SELECT * FROM usage_minutes WHERE minute >= ? ORDER BY minute');
    this.#pruneMinutes = db.prepare('DELETE FROM usage_minutes WHERE minute < ?');
  }

  /**
   * Writes minutes in one transaction, replacing what was stored for the same minute and tool
   * (the rows carry the whole minute, so a minute written at shutdown and again after a restart
   * within it stays whole), and deletes minutes before `pruneBefore`.
   */
  writeMinutes(rows: readonly UsageMinuteRow[], pruneBefore: number): void {
    this.#db.transaction(() => {
      for (const row of rows) {
        const stored: Record<string, unknown> = {
          minute: row.minute,
          tool: row.tool,
          latency: JSON.stringify(row.latency),
          min_ms: row.minMs,
          max_ms: row.maxMs,
        };
        OUTCOME_COLUMNS.forEach((column, i) => (stored[column] = row.outcomes[i] ?? 0));
        this.#upsertMinute.run(stored);
      }
      this.#pruneMinutes.run(pruneBefore);
    })();
  }

  /** The stored minutes from `minute` on, oldest first. */
  minutesSince(minute: number): UsageMinuteRow[] {
    return (this.#minutesSince.all(minute) as StoredMinute[]).map((row) => ({
      minute: row.minute,
      tool: row.tool,
      outcomes: OUTCOME_COLUMNS.map((column) => row[column as keyof StoredMinute] as number),
      latency: latencyOf(row.latency),
      minMs: row.min_ms,
      maxMs: row.max_ms,
    }));
  }

  /** Deletes records older than `before` (ISO time); returns how many went. */
  prune(before: string): number {
    // Skipped while an import holds the connection; the next round prunes.
    if (this.gate.held) return 0;
    return this.#prune.run(before).changes;
  }

  insertMany(records: readonly CallRecord[]): void {
    this.#db.transaction(() => {
      for (const r of records) this.#insert.run(r);
    })();
  }

  counts(): { tool: string; sub: string | null; outcome: CallOutcome; n: number }[] {
    return this.#counts.all() as { tool: string; sub: string | null; outcome: CallOutcome; n: number }[];
  }

  /** The latest `perTool` durations of each tool, for latency percentiles. */
  recentDurations(perTool: number): { tool: string; durationMs: number }[] {
    return this.#recent.all(perTool) as { tool: string; durationMs: number }[];
  }
}
