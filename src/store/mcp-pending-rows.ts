/**
 * Pending versions of upstream MCP servers' tools (issue 29, migrations/013_mcp_pending.sql),
 * for RegistryStore, which runs the writes inside the transactions of the syncs, accepts and
 * rejects that make them.
 */
import type { McpTool } from '../model/mcp-schemas.js';
import type { PendingVersion, StoredPending } from '../model/mcp-tools.js';
import type { PendingVersionRow } from '../model/mcp-review.js';
import type { SqliteDatabase } from './database.js';

interface PendingRow {
  name: string;
  digest: string;
  descriptor: string;
  accepted_digest: string | null;
  seen_at: string;
  rejected_at: string | null;
}

/** A pending version as the admin API lists it. */
export interface PendingRecord extends StoredPending, PendingVersionRow {
  name: string;
  acceptedDigest: string | null;
  seenAt: string;
  rejectedAt: string | null;
}

const recordOf = (row: PendingRow): PendingRecord => ({
  name: row.name,
  digest: row.digest,
  descriptor: JSON.parse(row.descriptor) as McpTool,
  acceptedDigest: row.accepted_digest,
  seenAt: row.seen_at,
  rejectedAt: row.rejected_at,
  rejected: row.rejected_at !== null,
});

const COLUMNS = 'name, digest, descriptor, accepted_digest, seen_at, rejected_at';

export class McpPendingRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      one: db.prepare(`SELECT ${COLUMNS} FROM mcp_pending WHERE server_id = ? AND name = ?`),
      page: db.prepare(`
        SELECT ${COLUMNS} FROM mcp_pending
        WHERE server_id = @server AND name > @after AND (@rejected OR rejected_at IS NULL)
        ORDER BY name LIMIT @limit`),
      count: db.prepare('SELECT count(*) FROM mcp_pending WHERE server_id = ? AND rejected_at IS NULL').pluck(),
      names: db.prepare('SELECT name FROM mcp_pending WHERE server_id = ?').pluck(),
      // A version listed again keeps when it was first seen and whether it was rejected; a new one starts afresh.
      upsert: db.prepare(`
        INSERT INTO mcp_pending (server_id, name, digest, descriptor, accepted_digest, seen_at, rejected_at)
        VALUES (@server, @name, @digest, @descriptor, @accepted, @now, NULL)
        ON CONFLICT (server_id, name) DO UPDATE SET
          descriptor = excluded.descriptor,
          accepted_digest = excluded.accepted_digest,
          seen_at = CASE WHEN mcp_pending.digest = excluded.digest THEN mcp_pending.seen_at ELSE excluded.seen_at END,
          rejected_at = CASE WHEN mcp_pending.digest = excluded.digest THEN mcp_pending.rejected_at ELSE NULL END,
          digest = excluded.digest`),
      drop: db.prepare('DELETE FROM mcp_pending WHERE server_id = ? AND name = ?'),
      dropServer: db.prepare('DELETE FROM mcp_pending WHERE server_id = ?'),
      reject: db.prepare('UPDATE mcp_pending SET rejected_at = ? WHERE server_id = ? AND name = ?'),
    };
  }

  get(serverId: string, name: string): PendingRecord | undefined {
    const row = this.#stmts.one.get(serverId, name) as PendingRow | undefined;
    return row && recordOf(row);
  }

  /** Up to `limit` versions after the name `after`, by name; rejected ones only when asked for. */
  page(serverId: string, after: string, limit: number, rejected: boolean): PendingRecord[] {
    return (this.#stmts.page.all({ server: serverId, after, limit, rejected: rejected ? 1 : 0 }) as PendingRow[]).map(recordOf);
  }

  /** Versions waiting for an operator (rejected ones left out). */
  count(serverId: string): number {
    return this.#stmts.count.get(serverId) as number;
  }

  names(serverId: string): string[] {
    return this.#stmts.names.all(serverId) as string[];
  }

  put(serverId: string, version: PendingVersion, now: string): void {
    this.#stmts.upsert.run({
      server: serverId,
      name: version.tool.name,
      digest: version.digest,
      descriptor: JSON.stringify(version.tool),
      accepted: version.acceptedDigest,
      now,
    });
  }

  drop(serverId: string, name: string): void {
    this.#stmts.drop.run(serverId, name);
  }

  dropServer(serverId: string): void {
    this.#stmts.dropServer.run(serverId);
  }

  reject(serverId: string, name: string, now: string): void {
    this.#stmts.reject.run(now, serverId, name);
  }
}
