/**
 * The write side as one service: it composes the group commit (src/registry/group-commit.ts),
 * the single writes run inside its batches (write-commands.ts), sliced imports
 * (import-jobs.ts) and the replicated apply (replicated-apply.ts). Every write is queued; it is
 * validated and written in a batch, and once the batch is on disk swapped into the catalogue,
 * told to the change bus and answered.
 */
import type { RegistryError } from '../model/errors.js';
import type { OutboundCheck } from '../model/outbound-address.js';
import type { ToolService } from '../model/schemas.js';
import type { McpServerPutBody, ToolPutBody, ToolServicePutBody } from '../model/descriptors.js';
import type { McpTool } from '../model/mcp-schemas.js';
import { IMPORT_PART_LIMITS, type ImportPartLimits, type ReplicationEvent } from '../model/replication.js';
import type { Actor, AuditEntryInput, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { DeprecationBody } from '../model/deprecation.js';
import type { RegistryStore } from '../store/registry-store.js';
import type { Catalog } from '../catalog/catalog.js';
import type { ChangeBus } from './change-bus.js';
import type { CommitObserver } from './commit-telemetry.js';
import type { DeleteOptions, KeyedWriteOptions, RegistryWrites, ServiceWriteOptions, ToolWriteOptions } from './writes.js';
import { GroupCommit, isoNow, type Outcome, type Pin } from './group-commit.js';
import { WriteCommands, auditFor, holderOf, type McpSyncResult, type ReviewedChange, type ReviewResult } from './write-commands.js';
import {
  OpenApiSourceCommands,
  type OpenApiRefreshInput,
  type OpenApiRefreshResult,
  type OpenApiSourceInput,
  type OpenApiSourceResult,
} from './openapi-source-commands.js';
import type { OpenApiSourceRecord } from '../model/openapi-source.js';
import { ImportJobs, type ImportSummary } from './import-jobs.js';
import { removeToolCredential, setToolCredential } from './tool-credential-commands.js';
import type { OutboundCredential } from '../model/outbound-credential.js';
import type { ToolCredentialRecord } from '../store/tool-credential-rows.js';
import { ReplicatedApply } from './replicated-apply.js';

export type { Outcome, Pin } from './group-commit.js';
export type { ImportSummary } from './import-jobs.js';
export type { McpSyncResult } from './write-commands.js';

/** Each has a default: a plain single-process registry needs none of them. */
interface RegistryServiceOptions {
  /** The clock writes are stamped with; default: the system's, as an ISO string. */
  now?: () => string;
  /** Replicated mode: the limits of imports sent in parts (tests lower them). */
  partLimits?: ImportPartLimits;
  /** The outbound address policy's check at registration (src/bridge/outbound-policy.ts); default: none. */
  outbound?: OutboundCheck;
}

/** A local write is made under its actor's announcer, if it has one (a replicated write's owner comes with its message). */
function writer(actor: Actor | undefined): { actor: Actor | undefined; owner: string | null } {
  return { actor, owner: actor?.announcer ?? null };
}

export class RegistryService implements RegistryWrites {
  readonly #store: RegistryStore;
  readonly #catalog: Catalog;
  readonly #now: () => string;
  readonly #commit: GroupCommit;
  readonly #commands: WriteCommands;
  readonly #sources: OpenApiSourceCommands;
  readonly #imports: ImportJobs;
  readonly #replicated: ReplicatedApply;

  constructor(store: RegistryStore, catalog: Catalog, bus: ChangeBus, options: RegistryServiceOptions = {}) {
    const { now = isoNow, partLimits = IMPORT_PART_LIMITS, outbound = () => undefined } = options;
    this.#store = store;
    this.#catalog = catalog;
    this.#now = now;
    this.#commit = new GroupCommit(store, catalog, bus, { now, orphanAfterMs: partLimits.orphanAfterMs });
    this.#commands = new WriteCommands(store, this.#commit, outbound);
    this.#sources = new OpenApiSourceCommands({
      store,
      commit: this.#commit,
      checkTargets: (tool, prefix) => this.#commands.checkTargets(tool, prefix),
      holderOf,
      audit: auditFor,
    });
    this.#imports = new ImportJobs(store, catalog, bus, this.#commit, this.#commands);
    this.#replicated = new ReplicatedApply(store, this.#commit, this.#commands, this.#imports, partLimits);
    // Issue 34: tools leaving at their sunset reach every front as a write's changes do.
    catalog.onSunset((index, changes) => bus.publish(index, changes));
  }

  /** `POST /tools/register` and `PUT /tools/{name}`; `pathName` must match the body's name. */
  putTool(input: ToolPutBody, { pathName, actor, condition }: ToolWriteOptions = {}): Promise<PutResult<ToolRecord>> {
    return this.#commit.enqueue(() => this.#commands.putTool(input, { pathName, condition, ...writer(actor) }));
  }

  deleteTool(name: string, { actor, condition }: DeleteOptions = {}): Promise<ToolRecord> {
    return this.#commit.enqueue(() => this.#commands.deleteTool(name, { condition, ...writer(actor) }));
  }

  deprecateTool(name: string, body: DeprecationBody | null, { actor, condition }: DeleteOptions = {}): Promise<ToolRecord> {
    return this.#commit.enqueue(() => this.#commands.deprecateTool(name, body, { condition, ...writer(actor) }));
  }

  putService(input: ToolServicePutBody, { pathId, actor, condition }: ServiceWriteOptions = {}): Promise<PutResult<ServiceRecord>> {
    return this.#commit.enqueue(() => this.#commands.putService(input, { pathId, condition, ...writer(actor) }));
  }

  deleteService(id: string, { actor, condition }: DeleteOptions = {}): Promise<ServiceRecord> {
    return this.#commit.enqueue(() => this.#commands.deleteService(id, { condition, ...writer(actor) }));
  }

  /** `PUT /mcp-servers/{id}`; its tools follow with the server's next sync. */
  putMcpServer(input: McpServerPutBody, { pathId, actor }: KeyedWriteOptions = {}): Promise<PutResult<McpServerRecord>> {
    return this.#commit.enqueue(() => this.#commands.putMcpServer(input, pathId, actor));
  }

  /** Deletes an MCP server and every tool of it, in one write. */
  deleteMcpServer(id: string, actor?: Actor): Promise<{ server: McpServerRecord; tools: ToolRecord[] }> {
    return this.#commit.enqueue(() => this.#commands.deleteMcpServer(id, actor));
  }

  /**
   * Brings an MCP server's stored tools in line with `wanted`, listed while the server's record
   * was at `serverIndex`: one write, or none when nothing changed. Planned inside the batch, so
   * that it sees the writes queued before it.
   */
  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[]): Promise<McpSyncResult> {
    return this.#commit.enqueue(() => this.#commands.syncMcpTools(serverId, serverIndex, wanted));
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
    return this.#commit.enqueue(() => this.#commands.syncMcpTools(serverId, serverIndex, part, listed ?? null));
  }

  /** Accepts pending versions of a server's tools (issue 29): one write, all or none. */
  acceptMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult> {
    return this.#commit.enqueue(() => this.#commands.acceptMcpChanges(serverId, changes, actor));
  }

  /** Rejects pending versions of a server's tools (issue 29): agents keep what they are served. */
  rejectMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult> {
    return this.#commit.enqueue(() => this.#commands.rejectMcpChanges(serverId, changes, actor));
  }

  /** `PUT /openapi-sources/{id}` (issue 30): the source and its converted operations' tools, one write. */
  putOpenApiSource(input: OpenApiSourceInput, actor?: Actor): Promise<OpenApiSourceResult> {
    return this.#commit.enqueue(() => this.#sources.put(input, actor));
  }

  /** Deletes a source and its tools, in one write. */
  deleteOpenApiSource(id: string, actor?: Actor): Promise<{ record: OpenApiSourceRecord; deleted: string[] }> {
    return this.#commit.enqueue(() => this.#sources.delete(id, actor));
  }

  /** A single HTTP tool's own outbound credential (issue 30), sealed and bound to the tool's origin now. */
  setToolCredential(name: string, credential: OutboundCredential, actor?: Actor): Promise<ToolCredentialRecord> {
    return this.#commit.enqueue(() => setToolCredential(this.#store, this.#commit, name, credential, actor));
  }

  removeToolCredential(name: string, actor?: Actor): Promise<void> {
    return this.#commit.enqueue(() => removeToolCredential(this.#store, this.#commit, name, actor));
  }

  /** A re-read of a source's documentUrl (issue 30): removals at once, the rest written or held for review by the source's policy. */
  refreshOpenApiSource(input: OpenApiRefreshInput, actor?: Actor): Promise<OpenApiRefreshResult> {
    return this.#commit.enqueue(() => this.#sources.refresh(input, actor));
  }

  /** An operator accepts pending versions of a source's tools, by tool and digest. */
  acceptOpenApiChanges(id: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult> {
    return this.#commit.enqueue(() => this.#sources.accept(id, changes, actor));
  }

  rejectOpenApiChanges(id: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult> {
    return this.#commit.enqueue(() => this.#sources.reject(id, changes, actor));
  }

  /** Runs alone and in slices, so that reads keep answering (src/registry/import-jobs.ts). */
  importBundle(input: unknown, actor?: Actor): Promise<ImportSummary> {
    return this.#commit.enqueueExclusive(() => this.#imports.importSliced(input, actor));
  }

  /**
   * Replicated mode (src/replication/): applies one message of the replication topic, decided
   * here as a local write would be, with the message's index and time (ReplicatedApply.apply).
   */
  applyReplicated(event: ReplicationEvent, pin: Pin, actor?: Actor, refusal?: RegistryError): Promise<Outcome> {
    return this.#replicated.apply(event, pin, actor, refusal);
  }

  /** Replicated mode: moves the position past a message refused before anything in it was decided. */
  refuseReplicated(pin: Omit<Pin, 'at'>, refusal: RegistryError, audit: AuditEntryInput): Promise<Outcome> {
    return this.#replicated.refuse(pin, refusal, audit);
  }

  /** Replicated mode: the write time after a restart (the last one given out, saved with the position). */
  restoreStamp(lastAt: string): void {
    this.#commit.restoreStamp(lastAt);
  }

  /** Calls `observer` after every group commit (its size, time and outcome); returns the unsubscribe. */
  observeCommits(observer: CommitObserver): () => void {
    return this.#commit.observeCommits(observer);
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
}
