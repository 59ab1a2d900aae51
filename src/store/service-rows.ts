/**
 * The tool_services table. A put or a tombstone writes its change-log row with it, in the
 * caller's transaction under the caller's registry index.
 */
import { RegistryError } from '../model/errors.js';
import type { PutResult, ServiceRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import type { ChangeRows } from './change-rows.js';
import type { SqliteDatabase } from './database.js';

interface ServiceRow {
  id: string;
  descriptor: string;
  status: 'active' | 'deleted';
  create_index: number;
  modify_index: number;
  updated_at: string;
  owner: string | null;
}

const serviceFromRow = (row: ServiceRow): ServiceRecord => ({
  id: row.id,
  descriptor: JSON.parse(row.descriptor) as ToolService,
  status: row.status,
  createdIndex: row.create_index,
  index: row.modify_index,
  updatedAt: row.updated_at,
  ...(row.owner !== null && { owner: row.owner }),
});

export class ServiceRows {
  readonly #stmts;
  readonly #changes: ChangeRows;

  constructor(db: SqliteDatabase, changes: ChangeRows) {
    this.#changes = changes;
    this.#stmts = {
      live: db.prepare("SELECT * FROM tool_services WHERE status != 'deleted' ORDER BY id"),
      get: db.prepare('SELECT * FROM tool_services WHERE id = ?'),
      before: db.prepare('SELECT status, create_index FROM tool_services WHERE id = ?'),
      upsert: db.prepare(`
        INSERT INTO tool_services (id, descriptor, status, create_index, modify_index, updated_at, owner)
        VALUES (@id, @descriptor, 'active', @index, @index, @now, @owner)
        ON CONFLICT (id) DO UPDATE SET
          descriptor = excluded.descriptor,
          owner = excluded.owner,
          status = 'active',
          create_index = CASE WHEN tool_services.status = 'deleted' THEN excluded.create_index ELSE tool_services.create_index END,
          modify_index = excluded.modify_index,
          updated_at = excluded.updated_at`),
      tombstone: db.prepare(
        "UPDATE tool_services SET status = 'deleted', modify_index = ?, updated_at = ? WHERE id = ? AND status != 'deleted' RETURNING *",
      ),
    };
  }

  live(): ServiceRecord[] {
    return (this.#stmts.live.all() as ServiceRow[]).map(serviceFromRow);
  }

  get(id: string): ServiceRecord | undefined {
    const row = this.#stmts.get.get(id) as ServiceRow | undefined;
    return row && serviceFromRow(row);
  }

  // Built from what was written, as ToolRows.put's record is.
  put(service: ToolService, index: number, now: string, owner: string | null): PutResult<ServiceRecord> {
    const before = this.#stmts.before.get(service.id) as Pick<ServiceRow, 'status' | 'create_index'> | undefined;
    const live = before !== undefined && before.status !== 'deleted';
    const descriptor = JSON.stringify(service);
    this.#stmts.upsert.run({ id: service.id, descriptor, index, now, owner });
    // Tool services are admin-only topology: '[]' marks them as present for the change log.
    this.#changes.record(index, 'tool-service', service.id, 'upsert', live ? '[]' : null, '[]');
    return {
      record: {
        id: service.id,
        descriptor: JSON.parse(descriptor) as ToolService,
        status: 'active',
        createdIndex: live ? before.create_index : index,
        index,
        updatedAt: now,
        ...(owner !== null && { owner }),
      },
      created: !live,
    };
  }

  /** The caller checks first that no live tool uses it (the tools are another table's). */
  tombstone(id: string, index: number, now: string): ServiceRecord {
    const row = this.#stmts.tombstone.get(index, now, id) as ServiceRow | undefined;
    if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool service "${id}"`);
    this.#changes.record(index, 'tool-service', id, 'delete', '[]', null);
    return serviceFromRow(row);
  }
}
