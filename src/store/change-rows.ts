/**
 * The change log (changes): one row per record a write touched, with the scopes it had before
 * and after, so that feeds can tell each caller what appeared in or vanished from its view.
 */
import type { ChangeRecord } from '../model/records.js';
import type { SqliteDatabase } from './database.js';

interface ChangeRow {
  seq: number;
  registry_index: number;
  kind: 'tool' | 'tool-service';
  name: string;
  op: 'upsert' | 'delete';
  scopes_before: string | null;
  scopes_after: string | null;
}

/** One life event of a tool name, for walks pinned before a restart. */
export interface ToolHistoryEntry {
  name: string;
  index: number;
  op: 'upsert' | 'delete';
}

/**
 * Pages of the change log, each costing what the page costs: the first from the first row after
 * an index (found in changes_by_index), the next ones after the last row read (a write's rows are
 * consecutive, so a page may end inside one). Filtering by registry_index and ordering by seq
 * instead sorted every later row for each page: a replay from 0 of a 400,000-row log cost 57 ms a
 * page, quadratic in the log, and 20 streams reopened with `since=0` held the loop for seconds.
 */
export const CHANGE_LOG_READS = {
  since:
    'SELECT * FROM changes WHERE seq >= (SELECT seq FROM changes WHERE registry_index > ? ORDER BY registry_index, seq LIMIT 1) AND registry_index <= ? ORDER BY seq LIMIT ?',
  afterRow: 'SELECT * FROM changes WHERE seq > ? AND registry_index <= ? ORDER BY seq LIMIT ?',
} as const;

const changeFromRow = (r: ChangeRow): ChangeRecord => ({
  seq: r.seq,
  index: r.registry_index,
  kind: r.kind,
  name: r.name,
  op: r.op,
  scopesBefore: r.scopes_before === null ? null : (JSON.parse(r.scopes_before) as string[]),
  scopesAfter: r.scopes_after === null ? null : (JSON.parse(r.scopes_after) as string[]),
});

export class ChangeRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      insert: db.prepare('INSERT INTO changes (registry_index, kind, name, op, scopes_before, scopes_after) VALUES (?, ?, ?, ?, ?, ?)'),
      since: db.prepare(CHANGE_LOG_READS.since),
      afterRow: db.prepare(CHANGE_LOG_READS.afterRow),
      toolHistory: db.prepare(
        `SELECT name, registry_index AS "index", op FROM changes
         WHERE kind = 'tool' AND name IN (SELECT name FROM changes WHERE kind = 'tool' AND op = 'delete')
         ORDER BY seq`,
      ),
    };
  }

  /** Scopes are JSON arrays; null before a record's life, and after its deletion. */
  record(
    index: number,
    kind: ChangeRow['kind'],
    name: string,
    op: ChangeRow['op'],
    scopesBefore: string | null,
    scopesAfter: string | null,
  ): void {
    this.#stmts.insert.run(index, kind, name, op, scopesBefore, scopesAfter);
  }

  /** Rows after `index` and through `through`, oldest first. */
  since(index: number, through: number, limit: number): ChangeRecord[] {
    return (this.#stmts.since.all(index, through, limit) as ChangeRow[]).map(changeFromRow);
  }

  /** Rows after the row `seq` and through `through`, oldest first. */
  afterRow(seq: number, through: number, limit: number): ChangeRecord[] {
    return (this.#stmts.afterRow.all(seq, through, limit) as ChangeRow[]).map(changeFromRow);
  }

  /** The whole history, in order, of every tool name that was ever deleted. */
  toolHistory(): ToolHistoryEntry[] {
    return this.#stmts.toolHistory.all() as ToolHistoryEntry[];
  }
}
