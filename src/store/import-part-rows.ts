/**
 * The staged parts of imports sent in parts (migrations/011_import_parts.sql), for
 * RegistryStore, which runs them inside its write transactions: a part is staged with the
 * replica's position, and an import's parts are deleted with the import (or its refusal).
 */
import type { SqliteDatabase } from './database.js';

/** One staged part. */
export interface ImportPartRow {
  write: string;
  part: number;
  parts: number;
  chunk: string;
  /** UTF-8 bytes of the chunk. */
  bytes: number;
  /** The staging message's stamp, in ms since 1970. */
  stagedAt: number;
}

/** What is staged of one import: enough to check the next part without reading the chunks. */
export interface StagedImport {
  /** Staged parts. */
  count: number;
  /** The lowest and highest part number staged (null when none is). */
  first: number | null;
  last: number | null;
  /** The lowest and highest part count they give (the same for a sound import). */
  minParts: number | null;
  maxParts: number | null;
  bytes: number;
}

export class ImportPartRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      stage: db.prepare(
        'INSERT INTO replication_import_parts (write_id, part, parts, chunk, bytes, staged_at) VALUES (@write, @part, @parts, @chunk, @bytes, @stagedAt)',
      ),
      summary: db.prepare(`
        SELECT count(*) AS count, min(part) AS first, max(part) AS last, min(parts) AS minParts, max(parts) AS maxParts, coalesce(sum(bytes), 0) AS bytes
        FROM replication_import_parts WHERE write_id = ? AND staged_at >= ?`),
      totalBytes: db.prepare('SELECT coalesce(sum(bytes), 0) FROM replication_import_parts WHERE staged_at >= ?').pluck(),
      chunks: db.prepare('SELECT chunk FROM replication_import_parts WHERE write_id = ? AND staged_at >= ? ORDER BY part').pluck(),
      drop: db.prepare('DELETE FROM replication_import_parts WHERE write_id = ?'),
      dropBefore: db.prepare('DELETE FROM replication_import_parts WHERE staged_at < ?'),
    };
  }

  stage(row: ImportPartRow): void {
    this.#stmts.stage.run(row);
  }

  /** What is staged of `write`, leaving out parts staged before `notBefore` (as good as dropped). */
  summary(write: string, notBefore: number): StagedImport {
    return this.#stmts.summary.get(write, notBefore) as StagedImport;
  }

  /** Bytes staged for every import, from `notBefore` on. */
  totalBytes(notBefore: number): number {
    return this.#stmts.totalBytes.get(notBefore) as number;
  }

  /** The chunks of `write` in part order, from `notBefore` on. */
  chunks(write: string, notBefore: number): string[] {
    return this.#stmts.chunks.all(write, notBefore) as string[];
  }

  /** Deletes the parts of `write`. */
  drop(write: string): void {
    this.#stmts.drop.run(write);
  }

  /** Deletes every part staged before `notBefore`; returns how many. */
  dropBefore(notBefore: number): number {
    return this.#stmts.dropBefore.run(notBefore).changes;
  }
}
