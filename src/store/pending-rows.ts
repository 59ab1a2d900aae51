/**
 * Versions of tools that wait for an operator's review, one row per owner and tool name: upstream
 * MCP servers' (issue 29, migrations/013_mcp_pending.sql) and OpenAPI sources' re-reads (issue 30,
 * migrations/018_openapi_pending.sql). For RegistryStore, which runs the writes inside the
 * transactions of the syncs, refreshes, accepts and rejects that make them.
 */
import type { SqliteDatabase } from './database.js';

interface Row {
  name: string;
  digest: string;
  descriptor: string;
  accepted_digest: string | null;
  seen_at: string;
  rejected_at: string | null;
}

/** A pending version as written: `descriptor` is stored as JSON. */
export interface PendingWrite<T> {
  name: string;
  digest: string;
  descriptor: T;
  /** The digest of the version agents are served now, or null for a tool not served yet. */
  acceptedDigest: string | null;
}

/** A pending version as the admin API lists it. */
export interface PendingRow<T> extends PendingWrite<T> {
  seenAt: string;
  rejectedAt: string | null;
  rejected: boolean;
}

const COLUMNS = 'name, digest, descriptor, accepted_digest, seen_at, rejected_at';

/** The two queues: the table and its owner column, never from input. */
export type PendingTable = { table: 'mcp_pending'; owner: 'server_id' } | { table: 'openapi_pending'; owner: 'source_id' };

export class PendingRows<T> {
  readonly #stmts;

  constructor(db: SqliteDatabase, { table, owner }: PendingTable) {
    this.#stmts = {
      one: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE ${owner} = ? AND name = ?`),
      page: db.prepare(`
        SELECT ${COLUMNS} FROM ${table}
        WHERE ${owner} = @owner AND name > @after AND (@rejected OR rejected_at IS NULL)
        ORDER BY name LIMIT @limit`),
      count: db.prepare(`SELECT count(*) FROM ${table} WHERE ${owner} = ? AND rejected_at IS NULL`).pluck(),
      names: db.prepare(`SELECT name FROM ${table} WHERE ${owner} = ?`).pluck(),
      // A version listed again keeps when it was first seen and whether it was rejected; a new one starts afresh.
      upsert: db.prepare(`
        INSERT INTO ${table} (${owner}, name, digest, descriptor, accepted_digest, seen_at, rejected_at)
        VALUES (@owner, @name, @digest, @descriptor, @accepted, @now, NULL)
        ON CONFLICT (${owner}, name) DO UPDATE SET
          descriptor = excluded.descriptor,
          accepted_digest = excluded.accepted_digest,
          seen_at = CASE WHEN ${table}.digest = excluded.digest THEN ${table}.seen_at ELSE excluded.seen_at END,
          rejected_at = CASE WHEN ${table}.digest = excluded.digest THEN ${table}.rejected_at ELSE NULL END,
          digest = excluded.digest`),
      drop: db.prepare(`DELETE FROM ${table} WHERE ${owner} = ? AND name = ?`),
      dropOwner: db.prepare(`DELETE FROM ${table} WHERE ${owner} = ?`),
      reject: db.prepare(`UPDATE ${table} SET rejected_at = ? WHERE ${owner} = ? AND name = ?`),
    };
  }

  get(owner: string, name: string): PendingRow<T> | undefined {
    const row = this.#stmts.one.get(owner, name) as Row | undefined;
    return row && recordOf<T>(row);
  }

  /** Up to `limit` versions after the name `after`, by name; rejected ones only when asked for. */
  page(owner: string, after: string, limit: number, rejected: boolean): PendingRow<T>[] {
    return (this.#stmts.page.all({ owner, after, limit, rejected: rejected ? 1 : 0 }) as Row[]).map((row) => recordOf<T>(row));
  }

  /** Versions waiting for an operator (rejected ones left out). */
  count(owner: string): number {
    return this.#stmts.count.get(owner) as number;
  }

  names(owner: string): string[] {
    return this.#stmts.names.all(owner) as string[];
  }

  putRow(owner: string, version: PendingWrite<T>, now: string): void {
    this.#stmts.upsert.run({
      owner,
      name: version.name,
      digest: version.digest,
      descriptor: JSON.stringify(version.descriptor),
      accepted: version.acceptedDigest,
      now,
    });
  }

  drop(owner: string, name: string): void {
    this.#stmts.drop.run(owner, name);
  }

  dropOwner(owner: string): void {
    this.#stmts.dropOwner.run(owner);
  }

  reject(owner: string, name: string, now: string): void {
    this.#stmts.reject.run(now, owner, name);
  }
}

function recordOf<T>(row: Row): PendingRow<T> {
  return {
    name: row.name,
    digest: row.digest,
    descriptor: JSON.parse(row.descriptor) as T,
    acceptedDigest: row.accepted_digest,
    seenAt: row.seen_at,
    rejectedAt: row.rejected_at,
    rejected: row.rejected_at !== null,
  };
}
