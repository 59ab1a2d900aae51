/**
 * The tools table. A put or a tombstone writes its change-log row with it, in the caller's
 * transaction under the caller's registry index.
 */
import { RegistryError } from '../model/errors.js';
import type { PutResult, ToolRecord, ToolStatus } from '../model/records.js';
import type { ToolDescriptor, ToolKind } from '../model/schemas.js';
import type { ChangeRows } from './change-rows.js';
import type { ToolDeprecation } from '../model/deprecation.js';
import type { SqliteDatabase } from './database.js';

/** A tool ready to be stored. */
export interface ToolWrite {
  name: string;
  kind: ToolKind;
  serviceId: string | null;
  descriptor: ToolDescriptor;
  /** The announcer that owns it (src/announce/), or null/absent for an operator. */
  owner?: string | null;
}

/** A tool's row before a write: whether it is live, its life's start, its scopes (JSON). */
interface ToolBefore {
  status: ToolStatus;
  create_index: number;
  scopes: string | null;
  deprecation: string | null;
}

/**
 * A tools row, read as an array in this order (`.raw()`): a load reads 100,000 of them at a
 * time, and better-sqlite3's arrays cost a quarter less than its row objects.
 */
const TOOL_COLUMNS =
  'name, kind, service_id, mcp_server_id, descriptor, status, create_index, modify_index, updated_at, owner, deprecation';
type ToolRow = [string, ToolKind, string | null, string | null, string, ToolStatus, number, number, string, string | null, string | null];

function toolFromRow(row: ToolRow): ToolRecord {
  const record: ToolRecord = {
    name: row[0],
    kind: row[1],
    serviceId: row[2] ?? row[3],
    descriptor: JSON.parse(row[4]) as ToolDescriptor,
    status: row[5],
    createdIndex: row[6],
    index: row[7],
    updatedAt: row[8],
  };
  if (row[9] !== null) record.owner = row[9];
  // The column holds active or deleted; a live tool with a deprecation is `deprecated` (issue 34).
  if (row[10] !== null && row[5] !== 'deleted') {
    record.deprecation = JSON.parse(row[10]) as ToolDeprecation;
    record.status = 'deprecated';
  }
  return record;
}

const scopesOf = (descriptor: ToolDescriptor): string[] => [...((descriptor as { scopes?: string[] }).scopes ?? [])];

export class ToolRows {
  readonly #stmts;
  readonly #changes: ChangeRows;

  constructor(db: SqliteDatabase, changes: ChangeRows) {
    this.#changes = changes;
    this.#stmts = {
      live: db.prepare(`SELECT ${TOOL_COLUMNS} FROM tools WHERE status != 'deleted' ORDER BY name`).raw(true),
      get: db.prepare(`SELECT ${TOOL_COLUMNS} FROM tools WHERE name = ?`).raw(true),
      // What a put needs of the row it replaces, without reading and parsing its descriptor.
      before: db.prepare(
        "SELECT status, create_index, json_extract(descriptor, '$.scopes') AS scopes, deprecation FROM tools WHERE name = ?",
      ),
      upsert: db.prepare(`
        INSERT INTO tools (name, kind, service_id, mcp_server_id, descriptor, status, create_index, modify_index, updated_at, owner)
        VALUES (@name, @kind, @serviceId, @mcpServerId, @descriptor, 'active', @index, @index, @now, @owner)
        -- A re-registration keeps the deprecation (issue 34), unless the tool was deleted or its
        -- sunset has come (stored in UTC, so the strings compare as times): then it is a new tool.
        ON CONFLICT (name) DO UPDATE SET
          kind = excluded.kind,
          owner = excluded.owner,
          service_id = excluded.service_id,
          mcp_server_id = excluded.mcp_server_id,
          descriptor = excluded.descriptor,
          status = 'active',
          deprecation = @deprecation,
          create_index = CASE WHEN tools.status = 'deleted' THEN excluded.create_index ELSE tools.create_index END,
          modify_index = excluded.modify_index,
          updated_at = excluded.updated_at`),
      deprecate: db
        .prepare(
          `UPDATE tools SET deprecation = ?, modify_index = ?, updated_at = ? WHERE name = ? AND status != 'deleted' RETURNING ${TOOL_COLUMNS}`,
        )
        .raw(true),
      tombstone: db
        .prepare(
          `UPDATE tools SET status = 'deleted', deprecation = NULL, modify_index = ?, updated_at = ? WHERE name = ? AND status != 'deleted' RETURNING ${TOOL_COLUMNS}`,
        )
        .raw(true),
      ofService: db.prepare("SELECT name FROM tools WHERE service_id = ? AND status != 'deleted' ORDER BY name").pluck(),
      tombstones: db.prepare(`SELECT ${TOOL_COLUMNS} FROM tools WHERE status = 'deleted' ORDER BY name`).raw(true),
    };
  }

  live(): ToolRecord[] {
    return (this.#stmts.live.all() as ToolRow[]).map(toolFromRow);
  }

  /** Deleted tools. */
  tombstones(): ToolRecord[] {
    return (this.#stmts.tombstones.all() as ToolRow[]).map(toolFromRow);
  }

  get(name: string): ToolRecord | undefined {
    const row = this.#stmts.get.get(name) as ToolRow | undefined;
    return row && toolFromRow(row);
  }

  /** Names of the live tools of a tool service. */
  namesOfService(id: string): string[] {
    return this.#stmts.ofService.all(id) as string[];
  }

  // The record a put returns is built from what was written rather than read back (RETURNING
  // *): the descriptor is parsed from the very text stored, so the record equals what a restart
  // loads, without copying the row back out of SQLite.
  put(tool: ToolWrite, index: number, now: string): PutResult<ToolRecord> {
    const before = this.#stmts.before.get(tool.name) as ToolBefore | undefined;
    const live = before !== undefined && before.status !== 'deleted';
    const kept = live && before.deprecation !== null ? (JSON.parse(before.deprecation) as ToolDeprecation) : undefined;
    const deprecation = kept && !(kept.sunset !== undefined && kept.sunset <= now) ? kept : undefined;
    const descriptor = JSON.stringify(tool.descriptor);
    // An mcp tool's "service" is its MCP server, which has a column (and a foreign key) of its own.
    const [serviceId, mcpServerId] = tool.kind === 'mcp' ? [null, tool.serviceId] : [tool.serviceId, null];
    const owner = tool.owner ?? null;
    this.#stmts.upsert.run({
      name: tool.name,
      kind: tool.kind,
      serviceId,
      mcpServerId,
      descriptor,
      index,
      now,
      owner,
      deprecation: deprecation ? JSON.stringify(deprecation) : null,
    });
    this.#changes.record(
      index,
      'tool',
      tool.name,
      'upsert',
      live ? (before.scopes ?? '[]') : null,
      JSON.stringify(scopesOf(tool.descriptor)),
    );
    return {
      record: {
        name: tool.name,
        kind: tool.kind,
        serviceId: tool.serviceId,
        descriptor: JSON.parse(descriptor) as ToolDescriptor,
        status: deprecation ? 'deprecated' : 'active',
        createdIndex: live ? before.create_index : index,
        index,
        updatedAt: now,
        ...(owner !== null && { owner }),
        ...(deprecation && { deprecation }),
      },
      created: !live,
    };
  }

  /**
   * Sets (or, with null, lifts) a live tool's deprecation; the change log records it as an
   * upsert of the same scopes, so that change feeds and mirrors hear of it.
   */
  deprecate(name: string, deprecation: ToolDeprecation | null, index: number, now: string): ToolRecord {
    const row = this.#stmts.deprecate.get(deprecation && JSON.stringify(deprecation), index, now, name) as ToolRow | undefined;
    if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${name}"`);
    const record = toolFromRow(row);
    const scopes = JSON.stringify(scopesOf(record.descriptor));
    this.#changes.record(index, 'tool', name, 'upsert', scopes, scopes);
    return record;
  }

  tombstone(name: string, index: number, now: string): ToolRecord {
    const row = this.#stmts.tombstone.get(index, now, name) as ToolRow | undefined;
    if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${name}"`);
    const record = toolFromRow(row);
    this.#changes.record(index, 'tool', name, 'delete', JSON.stringify(scopesOf(record.descriptor)), null);
    return record;
  }
}
