import type { CallOutcome, CallRecord } from '../model/records.js';
import type { SqliteDatabase } from './database.js';
import { writeGateOf, type WriteGate } from './write-gate.js';

/** Tool-call records in SQLite: written in batches, aggregated once at startup. */
export class UsageStore {
  readonly #db: SqliteDatabase;
  readonly #insert;
  readonly #counts;
  readonly #recent;
  readonly #prune;
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
