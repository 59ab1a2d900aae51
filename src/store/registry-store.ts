/**
 * The registry's repository over SQLite. Statements are prepared once; every write runs in one
 * IMMEDIATE transaction that bumps the registry index once and stamps what it touched.
 * Driver errors become domain errors here, so nothing above compares SQLite messages.
 */
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { RegistryError } from '../model/errors.js';
import type { ToolDescriptor, ToolKind, ToolService } from '../model/schemas.js';
import type { CredentialChange, McpServer } from '../model/mcp-schemas.js';
import type { AuditEntryInput, ChangeRecord, McpServerRecord, PutResult, ServiceRecord, ToolRecord, ToolStatus } from '../model/records.js';
import { McpServerRows } from './mcp-server-rows.js';
import { ImportPartRows, type ImportPartRow, type StagedImport } from './import-part-rows.js';
import type { AuditStore } from './audit-store.js';
import { BulkWriter, type RemoteBulkWrite } from './bulk-write.js';
import type { SqliteDatabase } from './database.js';
import { WalSync, type Fdatasync } from './wal-sync.js';
import { writeGateOf, type WriteGate } from './write-gate.js';

/**
 * Readiness wants room for writes, not only a write that succeeds: the probe rewrites one row in
 * place, which needs no new page, so it kept passing on a full disk while every real write
 * failed with SQLITE_FULL. Below this much room (on the disk, or under max_page_count) the
 * database is reported not ready; READY_MIN_FREE_BYTES sets it.
 */
const DEFAULT_MIN_ROOM_BYTES = 16 * 1024 * 1024;

/** Builds a write's audit entry from its result, inside the write's transaction. */
export type AuditFor<T> = (result: T) => AuditEntryInput;

/** A tool ready to be stored. */
export interface ToolWrite {
  name: string;
  kind: ToolKind;
  serviceId: string | null;
  descriptor: ToolDescriptor;
  /** The announcer that owns it (src/announce/), or null/absent for an operator. */
  owner?: string | null;
}

export interface RegistryStoreOptions {
  /** The fdatasync that makes deferred commits durable (tests pass a fake to watch or fail it). */
  fdatasync?: Fdatasync;
  /** Free room (on the disk, and under max_page_count) below which the database is not ready. */
  minRoomBytes?: number;
}

/** Where a replica is in the replication topic (src/replication/), saved with what it applied. */
export interface ReplicationPosition {
  topic: string;
  messageId: string;
  /** The message's registry index (src/replication/message-id.ts). */
  index: number;
  /** The last write time given out. */
  lastAt: string;
}

export interface GroupOptions {
  /**
   * Commit without waiting for the disk; the caller must await `sync()` before telling anyone
   * (see src/store/wal-sync.ts). Ignored where there is no WAL file to sync: those commits
   * stay synchronous=FULL.
   */
  deferSync?: boolean;
}

/** A tool's row before a write: whether it is live, its life's start, its scopes (JSON). */
interface ToolBefore {
  status: ToolStatus;
  create_index: number;
  scopes: string | null;
}

/** A bulk write (RegistryStore.beginBulk): a SlicedWrite whose steps may run on another thread. */
export interface BulkWrite {
  readonly index: number;
  putServices(services: readonly ToolService[], now: string): Promise<PutResult<ServiceRecord>[]>;
  putTools(tools: readonly ToolWrite[], now: string): Promise<PutResult<ToolRecord>[]>;
  /**
   * Commits (with the replica's new position, in replicated mode, and the deletion of the staged
   * parts of `partsOf`, an import sent in parts); `sync()` must be awaited before anyone hears of it.
   */
  commit(audit?: AuditEntryInput, position?: ReplicationPosition, partsOf?: string): Promise<void>;
  /** Undoes everything written so far; safe after a failed step, and twice. */
  rollback(): Promise<void>;
}

/** A write spanning many turns of the event loop (see RegistryStore.beginSliced). */
export interface SlicedWrite {
  /** The registry index every record of the write gets. */
  readonly index: number;
  putServices(services: readonly ToolService[], now: string): PutResult<ServiceRecord>[];
  putTools(tools: readonly ToolWrite[], now: string): PutResult<ToolRecord>[];
  /**
   * Commits (with the audit entry, the replica's position and the deletion of the staged parts of
   * `partsOf`, if any); with `deferSync`, `sync()` must be awaited before anyone hears of it.
   */
  commit(audit?: AuditEntryInput, position?: ReplicationPosition, partsOf?: string): void;
  /** Undoes everything written so far; safe to call after a failed commit, and twice. */
  rollback(): void;
}

interface ServiceRow {
  id: string;
  descriptor: string;
  status: 'active' | 'deleted';
  create_index: number;
  modify_index: number;
  updated_at: string;
  owner: string | null;
}

interface ChangeRow {
  seq: number;
  registry_index: number;
  kind: 'tool' | 'tool-service';
  name: string;
  op: 'upsert' | 'delete';
  scopes_before: string | null;
  scopes_after: string | null;
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

/** The registry cannot promise durability any more (see src/store/wal-sync.ts). */
function notDurable(cause: unknown): RegistryError {
  return new RegistryError(
    'TR_ERR_UNAVAILABLE',
    'the database could not make a write durable; restart the registry to recover from what is on disk',
    {
      cause,
    },
  );
}

const scopesOf = (descriptor: ToolDescriptor): string[] => [...((descriptor as { scopes?: string[] }).scopes ?? [])];

const serviceFromRow = (row: ServiceRow): ServiceRecord => ({
  id: row.id,
  descriptor: JSON.parse(row.descriptor) as ToolService,
  status: row.status,
  createIndex: row.create_index,
  index: row.modify_index,
  updatedAt: row.updated_at,
  ...(row.owner !== null && { owner: row.owner }),
});

/**
 * A tools row, read as an array in this order (`.raw()`): a load reads 100,000 of them at a
 * time, and better-sqlite3's arrays cost a quarter less than its row objects.
 */
const TOOL_COLUMNS = 'name, kind, service_id, mcp_server_id, descriptor, status, create_index, modify_index, updated_at, owner';
type ToolRow = [string, ToolKind, string | null, string | null, string, ToolStatus, number, number, string, string | null];

function toolFromRow(row: ToolRow): ToolRecord {
  const record: ToolRecord = {
    name: row[0],
    kind: row[1],
    serviceId: row[2] ?? row[3],
    descriptor: JSON.parse(row[4]) as ToolDescriptor,
    status: row[5],
    createIndex: row[6],
    index: row[7],
    updatedAt: row[8],
  };
  if (row[9] !== null) record.owner = row[9];
  return record;
}

export class RegistryStore {
  /** Held by a sliced write (an import): other writers on the connection wait for it. */
  readonly gate: WriteGate;
  readonly #db: SqliteDatabase;
  /**
   * Runs a function in a transaction (a savepoint inside another): made once, because
   * better-sqlite3 builds four wrappers and defines twenty properties for every transaction()
   * it is asked for, which was a few percent of every write.
   */
  readonly #inTransaction: Database.Transaction<(fn: () => unknown) => unknown>;
  readonly #minRoomBytes: number;
  readonly #stmts;
  readonly #audit: AuditStore | undefined;
  readonly #wal: WalSync | null;
  /** Imports' transactions, on a worker thread (null without a WAL file: they run here). */
  readonly #bulk: BulkWriter | null;
  /** SQLite's wal_autocheckpoint while imports' checkpoints are pending, and how many are. */
  #autoCheckpoint: number | null = null;
  #pendingCheckpoints = 0;
  readonly #mcpServers: McpServerRows;
  readonly #importParts: ImportPartRows;
  /** The index the next write takes instead of the next number (replicated mode), or null. */
  #pinnedIndex: number | null = null;
  /** The registry index of the last commit, and the last one known to be on disk. */
  #committedIndex: number;
  #durableIndex: number;

  constructor(db: SqliteDatabase, audit?: AuditStore, options: RegistryStoreOptions = {}) {
    this.#db = db;
    this.#inTransaction = db.transaction((fn: () => unknown) => fn());
    this.#minRoomBytes = options.minRoomBytes ?? DEFAULT_MIN_ROOM_BYTES;
    this.#audit = audit;
    this.#stmts = {
      index: db.prepare('SELECT registry_index AS value FROM registry_state WHERE id = 1').pluck(),
      bump: db.prepare('UPDATE registry_state SET registry_index = registry_index + 1 WHERE id = 1 RETURNING registry_index').pluck(),
      // Replicated mode: the index comes from the topic's position and must pass the last one.
      setIndex: db
        .prepare('UPDATE registry_state SET registry_index = ? WHERE id = 1 AND registry_index < ? RETURNING registry_index')
        .pluck(),
      replication: db.prepare(
        'SELECT topic, message_id AS messageId, message_index AS "index", last_at AS lastAt FROM replication_state WHERE id = 1',
      ),
      saveReplication: db.prepare(`
        INSERT INTO replication_state (id, topic, message_id, message_index, last_at) VALUES (1, @topic, @messageId, @index, @lastAt)
        ON CONFLICT (id) DO UPDATE SET topic = excluded.topic, message_id = excluded.message_id, message_index = excluded.message_index, last_at = excluded.last_at`),
      liveServices: db.prepare("SELECT * FROM tool_services WHERE status != 'deleted' ORDER BY id"),
      liveTools: db.prepare(`SELECT ${TOOL_COLUMNS} FROM tools WHERE status != 'deleted' ORDER BY name`).raw(true),
      getService: db.prepare('SELECT * FROM tool_services WHERE id = ?'),
      getTool: db.prepare(`SELECT ${TOOL_COLUMNS} FROM tools WHERE name = ?`).raw(true),
      // What a put needs of the row it replaces, without reading and parsing its descriptor.
      toolBefore: db.prepare("SELECT status, create_index, json_extract(descriptor, '$.scopes') AS scopes FROM tools WHERE name = ?"),
      serviceBefore: db.prepare('SELECT status, create_index FROM tool_services WHERE id = ?'),
      upsertService: db.prepare(`
        INSERT INTO tool_services (id, descriptor, status, create_index, modify_index, updated_at, owner)
        VALUES (@id, @descriptor, 'active', @index, @index, @now, @owner)
        ON CONFLICT (id) DO UPDATE SET
          descriptor = excluded.descriptor,
          owner = excluded.owner,
          status = 'active',
          create_index = CASE WHEN tool_services.status = 'deleted' THEN excluded.create_index ELSE tool_services.create_index END,
          modify_index = excluded.modify_index,
          updated_at = excluded.updated_at`),
      upsertTool: db.prepare(`
        INSERT INTO tools (name, kind, service_id, mcp_server_id, descriptor, status, create_index, modify_index, updated_at, owner)
        VALUES (@name, @kind, @serviceId, @mcpServerId, @descriptor, 'active', @index, @index, @now, @owner)
        ON CONFLICT (name) DO UPDATE SET
          kind = excluded.kind,
          owner = excluded.owner,
          service_id = excluded.service_id,
          mcp_server_id = excluded.mcp_server_id,
          descriptor = excluded.descriptor,
          status = 'active',
          create_index = CASE WHEN tools.status = 'deleted' THEN excluded.create_index ELSE tools.create_index END,
          modify_index = excluded.modify_index,
          updated_at = excluded.updated_at`),
      tombstoneService: db.prepare(
        "UPDATE tool_services SET status = 'deleted', modify_index = ?, updated_at = ? WHERE id = ? AND status != 'deleted' RETURNING *",
      ),
      tombstoneTool: db
        .prepare(
          `UPDATE tools SET status = 'deleted', modify_index = ?, updated_at = ? WHERE name = ? AND status != 'deleted' RETURNING ${TOOL_COLUMNS}`,
        )
        .raw(true),
      toolsOfService: db.prepare("SELECT name FROM tools WHERE service_id = ? AND status != 'deleted' ORDER BY name").pluck(),
      change: db.prepare('INSERT INTO changes (registry_index, kind, name, op, scopes_before, scopes_after) VALUES (?, ?, ?, ?, ?, ?)'),
      changesSince: db.prepare(CHANGE_LOG_READS.since),
      changesAfterRow: db.prepare(CHANGE_LOG_READS.afterRow),
      tombstones: db.prepare(`SELECT ${TOOL_COLUMNS} FROM tools WHERE status = 'deleted' ORDER BY name`).raw(true),
      room: db
        .prepare(
          'SELECT (m.max_page_count - c.page_count + f.freelist_count) * s.page_size FROM pragma_max_page_count() m, pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s',
        )
        .pluck(),
      probe: db.prepare(
        'INSERT INTO health_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at',
      ),
    };
    this.#mcpServers = new McpServerRows(db);
    this.#importParts = new ImportPartRows(db);
    this.gate = writeGateOf(db);
    this.#committedIndex = this.registryIndex();
    this.#durableIndex = this.#committedIndex;
    // After a first read: that opens (or creates) the WAL file.
    this.#wal = WalSync.open(db, options.fdatasync);
    this.#bulk = this.#wal && new BulkWriter(db.name);
  }

  /**
   * Readers of SQLite (the change log, the audit log) see writes up to this index: the last one
   * known to be on disk. This connection would also show them a write still in its transaction
   * (a sliced import spans turns of the event loop) or waiting for its fsync; both are left out.
   */
  get visibleThrough(): number {
    return this.#durableIndex;
  }

  /** The registry index: the number of writes ever committed (in replicated mode, the last write's topic position). */
  registryIndex(): number {
    return this.#stmts.index.get() as number;
  }

  /**
   * Replicated mode: the writes `fn` makes take `index` (the topic position of the message they
   * apply) instead of the next number; it must be past the current index.
   */
  withIndex<T>(index: number, fn: () => T): T {
    this.#pinnedIndex = index;
    try {
      return fn();
    } finally {
      this.#pinnedIndex = null;
    }
  }

  /** Where this replica is in the replication topic; undefined before its first message. */
  replicationPosition(): ReplicationPosition | undefined {
    return this.#stmts.replication.get() as ReplicationPosition | undefined;
  }

  /** Saves the replica's position, in the transaction of the writes it applied (or alone). */
  saveReplicationPosition(position: ReplicationPosition): void {
    this.#translate(() => this.#stmts.saveReplication.run(position));
  }

  /** An audit entry in the current transaction: a replicated message refused, with the position that moves past it. */
  recordAudit(entry: AuditEntryInput): void {
    this.#translate(() => this.#audit?.insert(entry));
  }

  /** Replicated mode: stages one part of an import sent in parts, in the transaction that saves the position. */
  stageImportPart(row: ImportPartRow): void {
    this.#translate(() => this.#importParts.stage(row));
  }

  /** What is staged of an import sent in parts, leaving out parts staged before `notBefore`. */
  stagedImport(write: string, notBefore: number): StagedImport {
    return this.#translate(() => this.#importParts.summary(write, notBefore));
  }

  /** Bytes staged for every unfinished import, from `notBefore` on. */
  stagedImportBytes(notBefore: number): number {
    return this.#translate(() => this.#importParts.totalBytes(notBefore));
  }

  /** The staged chunks of an import in part order, from `notBefore` on. */
  stagedImportChunks(write: string, notBefore: number): string[] {
    return this.#translate(() => this.#importParts.chunks(write, notBefore));
  }

  /** Deletes the staged parts of an import (refused, or applied by a bulk write's commit). */
  dropImportParts(write: string): void {
    this.#translate(() => this.#importParts.drop(write));
  }

  /** Deletes the parts staged before `notBefore` (their imports were never finished); returns how many. */
  dropImportPartsBefore(notBefore: number): number {
    return this.#translate(() => this.#importParts.dropBefore(notBefore));
  }

  /** The index a write takes: the pinned one in replicated mode, else the next number. */
  #nextIndex(): number {
    const pinned = this.#pinnedIndex;
    if (pinned === null) return this.#stmts.bump.get() as number;
    const index = this.#stmts.setIndex.get(pinned, pinned) as number | undefined;
    if (index === undefined) throw new Error(`replicated index ${pinned} is not past the registry's index ${this.registryIndex()}`);
    return index;
  }

  /** Everything not deleted, for building the in-memory catalogue at startup. */
  loadLive(): { index: number; services: ServiceRecord[]; mcpServers: McpServerRecord[]; tools: ToolRecord[] } {
    return this.#db.transaction(() => ({
      index: this.registryIndex(),
      services: (this.#stmts.liveServices.all() as ServiceRow[]).map(serviceFromRow),
      mcpServers: this.#mcpServers.live(),
      tools: (this.#stmts.liveTools.all() as ToolRow[]).map(toolFromRow),
    }))();
  }

  /** Deleted tools, kept so paged walks and filters can show what went away. */
  loadTombstones(): ToolRecord[] {
    return (this.#stmts.tombstones.all() as ToolRow[]).map(toolFromRow);
  }

  /**
   * Everything the in-memory catalogue is built from, read in one transaction: live records,
   * tombstones, and the change history of every tool name that was ever deleted (so that
   * walks pinned before a restart still know which lives such names had).
   */
  loadSnapshot(): {
    index: number;
    services: ServiceRecord[];
    mcpServers: McpServerRecord[];
    tools: ToolRecord[];
    tombstones: ToolRecord[];
    toolHistory: { name: string; index: number; op: 'upsert' | 'delete' }[];
  } {
    return this.#db.transaction(() => ({
      ...this.loadLive(),
      tombstones: this.loadTombstones(),
      toolHistory: this.#db
        .prepare(
          `SELECT name, registry_index AS "index", op FROM changes
           WHERE kind = 'tool' AND name IN (SELECT name FROM changes WHERE kind = 'tool' AND op = 'delete')
           ORDER BY seq`,
        )
        .all() as { name: string; index: number; op: 'upsert' | 'delete' }[],
    }))();
  }

  /** Change-log rows after `index`, oldest first. */
  changesSince(index: number, limit: number): ChangeRecord[] {
    return (this.#stmts.changesSince.all(index, this.visibleThrough, limit) as ChangeRow[]).map(changeFromRow);
  }

  /** Change-log rows after the row `seq`, oldest first (rows of a write are consecutive). */
  changesAfterRow(seq: number, limit: number): ChangeRecord[] {
    return (this.#stmts.changesAfterRow.all(seq, this.visibleThrough, limit) as ChangeRow[]).map(changeFromRow);
  }

  getService(id: string): ServiceRecord | undefined {
    const row = this.#stmts.getService.get(id) as ServiceRow | undefined;
    return row && serviceFromRow(row);
  }

  getTool(name: string): ToolRecord | undefined {
    const row = this.#stmts.getTool.get(name) as ToolRow | undefined;
    return row && toolFromRow(row);
  }

  putService(
    service: ToolService,
    now: string,
    audit?: AuditFor<PutResult<ServiceRecord>>,
    owner: string | null = null,
  ): PutResult<ServiceRecord> {
    return this.#write((index) => this.#putService(service, index, now, owner), audit);
  }

  putTool(tool: ToolWrite, now: string, audit?: AuditFor<PutResult<ToolRecord>>): PutResult<ToolRecord> {
    return this.#write((index) => this.#putTool(tool, index, now), audit);
  }

  /** Tombstones a service; refuses while any live tool still uses it. */
  deleteService(id: string, now: string, audit?: AuditFor<ServiceRecord>): ServiceRecord {
    return this.#write((index) => {
      const users = this.#stmts.toolsOfService.all(id) as string[];
      if (users.length > 0) {
        throw new RegistryError('TR_ERR_IN_USE', `tool service "${id}" is still used by: ${users.join(', ')}`, {
          extra: { tools: users },
        });
      }
      const row = this.#stmts.tombstoneService.get(index, now, id) as ServiceRow | undefined;
      if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool service "${id}"`);
      this.#stmts.change.run(index, 'tool-service', id, 'delete', '[]', null);
      return serviceFromRow(row);
    }, audit);
  }

  deleteTool(name: string, now: string, audit?: AuditFor<ToolRecord>): ToolRecord {
    return this.#write((index) => this.#tombstoneTool(name, index, now), audit);
  }

  /** The bearer credential of a live MCP server: read only to connect to it. */
  mcpServerCredential(id: string): string | undefined {
    return this.#mcpServers.credential(id);
  }

  putMcpServer(
    server: McpServer,
    credential: CredentialChange,
    now: string,
    audit?: AuditFor<PutResult<McpServerRecord>>,
  ): PutResult<McpServerRecord> {
    return this.#write((index) => this.#mcpServers.put(server, credential, index, now), audit);
  }

  /** Tombstones an MCP server and every live tool of it, in one write. */
  deleteMcpServer(
    id: string,
    now: string,
    audit?: AuditFor<{ server: McpServerRecord; tools: ToolRecord[] }>,
  ): { server: McpServerRecord; tools: ToolRecord[] } {
    return this.#write((index) => {
      const tools = this.#mcpServers.toolNames(id).map((name) => this.#tombstoneTool(name, index, now));
      return { server: this.#mcpServers.tombstone(id, index, now), tools };
    }, audit);
  }

  /** A sync of an MCP server's tools: its new and changed tools and the ones it no longer lists, in one write. */
  writeMcpTools(upserts: readonly ToolWrite[], deletes: readonly string[], now: string, audit?: AuditFor<ToolRecord[]>): ToolRecord[] {
    return this.#write(
      (index) => [
        ...upserts.map((t) => this.#putTool(t, index, now).record),
        ...deletes.map((name) => this.#tombstoneTool(name, index, now)),
      ],
      audit,
    );
  }

  /**
   * Runs several writes in one transaction, each in a savepoint of its own (the store's write
   * transactions nest), so that they share one commit and one fsync: group commit. With
   * `deferSync` the commit does not wait for the disk, and `sync()` must be awaited before
   * anyone hears of the writes.
   */
  group<T>(fn: () => T, options: GroupOptions = {}): T {
    this.#refuseAfterSyncFailure();
    const topLevel = !this.#db.inTransaction;
    const deferred = options.deferSync === true && topLevel && this.#wal !== null;
    // Prepared statements would not do: SQLite applies PRAGMA synchronous when it compiles it.
    if (deferred) this.#db.exec('PRAGMA synchronous = NORMAL');
    try {
      const result = this.#translate(() => this.#inTransaction.immediate(fn) as T);
      if (topLevel) this.#committed(deferred);
      return result;
    } finally {
      if (deferred) this.#db.exec('PRAGMA synchronous = FULL');
    }
  }

  /**
   * Resolves once every commit made so far is on disk: at once after synchronous=FULL commits,
   * after an fdatasync of the WAL (off the main thread) after deferred ones. Rejects with
   * TR_ERR_UNAVAILABLE if that fdatasync fails; the store then refuses every later write.
   */
  sync(): Promise<void> {
    const through = this.#committedIndex;
    if (this.#wal === null || through <= this.#durableIndex) return Promise.resolve();
    return this.#wal.sync().then(
      () => {
        if (through > this.#durableIndex) this.#durableIndex = through;
      },
      (err: unknown) => {
        throw notDurable(err);
      },
    );
  }

  /**
   * Proves the database takes a write and has room for more (for /readyz): at least
   * `minRoomBytes` free on its disk and under its max_page_count.
   */
  probeWrite(now: string): void {
    this.#refuseAfterSyncFailure();
    const room = this.#roomBytes();
    if (room < this.#minRoomBytes) {
      throw new RegistryError(
        'TR_ERR_UNAVAILABLE',
        `the database has ${room} bytes of room left, under the ${this.#minRoomBytes} readiness needs (READY_MIN_FREE_BYTES)`,
      );
    }
    // While an import holds the connection its transaction is the proof; the probe would join it.
    if (this.gate.held) return;
    this.#translate(() => this.#stmts.probe.run(now));
  }

  /**
   * Starts a write that spans many turns of the event loop (an import written in slices, so
   * that reads keep answering): one IMMEDIATE transaction under one registry index, all or
   * nothing. It holds the connection's write gate until it commits or rolls back, so that the
   * batched writers (usage records, refused-write audit entries), pruning and the readiness
   * probe wait instead of slipping into it; the caller holds every other registry write back.
   */
  beginSliced(options: GroupOptions & { index?: number | undefined } = {}): SlicedWrite {
    this.#refuseAfterSyncFailure();
    if (this.#db.inTransaction) throw new Error('a sliced write cannot run inside another transaction');
    const release = this.gate.hold();
    const deferred = options.deferSync === true && this.#wal !== null;
    let open = false;
    const end = () => {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      if (deferred) this.#db.exec('PRAGMA synchronous = FULL');
      release();
    };
    let index: number;
    try {
      if (deferred) this.#db.exec('PRAGMA synchronous = NORMAL');
      this.#translate(() => this.#db.exec('BEGIN IMMEDIATE'));
      open = true;
      index = this.#translate(() =>
        options.index === undefined ? this.#nextIndex() : this.withIndex(options.index, () => this.#nextIndex()),
      );
    } catch (err) {
      end();
      throw err;
    }
    const live = () => {
      if (!open) throw new Error('the sliced write has ended');
    };
    return {
      index,
      putServices: (services, now) => {
        live();
        return this.#translate(() => services.map((s) => this.#putService(s, index, now)));
      },
      putTools: (tools, now) => {
        live();
        return this.#translate(() => tools.map((t) => this.#putTool(t, index, now)));
      },
      commit: (audit, position, partsOf) => {
        live();
        open = false;
        try {
          this.#translate(() => {
            if (audit && this.#audit) this.#audit.insert(audit, index);
            if (position) this.#stmts.saveReplication.run(position);
            if (partsOf !== undefined) this.#importParts.drop(partsOf);
            this.#db.exec('COMMIT');
          });
        } catch (err) {
          end();
          throw err;
        }
        end();
        this.#committed(deferred);
      },
      rollback: () => {
        if (!open) return;
        open = false;
        end();
      },
    };
  }

  /** Bytes the database can still grow by: pages under max_page_count, and the disk's free space. */
  #roomBytes(): number {
    const pages = this.#translate(() => this.#stmts.room.get() as number);
    if (this.#db.memory) return pages;
    const disk = statfsSync(dirname(this.#db.name));
    return Math.min(pages, disk.bavail * disk.bsize);
  }

  close(): void {
    this.#bulk?.close();
    if (this.#db.open) this.#db.close();
    this.#wal?.close();
  }

  /**
   * Starts a bulk write (an import) as beginSliced does, all or nothing under one registry
   * index, with its SQL on a worker thread for a database file (src/store/bulk-write.ts), so
   * that neither its statements nor its COMMIT hold the event loop; here otherwise. It holds the
   * write gate until it commits or rolls back; `sync()` must be awaited after its commit before
   * anyone hears of it.
   */
  async beginBulk(index?: number): Promise<BulkWrite> {
    const bulk = this.#bulk;
    if (!bulk) {
      const write = this.beginSliced({ deferSync: true, index });
      return {
        index: write.index,
        putServices: async (services, now) => write.putServices(services, now),
        putTools: async (tools, now) => write.putTools(tools, now),
        commit: async (audit, position, partsOf) => write.commit(audit, position, partsOf),
        rollback: async () => write.rollback(),
      };
    }
    this.#refuseAfterSyncFailure();
    const release = this.gate.hold();
    let remote: RemoteBulkWrite;
    try {
      remote = await bulk.begin(this.#db.pragma('max_page_count', { simple: true }) as number, index);
    } catch (err) {
      release();
      throw err;
    }
    let open = true;
    const live = () => {
      if (!open) throw new Error('the bulk write has ended');
    };
    return {
      index: remote.index,
      putServices: (services, now) => (live(), remote.putServices(services, now)),
      putTools: (tools, now) => (live(), remote.putTools(tools, now)),
      commit: async (audit, position, partsOf) => {
        live();
        open = false;
        // SQLite would checkpoint the import's pages inside this connection's next COMMIT
        // (the WAL is past wal_autocheckpoint): not until the worker has.
        this.#suspendAutoCheckpoint();
        let checkpointed: Promise<void>;
        try {
          ({ checkpointed } = await remote.commit(audit, position, partsOf));
        } catch (err) {
          this.#resumeAutoCheckpoint();
          throw err;
        } finally {
          release();
        }
        this.#committed(true);
        void checkpointed.then(() => this.#resumeAutoCheckpoint());
      },
      rollback: async () => {
        if (!open) return;
        open = false;
        try {
          await remote.rollback();
        } finally {
          release();
        }
      },
    };
  }

  #suspendAutoCheckpoint(): void {
    if (this.#autoCheckpoint === null) {
      this.#autoCheckpoint = this.#db.pragma('wal_autocheckpoint', { simple: true }) as number;
      this.#db.pragma('wal_autocheckpoint = 0');
    }
    this.#pendingCheckpoints++;
  }

  #resumeAutoCheckpoint(): void {
    if (--this.#pendingCheckpoints > 0 || this.#autoCheckpoint === null) return;
    if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${this.#autoCheckpoint}`);
    this.#autoCheckpoint = null;
  }

  #committed(deferred: boolean): void {
    this.#committedIndex = this.registryIndex();
    if (!deferred) this.#durableIndex = this.#committedIndex;
  }

  #refuseAfterSyncFailure(): void {
    const failure = this.#wal?.failure;
    if (failure) throw notDurable(failure);
  }

  // The records a put returns are built from what was written rather than read back (RETURNING
  // *): the descriptor is parsed from the very text stored, so the record equals what a restart
  // loads, without copying the row back out of SQLite.

  #putService(service: ToolService, index: number, now: string, owner: string | null = null): PutResult<ServiceRecord> {
    const before = this.#stmts.serviceBefore.get(service.id) as Pick<ServiceRow, 'status' | 'create_index'> | undefined;
    const live = before !== undefined && before.status !== 'deleted';
    const descriptor = JSON.stringify(service);
    this.#stmts.upsertService.run({ id: service.id, descriptor, index, now, owner });
    // Tool services are admin-only topology: '[]' marks them as present for the change log.
    this.#stmts.change.run(index, 'tool-service', service.id, 'upsert', live ? '[]' : null, '[]');
    return {
      record: {
        id: service.id,
        descriptor: JSON.parse(descriptor) as ToolService,
        status: 'active',
        createIndex: live ? before.create_index : index,
        index,
        updatedAt: now,
        ...(owner !== null && { owner }),
      },
      created: !live,
    };
  }

  #tombstoneTool(name: string, index: number, now: string): ToolRecord {
    const row = this.#stmts.tombstoneTool.get(index, now, name) as ToolRow | undefined;
    if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${name}"`);
    const record = toolFromRow(row);
    this.#stmts.change.run(index, 'tool', name, 'delete', JSON.stringify(scopesOf(record.descriptor)), null);
    return record;
  }

  #putTool(tool: ToolWrite, index: number, now: string): PutResult<ToolRecord> {
    const before = this.#stmts.toolBefore.get(tool.name) as ToolBefore | undefined;
    const live = before !== undefined && before.status !== 'deleted';
    const descriptor = JSON.stringify(tool.descriptor);
    // An mcp tool's "service" is its MCP server, which has a column (and a foreign key) of its own.
    const [serviceId, mcpServerId] = tool.kind === 'mcp' ? [null, tool.serviceId] : [tool.serviceId, null];
    const owner = tool.owner ?? null;
    this.#stmts.upsertTool.run({ name: tool.name, kind: tool.kind, serviceId, mcpServerId, descriptor, index, now, owner });
    this.#stmts.change.run(
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
        status: 'active',
        createIndex: live ? before.create_index : index,
        index,
        updatedAt: now,
        ...(owner !== null && { owner }),
      },
      created: !live,
    };
  }

  /**
   * Runs `fn` in one IMMEDIATE transaction after bumping the registry index; the audit entry
   * commits with the write, so an acknowledged write is never missing from the log.
   */
  #write<T>(fn: (index: number) => T, audit?: AuditFor<T>): T {
    const topLevel = !this.#db.inTransaction;
    if (topLevel) this.#refuseAfterSyncFailure();
    const result = this.#translate(
      () =>
        this.#inTransaction.immediate(() => {
          const index = this.#nextIndex();
          const result = fn(index);
          if (audit && this.#audit) this.#audit.insert(audit(result), index);
          return result;
        }) as T,
    );
    // On its own (not in a group) the write committed under synchronous=FULL: it is on disk.
    if (topLevel) this.#committed(false);
    return result;
  }

  #translate<T>(fn: () => T): T {
    try {
      return fn();
    } catch (err) {
      if (err instanceof Database.SqliteError) {
        if (err.code === 'SQLITE_BUSY' || err.code === 'SQLITE_LOCKED') {
          throw new RegistryError('TR_ERR_UNAVAILABLE', 'the database is busy; retry shortly', { cause: err, retryAfterS: 1 });
        }
        if (err.code === 'SQLITE_FULL' || err.code.startsWith('SQLITE_IOERR') || err.code === 'SQLITE_READONLY') {
          throw new RegistryError('TR_ERR_UNAVAILABLE', 'the database cannot take writes right now', { cause: err });
        }
        if (err.code.startsWith('SQLITE_CONSTRAINT')) {
          throw new RegistryError('TR_ERR_CONFLICT', 'the write conflicts with the stored registry', { cause: err });
        }
      }
      throw err;
    }
  }
}
