/**
 * The write path: validate, write, and once the write is on disk swap it into the catalogue,
 * tell the change bus and answer. Validation and the write run synchronously, so no other
 * request can slip between them in this process; the store re-checks what SQLite can (services
 * in use).
 *
 * Group commit: writes that arrive while the event loop is busy are queued and run together
 * in one transaction, each in its own savepoint (a failed write rolls back alone), so that a
 * burst of registrations pays one fsync instead of one each. Every write still gets its own
 * registry index.
 *
 * Pipelined: the commit does not wait for the disk on the main thread; the store fsyncs the WAL
 * on the thread pool (src/store/wal-sync.ts) while the main thread reads, authenticates and
 * parses the requests of the next batch. Until its fsync returns a batch is staged: its later
 * writes validate against its earlier ones (a tool may use a service put just before it), but
 * nobody sees it: not the catalogue, not the change bus, not the change or audit log readers,
 * and its writers get no answer.
 */
import { RegistryError, type FieldError } from '../model/errors.js';
import { parseTool, parseToolService, validationError, type ParsedTool } from '../model/resolve.js';
import { outboundTargetsOf, type OutboundCheck, type OutboundTarget } from '../model/outbound-address.js';
import { parseCheckedTool } from '../json-schema/tool-schemas.js';
import { ImportBundleSchema, type ToolService } from '../model/schemas.js';
import { fieldErrorsFrom } from '../model/resolve.js';
import { McpToolSchema, parseMcpServer, type McpTool } from '../model/mcp-schemas.js';
import { IMPORT_PART_LIMITS, isLastImportPart, type ImportPartLimits, type ReplicationEvent } from '../model/replication.js';
import { z } from 'zod';
import { planMcpSync, type McpSyncPlan } from '../model/mcp-tools.js';
import type { Actor, AuditEntryInput, Change, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { AuditFor, RegistryStore, ReplicationPosition } from '../store/registry-store.js';
import type { StagedImport } from '../store/import-part-rows.js';
import type { Catalog, CatalogTool, PreparedWrite } from '../catalog/catalog.js';
import type { CatalogWrite } from '../catalog/snapshot.js';
import type { ChangeBus } from './change-bus.js';
import type { RegistryWrites } from './writes.js';
import { sortInSlices, TimeSlices } from './time-slices.js';
import { toolDigest } from './tool-digest.js';
import { compareNames } from '../catalog/sorted-names.js';
import { toolRecordRepresentation } from '../catalog/record-etag.js';
import { checkWriteCondition, type WriteCondition } from '../model/write-condition.js';
import { callerSpan, CommitTelemetry, type CommitObserver } from './commit-telemetry.js';
import type { SpanContext } from '@opentelemetry/api';
import { isDeepStrictEqual } from 'node:util';

export interface ImportSummary {
  index: number;
  toolServices: { created: number; replaced: number };
  tools: { created: number; replaced: number };
}

/**
 * Replicated mode: the message a write applies. Its index and time come from the message, so
 * that every replica stores the same records; the replica's position is saved with the write.
 */
export interface Pin {
  index: number;
  at: string;
  topic: string;
  messageId: string;
}

/** How a replicated write ended: decided the same way on every replica. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface QueuedWrite {
  run: () => unknown;
  /** Replicated mode: the message applied; the promise resolves with the Outcome, rejects only when the commit failed. */
  pin?: Pin;
  /** A write that runs alone and over many turns of the event loop (an import). */
  exclusive?: () => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** The span of the request that queued it, linked from its commit's span. */
  span?: SpanContext | undefined;
}

type CatalogChange = CatalogWrite;

/** A validated import: its services, and its tools in name order. */
interface ImportPlan {
  services: Map<string, ToolService>;
  ordered: ParsedTool[];
}

/** What a sync of an MCP server's tools did (src/registry/mcp-sync.ts). */
export interface McpSyncResult {
  /** The server was replaced or deleted since its tools were listed: nothing was written. */
  stale: boolean;
  /** The registry index of the write; null when nothing changed (no write at all). */
  index: number | null;
  plan: McpSyncPlan | null;
}

/**
 * Who writes when the registry syncs an MCP server's tools (issue 29): the source, by its id, so
 * that the audit (and the dashboard's writer column) tells an upstream's writes from an
 * operator's; they were "(anonymous)".
 */
function mcpServerActor(serverId: string): Actor {
  return { sub: `mcp-server:${serverId}`, iss: null, client: null, requestId: null };
}

/** Tools a sync's audit entry names; past it, a count. 100 entries take about 15 kB. */
const AUDITED_TOOLS = 100;

/**
 * A sync's audit detail: the counts, then each tool written or removed with its digest before
 * and after (`none` where there was, or is, no such tool), the first AUDITED_TOOLS of them.
 * Read before the write, so `stored` still gives the old versions.
 */
function syncDetail(plan: McpSyncPlan, stored: (name: string) => ToolRecord | undefined): string {
  const digestOf = (name: string): string => {
    const record = stored(name);
    return record ? toolDigest(record.descriptor as McpTool) : 'none';
  };
  const named: string[] = [];
  for (const tool of plan.upserts) {
    if (named.length === AUDITED_TOOLS) break;
    named.push(`${tool.name} ${digestOf(tool.name)} -> ${toolDigest(tool)}`);
  }
  for (const name of plan.deletes) {
    if (named.length === AUDITED_TOOLS) break;
    named.push(`${name} ${digestOf(name)} -> none`);
  }
  const total = plan.upserts.length + plan.deletes.length;
  const more = total > named.length ? `; and ${total - named.length} more` : '';
  return `${plan.upserts.length} tool(s) written, ${plan.deletes.length} deleted: ${named.join('; ')}${more}`;
}

/** One group commit, from its transaction until its writers are answered. */
interface Batch {
  items: QueuedWrite[];
  outcomes: Outcome[];
  /** What its successful writes left, by id and name (newest wins): what later writes see. */
  services: Map<string, ServiceRecord>;
  mcpServers: Map<string, McpServerRecord>;
  tools: Map<string, ToolRecord>;
  /** Its successful writes, in index order, for the catalogue. */
  changes: { index: number; change: CatalogChange }[];
}

/**
 * The time as an ISO string, built once per millisecond: the writes of a batch mostly share one,
 * and toISOString took 5-8 us a write in the bench's profile.
 */
let lastMs = Number.NaN;
let lastIso = '';
function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

/**
 * Tools per batch of an import's writes. The SQL runs on the store's writer thread where there
 * is one (src/store/bulk-write.ts); here otherwise, where 256 at a time made slices of 40 ms
 * in the import's profile.
 */
const IMPORT_BATCH = 128;

export class RegistryService implements RegistryWrites {
  readonly #store: RegistryStore;
  readonly #catalog: Catalog;
  readonly #bus: ChangeBus;
  readonly #now: () => string;
  /** Replicated mode: the limits of imports sent in parts (tests lower them). */
  readonly #partLimits: ImportPartLimits;
  #queue: QueuedWrite[] = [];
  #scheduled = false;
  /** An exclusive write (an import) is running: nothing else is flushed meanwhile. */
  #exclusive = false;
  /** The batch committing or waiting for its fsync: the catalogue does not show it yet. */
  #staged: Batch | null = null;
  /** The last write time given out. */
  #lastStamp = '';
  /** The time of the replicated write running now (its message's), or null. */
  #pinnedAt: string | null = null;
  /** Group commits' spans and their observers (metrics). */
  readonly #commits = new CommitTelemetry();
  /** The outbound address policy's check of the hosts and URLs descriptors point at. */
  readonly #outbound: OutboundCheck;

  /** `outbound`: the outbound address policy's check at registration (src/bridge/outbound-policy.ts); default: none. */
  constructor(
    store: RegistryStore,
    catalog: Catalog,
    bus: ChangeBus,
    now: () => string = isoNow,
    partLimits: ImportPartLimits = IMPORT_PART_LIMITS,
    outbound: OutboundCheck = () => undefined,
  ) {
    this.#outbound = outbound;
    this.#partLimits = partLimits;
    this.#store = store;
    this.#catalog = catalog;
    this.#bus = bus;
    this.#now = now;
  }

  /** `POST /tools/register` and `PUT /tools/{name}`; `pathName` must match the body's name. */
  putTool(input: unknown, pathName?: string, actor?: Actor, condition?: WriteCondition): Promise<PutResult<ToolRecord>> {
    return this.#enqueue(() => this.#putTool(input, pathName, actor, actor?.announcer ?? null, condition));
  }

  deleteTool(name: string, actor?: Actor, condition?: WriteCondition): Promise<ToolRecord> {
    return this.#enqueue(() => this.#deleteTool(name, actor, actor?.announcer ?? null, condition));
  }

  putService(input: unknown, pathId?: string, actor?: Actor): Promise<PutResult<ServiceRecord>> {
    return this.#enqueue(() => this.#putService(input, pathId, actor));
  }

  deleteService(id: string, actor?: Actor): Promise<ServiceRecord> {
    return this.#enqueue(() => this.#deleteService(id, actor));
  }

  /** `PUT /mcp-servers/{id}`; its tools follow with the server's next sync. */
  putMcpServer(input: unknown, pathId?: string, actor?: Actor): Promise<PutResult<McpServerRecord>> {
    return this.#enqueue(() => this.#putMcpServer(input, pathId, actor));
  }

  /** Deletes an MCP server and every tool of it, in one write. */
  deleteMcpServer(id: string, actor?: Actor): Promise<{ server: McpServerRecord; tools: ToolRecord[] }> {
    return this.#enqueue(() => this.#deleteMcpServer(id, actor));
  }

  /**
   * Brings an MCP server's stored tools in line with `wanted`, listed while the server's record
   * was at `serverIndex`: one write, or none when nothing changed. Planned inside the batch, so
   * that it sees the writes queued before it.
   */
  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[]): Promise<McpSyncResult> {
    return this.#enqueue(() => this.#syncMcpTools(serverId, serverIndex, wanted));
  }

  /**
   * One slice of a large sync (issue 29): writes the tools of `part` that changed, and deletes
   * nothing, except with `listed` (every name of the whole list, given with its last slice):
   * then the server's tools not in it are deleted too. Each slice is a write of its own, planned
   * against what is stored when it runs, so an operator's write between two slices still wins.
   * 5,000 tools in one write held the event loop for 0.2 to 0.4 s in the SQL and 0.1 to 0.3 s
   * in the catalogue (src/registry/mcp-sync.ts sends slices of 50).
   */
  syncMcpToolsPart(serverId: string, serverIndex: number, part: readonly McpTool[], listed?: ReadonlySet<string>): Promise<McpSyncResult> {
    return this.#enqueue(() => this.#syncMcpTools(serverId, serverIndex, part, listed ?? null));
  }

  /**
   * Imports run alone, in slices: validation, the SQLite writes (one transaction held across
   * turns of the event loop) and the catalogue's entries are done a few milliseconds at a time,
   * so that reads keep answering; other writes wait in the queue until the import is answered.
   * The catalogue's new indexes and full view are built beside the live ones in the same way,
   * so that once the commit is on disk, showing the import is one swap.
   */
  importBundle(input: unknown, actor?: Actor): Promise<ImportSummary> {
    return new Promise<ImportSummary>((resolve, reject) => {
      this.#queue.push({
        run: () => undefined,
        exclusive: () => this.#importSliced(input, actor),
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#schedule();
    });
  }

  /**
   * Replicated mode (src/replication/): applies one message of the replication topic, decided
   * here as a local write would be, with the message's index and time; `actor` is given on the
   * replica that published it (its audit entry), undefined elsewhere. `refusal`: the replicator
   * has decided already that the message is refused (a credential that does not open); the
   * position moves all the same. Resolves with the outcome, refusals included; rejects only when
   * the commit failed (the replica must read again).
   */
  applyReplicated(event: ReplicationEvent, pin: Pin, actor?: Actor, refusal?: RegistryError): Promise<Outcome> {
    const exclusive =
      refusal === undefined && event.op === 'import'
        ? () => this.#importReplicated(() => event.body, actor, pin)
        : refusal === undefined && isLastImportPart(event)
          ? () => this.#importReplicated((notBefore) => this.#joinedImport(event, notBefore), actor, pin, event.write)
          : undefined;
    if (exclusive) {
      return new Promise<Outcome>((resolve, reject) => {
        this.#queue.push({ run: () => undefined, exclusive, resolve: resolve as (value: unknown) => void, reject, pin });
        this.#schedule();
      });
    }
    const run =
      refusal === undefined
        ? this.#replicatedWrite(event, actor)
        : () => {
            throw refusal;
          };
    return new Promise<Outcome>((resolve, reject) => {
      this.#queue.push({ run, resolve: resolve as (value: unknown) => void, reject, pin });
      this.#schedule();
    });
  }

  /**
   * Replicated mode: a message the replicator refused before anything in it was decided (its
   * MAC fails, its stamp is too far ahead): nothing is written and no stamp moves, but the
   * position moves past it, with `audit`, in a commit queued behind the writes before it, so a
   * restart neither reads it again nor audits it twice. Resolves with the refusal as the
   * outcome; rejects only when the commit failed.
   */
  refuseReplicated(pin: Omit<Pin, 'at'>, refusal: RegistryError, audit: AuditEntryInput): Promise<Outcome> {
    const run = () => {
      this.#store.recordAudit(audit);
      throw refusal;
    };
    return new Promise<Outcome>((resolve, reject) => {
      // The last stamp as the pin's time: whatever the message says, time does not move.
      this.#queue.push({ run, resolve: resolve as (value: unknown) => void, reject, pin: { ...pin, at: this.#lastStamp } });
      this.#schedule();
    });
  }

  /** Replicated mode: the write time after a restart (the last one given out, saved with the position). */
  restoreStamp(lastAt: string): void {
    if (lastAt > this.#lastStamp) this.#lastStamp = lastAt;
  }

  #replicatedWrite(event: ReplicationEvent, actor: Actor | undefined): () => unknown {
    const target = event.target;
    const owner = event.owner ?? null;
    const required = (): string => {
      if (target === undefined) throw new RegistryError('TR_ERR_VALIDATION', `a replicated ${event.op} names no target`);
      return target;
    };
    switch (event.op) {
      // The owner comes with the message, so that every replica decides ownership the same way.
      case 'tool.put':
        return () => this.#putTool(event.body, target, actor, owner, event.condition);
      case 'tool.delete':
        return () => this.#deleteTool(required(), actor, owner, event.condition);
      case 'tool-service.put':
        return () => this.#putService(event.body, target, actor, owner);
      case 'tool-service.delete':
        return () => this.#deleteService(required(), actor, owner);
      case 'mcp-server.put':
        return () => this.#putMcpServer(event.body, target, actor);
      case 'mcp-server.delete':
        return () => this.#deleteMcpServer(required(), actor);
      case 'mcp-server.sync':
        return () => {
          const tools = z.array(McpToolSchema).safeParse(event.body);
          if (!tools.success || event.serverIndex === undefined)
            throw new RegistryError('TR_ERR_VALIDATION', 'a replicated sync of an MCP server is malformed');
          return this.#syncMcpTools(required(), event.serverIndex, tools.data);
        };
      case 'import.part':
        return () => this.#stageImportPart(event);
      case 'import':
      case 'marker':
        return () => {
          throw new Error(`${event.op} is not a single write`);
        };
    }
  }

  /**
   * A part of an import sent in parts, not its last: staged in the batch's transaction, the one
   * that saves the position. Parts come in order, one each, all giving the same count, within
   * the limits of IMPORT_PART_LIMITS; anything else refuses the part and drops what is staged of
   * its import (its last part is refused then too), the same way on every replica.
   */
  #stageImportPart(event: ReplicationEvent): { part: number; parts: number } {
    const now = Date.parse(this.#stamp());
    const notBefore = now - this.#partLimits.orphanAfterMs;
    // Orphans first, so that a part number they held can be staged again.
    this.#store.dropImportPartsBefore(notBefore);
    const staged = this.#store.stagedImport(event.write, notBefore);
    const problem =
      importPartProblem(event, staged, this.#partLimits) ??
      stagedBytesProblem(event, this.#store.stagedImportBytes(notBefore), this.#partLimits);
    if (problem) {
      this.#store.dropImportParts(event.write);
      throw problem;
    }
    const { part, parts, chunk } = event as Required<Pick<ReplicationEvent, 'part' | 'parts' | 'chunk'>>;
    this.#store.stageImportPart({ write: event.write, part, parts, chunk, bytes: Buffer.byteLength(chunk), stagedAt: now });
    return { part, parts };
  }

  /**
   * The last part of an import sent in parts: its staged parts (those not dropped as orphans
   * before `notBefore`) and this one joined and parsed; a RegistryError when they do not make
   * one import.
   */
  #joinedImport(event: ReplicationEvent, notBefore: number): unknown {
    const problem = importPartProblem(event, this.#store.stagedImport(event.write, notBefore), this.#partLimits);
    if (problem) throw problem;
    const text = this.#store.stagedImportChunks(event.write, notBefore).join('') + (event.chunk ?? '');
    try {
      return JSON.parse(text);
    } catch {
      throw new RegistryError('TR_ERR_INVALID_JSON', `the ${event.parts ?? 0} parts of import ${event.write} do not join into JSON`);
    }
  }

  /**
   * An import from the topic, one message or the last of its parts (`partsOf`, its write id):
   * refused (the position saved alone, with the import's staged parts deleted) or written with
   * the message's index and time (the staged parts deleted in its transaction).
   */
  async #importReplicated(input: (notBefore: number) => unknown, actor: Actor | undefined, pin: Pin, partsOf?: string): Promise<Outcome> {
    this.#pinnedAt = pin.at;
    const at = this.#stamp();
    this.#pinnedAt = null;
    let plan: ImportPlan;
    try {
      plan = await this.#planImport(input(Date.parse(at) - this.#partLimits.orphanAfterMs));
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      this.#store.group(
        () => {
          if (partsOf !== undefined) this.#store.dropImportParts(partsOf);
          this.#store.saveReplicationPosition(this.#position(pin));
        },
        { deferSync: true },
      );
      await this.#store.sync();
      return { ok: false, error };
    }
    return { ok: true, value: await this.#writeImport(plan, at, actor, pin, partsOf) };
  }

  #position(pin: Pin): ReplicationPosition {
    return { topic: pin.topic, messageId: pin.messageId, index: pin.index, lastAt: this.#lastStamp };
  }

  /** Calls `observer` after every group commit (its size, time and outcome); returns the unsubscribe. */
  observeCommits(observer: CommitObserver): () => void {
    return this.#commits.observe(observer);
  }

  #enqueue<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run, resolve: resolve as (value: unknown) => void, reject, span: callerSpan() });
      this.#schedule();
    });
  }

  /**
   * One batch at a time: while a batch waits for its fsync the next one gathers, and runs when
   * it has settled. With 16 clients on the bench machine that made 8 writes a commit, where
   * committing at every turn of the event loop made 5; a commit writes 12 WAL pages for one
   * tool, 18 for five and 22 for eight, so bigger batches write less per tool.
   */
  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#staged || this.#exclusive) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  /** Runs every queued write under one commit; the batch settles once the commit is on disk. */
  #flush(): void {
    this.#scheduled = false;
    const first = this.#queue[0];
    if (first?.exclusive) {
      this.#queue.shift();
      this.#exclusive = true;
      first
        .exclusive()
        .then(first.resolve, first.reject)
        .finally(() => {
          this.#exclusive = false;
          this.#schedule();
        });
      return;
    }
    // Writes queued after an exclusive one wait for it.
    const cut = this.#queue.findIndex((item) => item.exclusive !== undefined);
    const batch: Batch = {
      items: cut < 0 ? this.#queue : this.#queue.slice(0, cut),
      outcomes: [],
      services: new Map(),
      mcpServers: new Map(),
      tools: new Map(),
      changes: [],
    };
    this.#queue = cut < 0 ? [] : this.#queue.slice(cut);
    this.#staged = batch;
    const committed = this.#commits.start(batch.items);
    try {
      this.#store.group(
        () => {
          let pinned: Pin | undefined;
          for (const item of batch.items) {
            try {
              if (item.pin) {
                pinned = item.pin;
                this.#pinnedAt = item.pin.at;
                batch.outcomes.push({ ok: true, value: this.#store.withIndex(item.pin.index, item.run) });
              } else {
                batch.outcomes.push({ ok: true, value: item.run() });
              }
            } catch (error) {
              batch.outcomes.push({ ok: false, error });
            } finally {
              this.#pinnedAt = null;
            }
          }
          // Replicated mode: the position moves with the writes, refused ones included; parts of
          // imports that were never finished go once a message is stamped long enough after them.
          if (pinned) {
            this.#store.dropImportPartsBefore(Date.parse(this.#lastStamp) - this.#partLimits.orphanAfterMs);
            this.#store.saveReplicationPosition(this.#position(pinned));
          }
        },
        { deferSync: true },
      );
    } catch (error) {
      // The shared commit failed, so none of the batch happened: nobody saw any of it, and
      // every write in it is refused.
      this.#staged = null;
      committed(error);
      for (const item of batch.items) item.reject(error);
      this.#schedule();
      return;
    }
    this.#store.sync().then(
      () => {
        committed();
        this.#settle(() => this.#finish(batch));
      },
      // Not durable: refused whole (and the store refuses every later write).
      (error: unknown) => {
        committed(error);
        this.#settle(() => batch.items.forEach((item) => item.reject(error)));
      },
    );
  }

  /** The staged batch's fsync has returned or failed: it settles, and the next one may run. */
  #settle(answer: () => void): void {
    this.#staged = null;
    try {
      answer();
    } finally {
      this.#schedule();
    }
  }

  /** A durable batch goes into the catalogue, then to the change bus, then its writers hear back. */
  #finish(batch: Batch): void {
    const published: [number, readonly Change[]][] = [];
    try {
      for (const { index, change } of batch.changes) published.push([index, this.#catalog.apply(index, change)]);
    } catch (error) {
      // A bug, not a refusal: the writes are stored, so the catalogue is rebuilt from SQLite.
      for (const item of batch.items) item.reject(error);
      try {
        this.#catalog.load(this.#store.loadSnapshot());
      } catch {
        // The database cannot be read either; the next write's failure (and /readyz) say so.
      }
      return;
    }
    for (const [index, changes] of published) this.#bus.publish(index, changes);
    batch.items.forEach((item, i) => {
      const outcome = batch.outcomes[i];
      if (item.pin) item.resolve(outcome);
      else if (outcome?.ok) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    });
  }

  /** Stages a committed write's records for the catalogue. */
  #stage(index: number, change: CatalogChange): void {
    const batch = this.#staged;
    if (!batch) throw new Error('a write ran outside a batch');
    for (const s of change.services ?? []) batch.services.set(s.id, s);
    for (const m of change.mcpServers ?? []) batch.mcpServers.set(m.id, m);
    for (const t of change.tools ?? []) batch.tools.set(t.name, t);
    batch.changes.push({ index, change });
  }

  /** A live service's record as the writes so far leave it, staged ones included. */
  #serviceRecord(id: string): ServiceRecord | undefined {
    const record = this.#staged?.services.get(id) ?? this.#catalog.getService(id);
    return record?.status === 'deleted' ? undefined : record;
  }

  /** A live service as the writes so far leave it, staged ones included. */
  #service(id: string): ToolService | undefined {
    const record = this.#staged?.services.get(id);
    if (record) return record.status === 'deleted' ? undefined : record.descriptor;
    return this.#catalog.lookupService(id);
  }

  readonly #lookupService = (id: string): ToolService | undefined => this.#service(id);

  /** A live MCP server as the writes so far leave it, staged ones included. */
  #mcpServer(id: string): McpServerRecord | undefined {
    const record = this.#staged?.mcpServers.get(id);
    if (record) return record.status === 'deleted' ? undefined : record;
    return this.#catalog.getMcpServer(id);
  }

  /** Live tools of an MCP server, staged writes included. */
  #toolsOfMcpServer(id: string): string[] {
    const names = new Set(this.#catalog.toolsOfMcpServer(id));
    for (const [name, record] of this.#staged?.tools ?? []) {
      if (record.status !== 'deleted' && record.kind === 'mcp' && record.serviceId === id) names.add(name);
      else names.delete(name);
    }
    return [...names];
  }

  /**
   * An MCP server's tool may not be deleted through /tools (its next sync would list it again),
   * nor written by an announcer; an operator's write takes its name over instead (#putTool).
   */
  #refuseManaged(name: string): void {
    const record = this.#tool(name);
    if (record?.kind !== 'mcp') return;
    throw new RegistryError(
      'TR_ERR_CONFLICT',
      `tool "${name}" belongs to MCP server "${record.serviceId ?? ''}", which manages it: change or delete the server instead`,
      {
        extra: { mcpServer: record.serviceId },
      },
    );
  }

  /** A tool write's If-Match / If-None-Match against the tool as stored now, staged writes included. */
  #checkCondition(name: string, condition: WriteCondition): void {
    const current = this.#tool(name);
    checkWriteCondition(`tool "${name}"`, condition, current && toolRecordRepresentation(current).etag);
  }

  /** The tombstone of a name no live tool has, as the writes so far leave it, staged ones included. */
  #tombstone(name: string): ToolRecord | undefined {
    const record = this.#staged?.tools.get(name);
    if (record) return record.status === 'deleted' ? record : undefined;
    return this.#catalog.getTombstone(name);
  }

  /** A live tool's record as the writes so far leave it, staged ones included. */
  #tool(name: string): ToolRecord | undefined {
    const record = this.#staged?.tools.get(name);
    if (record) return record.status === 'deleted' ? undefined : record;
    return this.#catalog.getTool(name)?.record;
  }

  /** Live tools on a service, in name order, staged writes included. */
  #toolsUsingService(id: string): string[] {
    const users = this.#catalog.toolsUsingService(id);
    const staged = this.#staged?.tools;
    if (!staged || staged.size === 0) return users;
    const names = new Set(users);
    for (const [name, record] of staged) {
      if (record.status !== 'deleted' && record.serviceId === id) names.add(name);
      else names.delete(name);
    }
    return [...names].sort(compareNames);
  }

  /**
   * A write's time. Never before the last one given out, even when the clock steps back:
   * records are stamped in index order, and the catalogue binary-searches their times.
   */
  #stamp(): string {
    const now = this.#pinnedAt ?? this.#now();
    if (now > this.#lastStamp) this.#lastStamp = now;
    return this.#lastStamp;
  }

  #putTool(
    input: unknown,
    pathName?: string,
    actor?: Actor,
    owner: string | null = actor?.announcer ?? null,
    condition?: WriteCondition,
  ): PutResult<ToolRecord> {
    // Before the body is read (RFC 9110 section 13.2.2); a PUT names its tool in the path.
    if (condition !== undefined && pathName !== undefined) this.#checkCondition(pathName, condition);
    const parsed = parseCheckedTool(withPathKey(input, 'name', pathName), this.#lookupService);
    this.#checkTargets(parsed);
    const existing = this.#tool(parsed.name);
    // An operator's write of a name an upstream's tool has takes the name (issue 29): the
    // operator decides what a name means, so an upstream must not be able to block one, nor a
    // restore of a backup holding it; 409 made both fail. The upstream's tool is replaced, and
    // its later syncs skip it as taken (shown under upstream.skipped). An announcer may not.
    const displaced = existing?.kind === 'mcp' ? existing.serviceId : null;
    if (owner !== null) {
      this.#refuseManaged(parsed.name);
      refuseNotOwned('tool', parsed.name, existing, owner);
      // An announcement repeats itself with every heartbeat: the same descriptor writes nothing.
      if (existing && isDeepStrictEqual(existing.descriptor, parsed.descriptor)) return { record: existing, created: false };
    }
    const at = this.#stamp();
    const detail = displaced === null ? undefined : `replaced the tool of MCP server "${displaced}"`;
    const result = this.#store.putTool(
      { ...parsed, owner },
      at,
      this.#audit(actor, at, 'tool.put', (r) => [r.record.name, r.created ? 201 : 200, detail]),
    );
    this.#stage(result.record.index, { tools: [result.record] });
    return result;
  }

  #deleteTool(name: string, actor?: Actor, owner: string | null = actor?.announcer ?? null, condition?: WriteCondition): ToolRecord {
    if (condition !== undefined) this.#checkCondition(name, condition);
    this.#refuseManaged(name);
    if (owner !== null) refuseNotOwned('tool', name, this.#tool(name), owner);
    const at = this.#stamp();
    const record = this.#store.deleteTool(
      name,
      at,
      this.#audit(actor, at, 'tool.delete', (r) => [r.name, 200]),
    );
    this.#stage(record.index, { tools: [record] });
    return record;
  }

  /**
   * Creates or replaces a service. A replacement must keep every live tool on it valid (a new
   * required config param, say, would break them), or nothing changes.
   */
  #putService(input: unknown, pathId?: string, actor?: Actor, owner: string | null = actor?.announcer ?? null): PutResult<ServiceRecord> {
    const service = parseToolService(withPathKey(input, 'id', pathId));
    if (owner !== null) {
      const existing = this.#serviceRecord(service.id);
      refuseNotOwned('tool service', service.id, existing, owner);
      if (existing && isDeepStrictEqual(existing.descriptor, service)) return { record: existing, created: false };
    }
    const broken = this.#toolsBrokenBy(service);
    if (broken.length > 0) {
      throw new RegistryError(
        'TR_ERR_CONFLICT',
        `replacing tool service "${service.id}" would invalidate tools: ${broken.map((b) => b.name).join(', ')}`,
        { fieldErrors: broken.flatMap((b) => b.errors), extra: { tools: broken.map((b) => b.name) } },
      );
    }
    const at = this.#stamp();
    const result = this.#store.putService(
      service,
      at,
      this.#audit(actor, at, 'tool-service.put', (r) => [r.record.id, r.created ? 201 : 200]),
      owner,
    );
    this.#stage(result.record.index, { services: [result.record] });
    return result;
  }

  #deleteService(id: string, actor?: Actor, owner: string | null = actor?.announcer ?? null): ServiceRecord {
    if (owner !== null) refuseNotOwned('tool service', id, this.#serviceRecord(id), owner);
    const users = this.#toolsUsingService(id);
    if (users.length > 0) {
      throw new RegistryError('TR_ERR_IN_USE', `tool service "${id}" is still used by: ${users.join(', ')}`, { extra: { tools: users } });
    }
    const at = this.#stamp();
    const record = this.#store.deleteService(
      id,
      at,
      this.#audit(actor, at, 'tool-service.delete', (r) => [r.id, 200]),
    );
    this.#stage(record.index, { services: [record] });
    return record;
  }

  #putMcpServer(input: unknown, pathId?: string, actor?: Actor): PutResult<McpServerRecord> {
    const { server, credential } = parseMcpServer(withPathKey(input, 'id', pathId));
    this.#refuseTargets('MCP server', outboundTargetsOf('mcp-server', server));
    const at = this.#stamp();
    // The audit entry names the server only: never its credential.
    const result = this.#store.putMcpServer(
      server,
      credential,
      at,
      this.#audit(actor, at, 'mcp-server.put', (r) => [r.record.id, r.created ? 201 : 200]),
    );
    this.#stage(result.record.index, { mcpServers: [result.record] });
    return result;
  }

  #deleteMcpServer(id: string, actor?: Actor): { server: McpServerRecord; tools: ToolRecord[] } {
    const at = this.#stamp();
    const describe = (r: { server: McpServerRecord; tools: ToolRecord[] }): [string, number, string] => [
      r.server.id,
      200,
      `${r.tools.length} tool(s) deleted with it`,
    ];
    const result = this.#store.deleteMcpServer(id, at, this.#audit(actor, at, 'mcp-server.delete', describe));
    this.#stage(result.server.index, { mcpServers: [result.server], tools: result.tools });
    return result;
  }

  /** `listed`: undefined for a whole list; a slice's: null (delete nothing) or every name of the list. */
  #syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[], listed?: ReadonlySet<string> | null): McpSyncResult {
    if (this.#mcpServer(serverId)?.index !== serverIndex) return { stale: true, index: null, plan: null };
    let own = this.#toolsOfMcpServer(serverId);
    if (listed === null) own = [];
    // The names of this slice are in `wanted`, so kept; the others listed were written by slices before.
    else if (listed !== undefined) own = own.filter((name) => !listed.has(name));
    const plan = planMcpSync(
      serverId,
      wanted,
      (name) => this.#tool(name),
      own,
      (name) => this.#tombstone(name),
    );
    // The same list as last time writes nothing: no index, no change event.
    if (plan.upserts.length === 0 && plan.deletes.length === 0) return { stale: false, index: null, plan };
    const at = this.#stamp();
    const detail = syncDetail(plan, (name) => this.#tool(name));
    const writes = plan.upserts.map((tool) => ({ name: tool.name, kind: 'mcp' as const, serviceId: serverId, descriptor: tool }));
    const records = this.#store.writeMcpTools(
      writes,
      plan.deletes,
      at,
      this.#audit(mcpServerActor(serverId), at, 'mcp-server.sync', () => [serverId, 200, detail]),
    );
    const index = records[0]?.index ?? null;
    if (index !== null) this.#stage(index, { tools: records });
    return { stale: false, index, plan };
  }

  /**
   * Imports services and tools in one transaction, all or nothing, under one registry index.
   * Tools may use services from the bundle or already registered ones. Every problem is
   * reported with its path in the bundle. Done in slices (see importBundle): nothing of it is
   * seen by anyone until it is on disk and swapped into the catalogue at once.
   */
  async #importSliced(input: unknown, actor?: Actor): Promise<ImportSummary> {
    const plan = await this.#planImport(input);
    // Nothing to write (an empty bundle, a TrustGraph dump whose items were all skipped): no
    // write, so no new index, no new ETags and no waiters woken for nothing.
    if (plan.services.size === 0 && plan.ordered.length === 0)
      return { index: this.#catalog.index, toolServices: { created: 0, replaced: 0 }, tools: { created: 0, replaced: 0 } };
    return this.#writeImport(plan, this.#stamp(), actor);
  }

  /** An import's validation, in slices: what it writes, or a RegistryError naming every problem. */
  async #planImport(input: unknown): Promise<ImportPlan> {
    const slices = new TimeSlices();
    const bundle = ImportBundleSchema.safeParse(input);
    if (!bundle.success) {
      throw new RegistryError('TR_ERR_VALIDATION', 'invalid import bundle', { fieldErrors: fieldErrorsFrom(bundle.error) });
    }
    const errors: FieldError[] = [];
    const services = new Map<string, ToolService>();
    const rawServices = bundle.data['tool-services'];
    for (let i = 0; i < rawServices.length; i++) {
      collect(errors, () => {
        const service = parseToolService(rawServices[i], ['tool-services', i]);
        if (services.has(service.id)) throw duplicate(['tool-services', i, 'id'], `tool service "${service.id}"`);
        services.set(service.id, service);
      });
      await slices.turn();
    }
    const lookup = (id: string) => services.get(id) ?? this.#service(id);
    const tools = new Map<string, ParsedTool>();
    const rawTools = bundle.data.tools;
    for (let i = 0; i < rawTools.length; i++) {
      collect(errors, () => {
        const tool = parseCheckedTool(rawTools[i], lookup, ['tools', i]);
        this.#checkTargets(tool, ['tools', i]);
        if (tools.has(tool.name)) throw duplicate(['tools', i, 'name'], `tool "${tool.name}"`);
        // A name an upstream's tool has is taken over, as by PUT (#putTool): a backup restores
        // whatever upstreams list meanwhile.
        tools.set(tool.name, tool);
      });
      await slices.turn();
    }
    // A replaced service must still fit the live tools on it that the bundle does not replace.
    for (const service of services.values()) {
      for (const broken of this.#toolsBrokenBy(service, tools)) errors.push(...broken.errors);
    }
    if (errors.length > 0) {
      throw new RegistryError(
        'TR_ERR_VALIDATION',
        `invalid import bundle: ${errors.length} problem(s), first ${errors[0]?.path}: ${errors[0]?.message}`,
        {
          fieldErrors: errors.slice(0, 100),
        },
      );
    }
    // In name order, so that neither the catalogue nor its indexes sort them again.
    const ordered = await slices.run(sortInSlices([...tools.values()], (a, b) => compareNames(a.name, b.name)));
    return { services, ordered };
  }

  /**
   * Writes a validated import in slices, under the message's index in replicated mode (and with
   * the staged parts of `partsOf`, an import sent in parts, deleted in its transaction).
   */
  async #writeImport(
    { services, ordered }: ImportPlan,
    at: string,
    actor: Actor | undefined,
    pin?: Pin,
    partsOf?: string,
  ): Promise<ImportSummary> {
    const slices = new TimeSlices();
    const write = await this.#store.beginBulk(pin?.index);
    const entries = new Map<string, CatalogTool>();
    const toolResults: PutResult<ToolRecord>[] = [];
    let serviceResults: PutResult<ServiceRecord>[];
    let prepared: PreparedWrite;
    // Batches sent ahead to the store's writer thread, so that it writes one while this thread
    // builds the catalogue's entries of the one before.
    const inFlight: Promise<PutResult<ToolRecord>[]>[] = [];
    const take = async () => {
      for (const result of await (inFlight.shift() as Promise<PutResult<ToolRecord>[]>)) {
        toolResults.push(result);
        // The catalogue's entry (and its bytes), built now so that the swap is only a swap.
        entries.set(result.record.name, this.#catalog.prepare(result.record));
        await slices.turn();
      }
    };
    try {
      serviceResults = await write.putServices([...services.values()], at);
      for (let i = 0; i < ordered.length; i += IMPORT_BATCH) {
        const batch = write.putTools(ordered.slice(i, i + IMPORT_BATCH), at);
        // Awaited in turn below; a failure meanwhile must not count as unhandled.
        batch.catch(() => undefined);
        inFlight.push(batch);
        if (inFlight.length > 1) await take();
        await slices.turn();
      }
      while (inFlight.length > 0) await take();
      // Before the commit, so that nothing of the import shows in SQLite (the change feed's
      // replay) before the catalogue can show it too; a failure here rolls the import back.
      const change = { services: serviceResults.map((s) => s.record), tools: toolResults.map((t) => t.record) };
      prepared = await slices.run(this.#catalog.prepareWrite(write.index, change, entries));
      const detail = `${serviceResults.length} tool service(s), ${toolResults.length} tool(s)`;
      await write.commit(
        actor && { ...actor, at, action: 'import', target: null, outcome: 'ok', status: 200, detail },
        pin && this.#position(pin),
        partsOf,
      );
    } catch (err) {
      await Promise.allSettled(inFlight);
      // A failed step has rolled back already; the error that counts is the first.
      await write.rollback().catch(() => undefined);
      throw err;
    }
    // Nothing is shown or answered before the commit is on disk (see #flush).
    await this.#store.sync();
    const index = write.index;
    this.#bus.publish(index, this.#catalog.applyPrepared(prepared).changes);
    const count = (items: PutResult<unknown>[]) => ({
      created: items.filter((i) => i.created).length,
      replaced: items.filter((i) => !i.created).length,
    });
    return { index, toolServices: count(serviceResults), tools: count(toolResults) };
  }

  /** An HTTP tool's host and port against the outbound address policy. */
  #checkTargets(tool: ParsedTool, prefix: readonly PropertyKey[] = []): void {
    if (tool.kind === 'http') this.#refuseTargets('HTTP tool', outboundTargetsOf('http-tool', tool.descriptor), prefix);
  }

  /** A `TR_ERR_VALIDATION` naming each refused target's field and the rule that refuses it. */
  #refuseTargets(what: string, targets: readonly OutboundTarget[], prefix: readonly PropertyKey[] = []): void {
    const errors: FieldError[] = [];
    for (const target of targets) {
      const refusal = this.#outbound(target);
      if (refusal !== undefined) errors.push({ path: [...prefix, target.path].map(String).join('.'), message: refusal });
    }
    if (errors.length > 0) throw validationError(what, errors);
  }

  /** Proves the database still takes a write (readiness); throws when it does not. */
  probeWrite(): void {
    this.#store.probeWrite(this.#now());
  }

  /** Everything live, in the import bundle's form. */
  exportBundle(): { 'tool-services': ToolService[]; tools: unknown[] } {
    return {
      'tool-services': this.#catalog.services().map((s) => s.descriptor),
      // An MCP server's tools come from the server (its credential is never exported either).
      tools: this.#catalog
        .tools()
        .filter((t) => t.record.kind !== 'mcp')
        .map((t) => t.record.descriptor),
    };
  }

  /** The audit entry of a successful write (stamped like its records), built inside the transaction. */
  #audit<T>(
    actor: Actor | undefined,
    at: string,
    action: string,
    describe: (result: T) => [target: string | null, status: number, detail?: string],
  ): AuditFor<T> | undefined {
    if (!actor) return undefined;
    return (result: T): AuditEntryInput => {
      const [target, status, detail] = describe(result);
      return { ...actor, at, action, target, outcome: 'ok', status, detail: detail ?? null };
    };
  }

  #toolsBrokenBy(service: ToolService, replacedBy: ReadonlyMap<string, unknown> = new Map()): { name: string; errors: FieldError[] }[] {
    const broken: { name: string; errors: FieldError[] }[] = [];
    for (const name of this.#toolsUsingService(service.id)) {
      if (replacedBy.has(name)) continue;
      const record = this.#tool(name);
      if (!record) continue;
      try {
        parseTool(record.descriptor, (id) => (id === service.id ? service : this.#service(id)), ['tools', name]);
      } catch (err) {
        if (!(err instanceof RegistryError)) throw err;
        broken.push({ name, errors: err.fieldErrors ?? [{ path: `tools.${name}`, message: err.message }] });
      }
    }
    return broken;
  }
}

/** Fills the body's key from the URL path, or refuses a body that names something else. */
function withPathKey(input: unknown, key: string, fromPath: string | undefined): unknown {
  if (fromPath === undefined || typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const body = input as Record<string, unknown>;
  const given = body[key];
  if (given === undefined) return { ...body, [key]: fromPath };
  // Anything but a string is left to the schema, which names what is wrong with it (String() of
  // `{"toString": []}` threw: a 500).
  if (typeof given === 'string' && given !== fromPath) {
    throw new RegistryError('TR_ERR_VALIDATION', `the body's ${key} "${given}" differs from the URL's "${fromPath}"`, {
      fieldErrors: [{ path: key, message: `must equal "${fromPath}" from the URL` }],
    });
  }
  return input;
}

/** An announcer writes only what it owns (or what does not exist): never an operator's. */
function refuseNotOwned(what: string, name: string, existing: { owner?: string } | undefined, owner: string): void {
  if (existing === undefined || existing.owner === owner) return;
  throw new RegistryError(
    'TR_ERR_CONFLICT',
    `${what} "${name}" was registered by ${existing.owner === undefined ? 'an operator' : 'another announcer'}: an announcement cannot write over it`,
  );
}

/** Half of a UTF-16 pair without its other half: a chunk cut inside a character (SQLite would store U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const partRefused = (event: ReplicationEvent, why: string) =>
  new RegistryError(
    'TR_ERR_BAD_REQUEST',
    `part ${event.part ?? '?'} of ${event.parts ?? '?'} of import ${event.write} is refused: ${why}; the import is dropped, send it again`,
  );

/**
 * Why a part of an import sent in parts cannot be taken, given what is staged of its import:
 * parts 0 to n-1 in order, each once, all with the same count, within the limits.
 */
function importPartProblem(event: ReplicationEvent, staged: StagedImport, limits: ImportPartLimits): RegistryError | undefined {
  const { part, parts, chunk } = event;
  if (part === undefined || parts === undefined || chunk === undefined)
    return partRefused(event, 'an import part needs part, parts and chunk');
  if (parts > limits.maxParts) return partRefused(event, `an import has at most ${limits.maxParts} parts`);
  if (part >= parts) return partRefused(event, 'its number is past the count');
  if (LONE_SURROGATE.test(chunk)) return partRefused(event, 'its chunk is cut inside a character');
  if (staged.count > 0 && (staged.minParts !== parts || staged.maxParts !== parts))
    return partRefused(event, `the parts before it give another count (${staged.maxParts ?? '?'})`);
  if (part < staged.count) return partRefused(event, 'it came before (a duplicate)');
  if (staged.count !== part || (part > 0 && (staged.first !== 0 || staged.last !== part - 1))) {
    return partRefused(
      event,
      `parts 0 to ${part - 1} are not all staged before it (out of order, or dropped as unfinished after ${limits.orphanAfterMs / 60_000} minutes)`,
    );
  }
  if (staged.bytes + Buffer.byteLength(chunk) > limits.maxImportBytes) {
    return new RegistryError(
      'TR_ERR_BODY_TOO_LARGE',
      `import ${event.write} is past the ${limits.maxImportBytes} bytes of JSON an import sent in parts may have`,
    );
  }
  return undefined;
}

/** A part that would take the bytes staged for every unfinished import past their limit. */
function stagedBytesProblem(event: ReplicationEvent, stagedBytes: number, limits: ImportPartLimits): RegistryError | undefined {
  if (stagedBytes + Buffer.byteLength(event.chunk ?? '') <= limits.maxStagedBytes) return undefined;
  return new RegistryError(
    'TR_ERR_BODY_TOO_LARGE',
    `the replicas hold ${stagedBytes} bytes of unfinished imports, and this part would take them past ${limits.maxStagedBytes}; send the import again later`,
  );
}

function collect(errors: FieldError[], fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof RegistryError)) throw err;
    // One at a time: an item with 300,000 bad entries overflowed the stack spread into one push.
    for (const error of err.fieldErrors ?? [{ path: '', message: err.message }]) errors.push(error);
  }
}

function duplicate(path: PropertyKey[], what: string): RegistryError {
  return new RegistryError('TR_ERR_VALIDATION', `duplicate ${what}`, {
    fieldErrors: [{ path: path.map(String).join('.'), message: `duplicate ${what} in the bundle` }],
  });
}
