/**
 * Pending versions of upstream MCP servers' tools (issue 29, migrations/013_mcp_pending.sql):
 * the review queue of src/store/pending-rows.ts, written from a sync's PendingVersion.
 */
import type { McpTool } from '../model/mcp-schemas.js';
import type { PendingVersion } from '../model/mcp-tools.js';
import type { SqliteDatabase } from './database.js';
import { PendingRows, type PendingRow } from './pending-rows.js';

/** A pending version of an upstream tool as the admin API lists it. */
export type PendingRecord = PendingRow<McpTool>;

export class McpPendingRows extends PendingRows<McpTool> {
  constructor(db: SqliteDatabase) {
    super(db, { table: 'mcp_pending', owner: 'server_id' });
  }

  put(serverId: string, version: PendingVersion, now: string): void {
    this.putRow(
      serverId,
      { name: version.tool.name, digest: version.digest, descriptor: version.tool, acceptedDigest: version.acceptedDigest },
      now,
    );
  }

  dropServer(serverId: string): void {
    this.dropOwner(serverId);
  }
}
