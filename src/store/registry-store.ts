/**
 * The registry's store over SQLite: the one object the services write and read through. It
 * composes a repository per table (statements prepared once, in each) over one Transactions,
 * which owns the connection's transactions, the deferred fsync and the checkpoints; a write
 * here is a transaction of Transactions around the repositories' rows.
 */
import { RegistryError } from '../model/errors.js';
import type { CredentialChange, McpServer } from '../model/mcp-schemas.js';
import type { PendingVersion } from '../model/mcp-tools.js';
import type { AuditEntryInput, ChangeRecord, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import type { ToolDeprecation } from '../model/deprecation.js';
import { openApiSourceOwner, type OpenApiSourceRecord } from '../model/openapi-source.js';
import type { AuditStore } from './audit-store.js';
import { CredentialBox } from './credential-box.js';
import { ChangeRows, type ToolHistoryEntry } from './change-rows.js';
import type { SqliteDatabase } from './database.js';
import { ImportPartRows, type ImportPartRow, type StagedImport } from './import-part-rows.js';
import { McpPendingRows, type PendingRecord } from './mcp-pending-rows.js';
import { PendingRows, type PendingRow, type PendingWrite } from './pending-rows.js';
import { ToolCredentialRows, type SealedToolCredential, type ToolCredentialRecord } from './tool-credential-rows.js';
import type { OpenApiPendingTool } from '../model/openapi-review.js';
import { McpServerRows } from './mcp-server-rows.js';
import { OpenApiSourceRows, type OpenApiSourceWrite } from './openapi-source-rows.js';
import { ReadinessProbe } from './readiness-probe.js';
import { RegistryIndexRows } from './registry-index-rows.js';
import { ReplicationPositionRows, type ReplicationPosition } from './replication-position-rows.js';
import { AnnouncerSequenceRows } from './announcer-sequence-rows.js';
import { ServiceRows } from './service-rows.js';
import { ToolRows, type ToolWrite } from './tool-rows.js';
import { Transactions, translate, type AuditFor, type BulkWrite, type GroupOptions, type SlicedWrite } from './transactions.js';
import type { Fdatasync } from './wal-sync.js';
import type { WriteGate } from './write-gate.js';

// The names callers have always imported from here.
export type { AuditFor, BulkWrite, GroupOptions, OpenApiSourceWrite, PendingRecord, ReplicationPosition, SlicedWrite, ToolWrite };

/** A source's document as a re-read found it (issue 30). */
export interface OpenApiReread {
  document: string;
  title: string;
  version: string;
  skipped: OpenApiSourceRecord['skipped'];
}

/** What a re-read of a source's document writes. */
export interface OpenApiRefreshChange {
  writes: readonly ToolWrite[];
  deletes: readonly string[];
  deprecations: readonly { name: string; deprecation: ToolDeprecation | null }[];
  pendingPut: readonly PendingWrite<OpenApiPendingTool>[];
  pendingDrop: readonly string[];
}

/** What a sync does to a server's pending versions (issue 29): rows written, and names whose row goes. */
export interface PendingChanges {
  serverId: string;
  put: readonly PendingVersion[];
  drop: readonly string[];
}

export interface RegistryStoreOptions {
  /** The fdatasync that makes deferred commits durable (tests pass a fake to watch or fail it). */
  fdatasync?: Fdatasync;
  /** Free room (on the disk, and under max_page_count) below which the database is not ready. */
  minRoomBytes?: number;
  /** Seals outbound credentials at rest (issue 30); default: a key of its own, for this process only. */
  credentials?: CredentialBox;
}

export class RegistryStore {
  /** Held by a sliced write (an import): other writers on the connection wait for it. */
  readonly gate: WriteGate;
  /** Each announcer's last sequence number (src/announce/): per replica, never replicated. */
  readonly announcerSequences: AnnouncerSequenceRows;
  /** Seals and opens outbound credentials (src/store/credential-box.ts). */
  readonly credentials: CredentialBox;
  readonly #audit: AuditStore | undefined;
  readonly #index: RegistryIndexRows;
  readonly #changes: ChangeRows;
  readonly #tools: ToolRows;
  readonly #services: ServiceRows;
  readonly #mcpServers: McpServerRows;
  readonly #mcpPending: McpPendingRows;
  readonly #openApiSources: OpenApiSourceRows;
  readonly #openApiPending: PendingRows<OpenApiPendingTool>;
  readonly #toolCredentials: ToolCredentialRows;
  readonly #importParts: ImportPartRows;
  readonly #replication: ReplicationPositionRows;
  readonly #transactions: Transactions;
  readonly #readiness: ReadinessProbe;

  constructor(db: SqliteDatabase, audit?: AuditStore, options: RegistryStoreOptions = {}) {
    this.#audit = audit;
    this.credentials = options.credentials ?? CredentialBox.ephemeral();
    this.#index = new RegistryIndexRows(db);
    this.#changes = new ChangeRows(db);
    this.#tools = new ToolRows(db, this.#changes);
    this.#services = new ServiceRows(db, this.#changes);
    this.#mcpServers = new McpServerRows(db);
    this.#mcpPending = new McpPendingRows(db);
    this.#openApiSources = new OpenApiSourceRows(db);
    this.#openApiPending = new PendingRows<OpenApiPendingTool>(db, { table: 'openapi_pending', owner: 'source_id' });
    this.#toolCredentials = new ToolCredentialRows(db);
    this.#importParts = new ImportPartRows(db);
    this.#replication = new ReplicationPositionRows(db);
    this.announcerSequences = new AnnouncerSequenceRows(db);
    const tools = this.#tools;
    const services = this.#services;
    this.#transactions = new Transactions(db, {
      index: this.#index,
      audit,
      fdatasync: options.fdatasync,
      steps: {
        putServices: (list, index, now) => list.map((s) => services.put(s, index, now, null)),
        putTools: (list, index, now) => list.map((t) => tools.put(t, index, now)),
        beforeCommit: (position, partsOf) => {
          if (position) this.#replication.save(position);
          if (partsOf !== undefined) this.#importParts.drop(partsOf);
        },
      },
    });
    this.gate = this.#transactions.gate;
    this.#readiness = new ReadinessProbe(db, this.#transactions, options.minRoomBytes);
  }

  /**
   * Readers of SQLite (the change log, the audit log) see writes up to this index: the last one
   * known to be on disk. This connection would also show them a write still in its transaction
   * (a sliced import spans turns of the event loop) or waiting for its fsync; both are left out.
   */
  get visibleThrough(): number {
    return this.#transactions.visibleThrough;
  }

  /** The registry index: the number of writes ever committed (in replicated mode, the last write's topic position). */
  registryIndex(): number {
    return this.#index.current();
  }

  /**
   * Replicated mode: the writes `fn` makes take `index` (the topic position of the message they
   * apply) instead of the next number; it must be past the current index.
   */
  withIndex<T>(index: number, fn: () => T): T {
    return this.#index.withIndex(index, fn);
  }

  /** Where this replica is in the replication topic; undefined before its first message. */
  replicationPosition(): ReplicationPosition | undefined {
    return this.#replication.get();
  }

  /** Saves the replica's position, in the transaction of the writes it applied (or alone). */
  saveReplicationPosition(position: ReplicationPosition): void {
    translate(() => this.#replication.save(position));
  }

  /** An audit entry in the current transaction: a replicated message refused, with the position that moves past it. */
  recordAudit(entry: AuditEntryInput): void {
    translate(() => this.#audit?.insert(entry));
  }

  /** Replicated mode: stages one part of an import sent in parts, in the transaction that saves the position. */
  stageImportPart(row: ImportPartRow): void {
    translate(() => this.#importParts.stage(row));
  }

  /** What is staged of an import sent in parts, leaving out parts staged before `notBefore`. */
  stagedImport(write: string, notBefore: number): StagedImport {
    return translate(() => this.#importParts.summary(write, notBefore));
  }

  /** Bytes staged for every unfinished import, from `notBefore` on. */
  stagedImportBytes(notBefore: number): number {
    return translate(() => this.#importParts.totalBytes(notBefore));
  }

  /** The staged chunks of an import in part order, from `notBefore` on. */
  stagedImportChunks(write: string, notBefore: number): string[] {
    return translate(() => this.#importParts.chunks(write, notBefore));
  }

  /** Deletes the staged parts of an import (refused, or applied by a bulk write's commit). */
  dropImportParts(write: string): void {
    translate(() => this.#importParts.drop(write));
  }

  /** Deletes the parts staged before `notBefore` (their imports were never finished); returns how many. */
  dropImportPartsBefore(notBefore: number): number {
    return translate(() => this.#importParts.dropBefore(notBefore));
  }

  /** Everything not deleted, for building the in-memory catalogue at startup. */
  loadLive(): { index: number; services: ServiceRecord[]; mcpServers: McpServerRecord[]; tools: ToolRecord[] } {
    return this.#transactions.read(() => ({
      index: this.registryIndex(),
      services: this.#services.live(),
      mcpServers: this.#mcpServers.live(),
      tools: this.#tools.live(),
    }));
  }

  /** Deleted tools, kept so paged walks and filters can show what went away. */
  loadTombstones(): ToolRecord[] {
    return this.#tools.tombstones();
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
    toolHistory: ToolHistoryEntry[];
  } {
    return this.#transactions.read(() => ({
      ...this.loadLive(),
      tombstones: this.loadTombstones(),
      toolHistory: this.#changes.toolHistory(),
    }));
  }

  /** Change-log rows after `index`, oldest first. */
  changesSince(index: number, limit: number): ChangeRecord[] {
    return this.#changes.since(index, this.visibleThrough, limit);
  }

  /** Change-log rows after the row `seq`, oldest first (rows of a write are consecutive). */
  changesAfterRow(seq: number, limit: number): ChangeRecord[] {
    return this.#changes.afterRow(seq, this.visibleThrough, limit);
  }

  getService(id: string): ServiceRecord | undefined {
    return this.#services.get(id);
  }

  getTool(name: string): ToolRecord | undefined {
    return this.#tools.get(name);
  }

  putService(
    service: ToolService,
    now: string,
    audit?: AuditFor<PutResult<ServiceRecord>>,
    owner: string | null = null,
  ): PutResult<ServiceRecord> {
    return this.#transactions.write((index) => this.#services.put(service, index, now, owner), audit);
  }

  putTool(tool: ToolWrite, now: string, audit?: AuditFor<PutResult<ToolRecord>>): PutResult<ToolRecord> {
    return this.#transactions.write((index) => this.#tools.put(tool, index, now), audit);
  }

  /** Issue 34: sets or (null) lifts a live tool's deprecation. */
  deprecateTool(name: string, deprecation: ToolDeprecation | null, now: string, audit?: AuditFor<ToolRecord>): ToolRecord {
    return this.#transactions.write((index) => this.#tools.deprecate(name, deprecation, index, now), audit);
  }

  /** Tombstones a service; refuses while any live tool still uses it. */
  deleteService(id: string, now: string, audit?: AuditFor<ServiceRecord>): ServiceRecord {
    return this.#transactions.write((index) => {
      const users = this.#tools.namesOfService(id);
      if (users.length > 0) {
        throw new RegistryError('TR_ERR_IN_USE', `tool service "${id}" is still used by: ${users.join(', ')}`, {
          extra: { tools: users },
        });
      }
      return this.#services.tombstone(id, index, now);
    }, audit);
  }

  deleteTool(name: string, now: string, audit?: AuditFor<ToolRecord>): ToolRecord {
    return this.#transactions.write((index) => this.#tools.tombstone(name, index, now), audit);
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
    return this.#transactions.write((index) => this.#mcpServers.put(server, credential, index, now), audit);
  }

  /** Tombstones an MCP server and every live tool of it, in one write. */
  deleteMcpServer(
    id: string,
    now: string,
    audit?: AuditFor<{ server: McpServerRecord; tools: ToolRecord[] }>,
  ): { server: McpServerRecord; tools: ToolRecord[] } {
    return this.#transactions.write((index) => {
      const tools = this.#mcpServers.toolNames(id).map((name) => this.#tools.tombstone(name, index, now));
      // Nothing of a deleted server waits for review any more.
      this.#mcpPending.dropServer(id);
      return { server: this.#mcpServers.tombstone(id, index, now), tools };
    }, audit);
  }

  /**
   * A sync of an MCP server's tools: its new and changed tools and the ones it no longer lists,
   * with what it does to the server's pending versions, in one write.
   */
  writeMcpTools(
    upserts: readonly ToolWrite[],
    deletes: readonly string[],
    now: string,
    audit?: AuditFor<ToolRecord[]>,
    pending?: PendingChanges,
  ): ToolRecord[] {
    return this.#transactions.write((index) => {
      const records = [
        ...upserts.map((t) => this.#tools.put(t, index, now).record),
        ...deletes.map((name) => this.#tools.tombstone(name, index, now)),
      ];
      if (pending) this.#writePending(pending, now);
      return records;
    }, audit);
  }

  /**
   * A sync that changes only what is pending (no tool agents see): no registry index, no change
   * event; in the transaction open (a savepoint of the batch), with its audit entry.
   */
  writeMcpPending(pending: PendingChanges, now: string, audit?: AuditEntryInput): void {
    this.#transactions.group(() => {
      this.#writePending(pending, now);
      if (audit) this.#audit?.insert(audit);
    });
  }

  /** Accepted versions of a server's tools (issue 29) written as its tools, their pending rows gone, in one write. */
  acceptMcpTools(serverId: string, writes: readonly ToolWrite[], now: string, audit?: AuditFor<ToolRecord[]>): ToolRecord[] {
    return this.#transactions.write((index) => {
      for (const write of writes) this.#mcpPending.drop(serverId, write.name);
      return writes.map((t) => this.#tools.put(t, index, now).record);
    }, audit);
  }

  /** Rejected versions stay, marked, so that the same version listed again is not pending again. */
  rejectMcpPending(serverId: string, names: readonly string[], now: string, audit?: AuditEntryInput): void {
    this.#transactions.group(() => {
      for (const name of names) this.#mcpPending.reject(serverId, name, now);
      if (audit) this.#audit?.insert(audit);
    });
  }

  /** Every OpenAPI source (issue 30), sorted by id. */
  openApiSources(): OpenApiSourceRecord[] {
    return translate(() => this.#openApiSources.all());
  }

  openApiSource(id: string): OpenApiSourceRecord | undefined {
    return translate(() => this.#openApiSources.get(id));
  }

  /** A source's sealed credential, read only to call its API. */
  openApiSourceCredential(id: string): string | undefined {
    return translate(() => this.#openApiSources.sealedCredential(id));
  }

  /** Names of the live tools of a source, inside the open transaction if there is one. */
  openApiSourceTools(id: string): string[] {
    return translate(() => this.#openApiSources.toolsOf(openApiSourceOwner(id)));
  }

  /** A source and its tools in one write: the source's row, its tools written, those it no longer has deleted. */
  putOpenApiSource(
    write: OpenApiSourceWrite,
    tools: readonly ToolWrite[],
    deletes: readonly string[],
    now: string,
    audit?: AuditFor<{ record: OpenApiSourceRecord; created: boolean; tools: ToolRecord[] }>,
    deprecations: readonly { name: string; deprecation: ToolDeprecation | null }[] = [],
  ): { record: OpenApiSourceRecord; created: boolean; tools: ToolRecord[] } {
    return this.#transactions.write((index) => {
      const result = this.#openApiSources.put(write, index, now);
      // The operator's own word on the source: nothing an earlier re-read found waits any more.
      this.#openApiPending.dropOwner(write.source.id);
      // By name, the last write of each: a tool written and then deprecated is staged once.
      const records = new Map<string, ToolRecord>();
      for (const t of tools) records.set(t.name, this.#tools.put(t, index, now).record);
      for (const { name, deprecation } of deprecations) records.set(name, this.#tools.deprecate(name, deprecation, index, now));
      for (const name of deletes) records.set(name, this.#tools.tombstone(name, index, now));
      return { ...result, tools: [...records.values()] };
    }, audit);
  }

  /** Deletes a source (its credential with it) and tombstones its tools, in one write. */
  deleteOpenApiSource(
    id: string,
    now: string,
    audit?: AuditFor<{ record: OpenApiSourceRecord; tools: ToolRecord[] }>,
  ): { record: OpenApiSourceRecord; tools: ToolRecord[] } {
    return this.#transactions.write((index) => {
      const record = this.#openApiSources.delete(id);
      this.#openApiPending.dropOwner(id);
      const tools = this.#openApiSources.toolsOf(openApiSourceOwner(id)).map((name) => this.#tools.tombstone(name, index, now));
      return { record, tools };
    }, audit);
  }

  /**
   * A re-read of a source's document (issue 30) that changes tools agents see: tools written
   * (policy `auto`), deleted (gone from the document) or whose deprecation follows the
   * document's mark, with the document read and what it does to the source's pending versions,
   * in one write.
   */
  writeOpenApiRefresh(
    id: string,
    read: OpenApiReread,
    change: OpenApiRefreshChange,
    now: string,
    audit?: AuditFor<ToolRecord[]>,
  ): ToolRecord[] {
    return this.#transactions.write((index) => {
      this.#openApiSources.reread(id, read, now);
      this.#writeOpenApiPending(id, change, now);
      const records = new Map<string, ToolRecord>();
      for (const t of change.writes) records.set(t.name, this.#tools.put(t, index, now).record);
      for (const { name, deprecation } of change.deprecations) records.set(name, this.#tools.deprecate(name, deprecation, index, now));
      for (const name of change.deletes) records.set(name, this.#tools.tombstone(name, index, now));
      return [...records.values()];
    }, audit);
  }

  /** A re-read that changes only the document stored and what is pending: no registry index, no change event. */
  writeOpenApiPending(id: string, read: OpenApiReread, change: OpenApiRefreshChange, now: string, audit?: AuditEntryInput): void {
    this.#transactions.group(() => {
      this.#openApiSources.reread(id, read, now);
      this.#writeOpenApiPending(id, change, now);
      if (audit) this.#audit?.insert(audit);
    });
  }

  #writeOpenApiPending(id: string, change: OpenApiRefreshChange, now: string): void {
    for (const name of change.pendingDrop) this.#openApiPending.drop(id, name);
    for (const version of change.pendingPut) this.#openApiPending.putRow(id, version, now);
  }

  /** Accepted versions of a source's tools written, their pending rows gone, in one write. */
  acceptOpenApiTools(
    id: string,
    writes: readonly ToolWrite[],
    deprecations: readonly { name: string; deprecation: ToolDeprecation | null }[],
    now: string,
    audit?: AuditFor<ToolRecord[]>,
  ): ToolRecord[] {
    return this.#transactions.write((index) => {
      const records = new Map<string, ToolRecord>();
      for (const write of writes) {
        this.#openApiPending.drop(id, write.name);
        records.set(write.name, this.#tools.put(write, index, now).record);
      }
      for (const { name, deprecation } of deprecations) records.set(name, this.#tools.deprecate(name, deprecation, index, now));
      return [...records.values()];
    }, audit);
  }

  /** Rejected versions stay, marked, so that the same version read again is not pending again. */
  rejectOpenApiPending(id: string, names: readonly string[], now: string, audit?: AuditEntryInput): void {
    this.#transactions.group(() => {
      for (const name of names) this.#openApiPending.reject(id, name, now);
      if (audit) this.#audit?.insert(audit);
    });
  }

  /**
   * A single HTTP tool's own credential (issue 30), sealed; no registry index (no tool agents see
   * changes), in the transaction open, with its audit entry.
   */
  putToolCredential(
    name: string,
    sealed: string,
    shown: Record<string, unknown>,
    origin: string,
    now: string,
    audit?: AuditEntryInput,
  ): ToolCredentialRecord {
    return this.#transactions.group(() => {
      const record = this.#toolCredentials.put(name, sealed, shown, origin, now);
      if (audit) this.#audit?.insert(audit);
      return record;
    });
  }

  /** Whether the tool had a credential. */
  deleteToolCredential(name: string, audit?: AuditEntryInput): boolean {
    return this.#transactions.group(() => {
      const had = this.#toolCredentials.delete(name);
      if (had && audit) this.#audit?.insert(audit);
      return had;
    });
  }

  /** What reads show of a tool's credential. */
  toolCredential(name: string): ToolCredentialRecord | undefined {
    return translate(() => this.#toolCredentials.get(name));
  }

  /** A tool's sealed credential and its origin, read only to call the tool. */
  sealedToolCredential(name: string): SealedToolCredential | undefined {
    return translate(() => this.#toolCredentials.sealed(name));
  }

  /** The version of a source's tool pending now, inside the open transaction if there is one. */
  openApiPending(id: string, name: string): PendingRow<OpenApiPendingTool> | undefined {
    return translate(() => this.#openApiPending.get(id, name));
  }

  openApiPendingPage(id: string, after: string, limit: number, rejected: boolean): PendingRow<OpenApiPendingTool>[] {
    return translate(() => this.#openApiPending.page(id, after, limit, rejected));
  }

  openApiPendingCount(id: string): number {
    return translate(() => this.#openApiPending.count(id));
  }

  /** Names with a pending row (rejected ones too). */
  openApiPendingNames(id: string): string[] {
    return translate(() => this.#openApiPending.names(id));
  }

  /** The version of a server's tool pending now, inside the open transaction if there is one. */
  mcpPending(serverId: string, name: string): PendingRecord | undefined {
    return translate(() => this.#mcpPending.get(serverId, name));
  }

  /** A page of a server's pending versions, by name after `after`. */
  mcpPendingPage(serverId: string, after: string, limit: number, rejected: boolean): PendingRecord[] {
    return translate(() => this.#mcpPending.page(serverId, after, limit, rejected));
  }

  /** How many versions of a server's tools wait for an operator. */
  mcpPendingCount(serverId: string): number {
    return translate(() => this.#mcpPending.count(serverId));
  }

  /** Names with a pending row (rejected ones too). */
  mcpPendingNames(serverId: string): string[] {
    return translate(() => this.#mcpPending.names(serverId));
  }

  #writePending(pending: PendingChanges, now: string): void {
    for (const name of pending.drop) this.#mcpPending.drop(pending.serverId, name);
    for (const version of pending.put) this.#mcpPending.put(pending.serverId, version, now);
  }

  /**
   * Runs several writes in one transaction, each in a savepoint of its own (the store's write
   * transactions nest), so that they share one commit and one fsync: group commit. With
   * `deferSync` the commit does not wait for the disk, and `sync()` must be awaited before
   * anyone hears of the writes.
   */
  group<T>(fn: () => T, options: GroupOptions = {}): T {
    return this.#transactions.group(fn, options);
  }

  /**
   * Resolves once every commit made so far is on disk: at once after synchronous=FULL commits,
   * after an fdatasync of the WAL (off the main thread) after deferred ones. Rejects with
   * TR_ERR_UNAVAILABLE if that fdatasync fails; the store then refuses every later write.
   */
  sync(): Promise<void> {
    return this.#transactions.sync();
  }

  /**
   * Proves the database takes a write and has room for more (for /readyz): at least
   * `minRoomBytes` free on its disk and under its max_page_count.
   */
  probeWrite(now: string): void {
    this.#readiness.probeWrite(now);
  }

  /**
   * Starts a write that spans many turns of the event loop (an import written in slices, so
   * that reads keep answering): one IMMEDIATE transaction under one registry index, all or
   * nothing. It holds the connection's write gate until it commits or rolls back, so that the
   * batched writers (usage records, refused-write audit entries), pruning and the readiness
   * probe wait instead of slipping into it; the caller holds every other registry write back.
   */
  beginSliced(options: GroupOptions & { index?: number | undefined } = {}): SlicedWrite {
    return this.#transactions.beginSliced(options);
  }

  /**
   * Starts a bulk write (an import) as beginSliced does, all or nothing under one registry
   * index, with its SQL on a worker thread for a database file (src/store/bulk-write.ts), so
   * that neither its statements nor its COMMIT hold the event loop; here otherwise. It holds the
   * write gate until it commits or rolls back; `sync()` must be awaited after its commit before
   * anyone hears of it.
   */
  beginBulk(index?: number): Promise<BulkWrite> {
    return this.#transactions.beginBulk(index);
  }

  close(): void {
    this.#transactions.close();
  }
}
