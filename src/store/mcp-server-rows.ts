/**
 * The rows of upstream MCP servers (migrations/008_mcp_servers.sql), for RegistryStore, which
 * runs them inside its write transactions. The credential has its own column and its own read:
 * no record built here carries it.
 */
import { RegistryError } from '../model/errors.js';
import type { CredentialChange, McpServer } from '../model/mcp-schemas.js';
import type { McpServerRecord, PutResult } from '../model/records.js';
import type { SqliteDatabase } from './database.js';

interface McpServerRow {
  id: string;
  descriptor: string;
  has_credential: 0 | 1;
  status: 'active' | 'deleted';
  create_index: number;
  modify_index: number;
  updated_at: string;
}

/** Every column but the credential, and whether there is one. */
const COLUMNS = 'id, descriptor, credential IS NOT NULL AS has_credential, status, create_index, modify_index, updated_at';

const recordOf = (row: McpServerRow): McpServerRecord => ({
  id: row.id,
  descriptor: JSON.parse(row.descriptor) as McpServer,
  hasCredential: row.has_credential === 1,
  status: row.status,
  createdIndex: row.create_index,
  index: row.modify_index,
  updatedAt: row.updated_at,
});

export class McpServerRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      live: db.prepare(`SELECT ${COLUMNS} FROM mcp_servers WHERE status != 'deleted' ORDER BY id`),
      before: db.prepare('SELECT status, create_index, credential FROM mcp_servers WHERE id = ?'),
      credential: db.prepare("SELECT credential FROM mcp_servers WHERE id = ? AND status != 'deleted'").pluck(),
      upsert: db.prepare(`
        INSERT INTO mcp_servers (id, descriptor, credential, status, create_index, modify_index, updated_at)
        VALUES (@id, @descriptor, @credential, 'active', @index, @index, @now)
        ON CONFLICT (id) DO UPDATE SET
          descriptor = excluded.descriptor,
          credential = excluded.credential,
          status = 'active',
          create_index = CASE WHEN mcp_servers.status = 'deleted' THEN excluded.create_index ELSE mcp_servers.create_index END,
          modify_index = excluded.modify_index,
          updated_at = excluded.updated_at`),
      // A deleted server keeps no secret.
      tombstone: db.prepare(
        `UPDATE mcp_servers SET status = 'deleted', credential = NULL, modify_index = ?, updated_at = ? WHERE id = ? AND status != 'deleted' RETURNING ${COLUMNS}`,
      ),
      tools: db.prepare("SELECT name FROM tools WHERE mcp_server_id = ? AND status != 'deleted' ORDER BY name").pluck(),
    };
  }

  live(): McpServerRecord[] {
    return (this.#stmts.live.all() as McpServerRow[]).map(recordOf);
  }

  /** The bearer credential of a live server, for the connection to it only. */
  credential(id: string): string | undefined {
    return (this.#stmts.credential.get(id) as string | null | undefined) ?? undefined;
  }

  /** Names of the server's live tools. */
  toolNames(id: string): string[] {
    return this.#stmts.tools.all(id) as string[];
  }

  put(server: McpServer, credential: CredentialChange, index: number, now: string): PutResult<McpServerRecord> {
    const before = this.#stmts.before.get(server.id) as { status: string; create_index: number; credential: string | null } | undefined;
    const live = before !== undefined && before.status !== 'deleted';
    let stored: string | null = null;
    if (credential === 'keep') {
      stored = live ? before.credential : null;
      if (stored === null) {
        throw new RegistryError(
          'TR_ERR_VALIDATION',
          `invalid MCP server: credential: MCP server "${server.id}" has no stored credential to keep`,
          {
            fieldErrors: [{ path: 'credential', message: 'there is no stored credential to keep; give {"bearer": ...}' }],
          },
        );
      }
    } else if (credential !== 'none') {
      stored = credential.bearer;
    }
    const descriptor = JSON.stringify(server);
    this.#stmts.upsert.run({ id: server.id, descriptor, credential: stored, index, now });
    return {
      record: {
        id: server.id,
        descriptor: JSON.parse(descriptor) as McpServer,
        hasCredential: stored !== null,
        status: 'active',
        createdIndex: live ? before.create_index : index,
        index,
        updatedAt: now,
      },
      created: !live,
    };
  }

  tombstone(id: string, index: number, now: string): McpServerRecord {
    const row = this.#stmts.tombstone.get(index, now, id) as McpServerRow | undefined;
    if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no MCP server "${id}"`);
    return recordOf(row);
  }
}
