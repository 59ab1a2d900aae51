/**
 * The write side as the fronts use it (routes, the MCP sync, TrustGraph adoption): the
 * single-process RegistryService, or in replicated mode the Replicator (src/replication/), which
 * publishes each write to the replication topic and answers once this replica has applied it.
 */
import type { McpServerPutBody, ToolPutBody, ToolServicePutBody } from '../model/descriptors.js';
import type { McpTool } from '../model/mcp-schemas.js';
import type { ToolService } from '../model/schemas.js';
import type { WriteCondition } from '../model/write-condition.js';
import type { Actor, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { CommitObserver } from './commit-telemetry.js';
import type { ImportSummary, McpSyncResult } from './registry-service.js';
import type { ReviewedChange, ReviewResult } from './write-commands.js';
import type { OpenApiRefreshInput, OpenApiRefreshResult, OpenApiSourceInput, OpenApiSourceResult } from './openapi-source-commands.js';
import type { OpenApiSourceRecord } from '../model/openapi-source.js';
import type { OutboundCredential } from '../model/outbound-credential.js';
import type { ToolCredentialRecord } from '../store/tool-credential-rows.js';
import type { DeprecationBody } from '../model/deprecation.js';

/** A tool write's optional parts: POST /tools/register gives none but the actor. */
export interface ToolWriteOptions {
  /** From a PUT's URL: must match the body's name, if it gives one. */
  pathName?: string | undefined;
  actor?: Actor | undefined;
  /** If-Match / If-None-Match, checked against the stored tool where the write is applied. */
  condition?: WriteCondition | undefined;
}

/** A delete's (or a deprecation's) optional parts: a tool's, a tool service's. */
export interface DeleteOptions {
  actor?: Actor | undefined;
  /** If-Match, checked against the stored record where the write is applied. */
  condition?: WriteCondition | undefined;
}

/** A service's or an MCP server's write: `pathId`, from a PUT's URL, must match the body's `id`, if it gives one. */
export interface KeyedWriteOptions {
  pathId?: string | undefined;
  actor?: Actor | undefined;
}

/** A tool service's write: If-Match / If-None-Match too, checked against the stored service where the write is applied. */
export interface ServiceWriteOptions extends KeyedWriteOptions {
  condition?: WriteCondition | undefined;
}

export interface RegistryWrites {
  putTool(input: ToolPutBody, options?: ToolWriteOptions): Promise<PutResult<ToolRecord>>;
  deleteTool(name: string, options?: DeleteOptions): Promise<ToolRecord>;
  /** Issue 34: sets (a body) or lifts (null) a live tool's deprecation. */
  deprecateTool(name: string, body: DeprecationBody | null, options?: DeleteOptions): Promise<ToolRecord>;
  putService(input: ToolServicePutBody, options?: ServiceWriteOptions): Promise<PutResult<ServiceRecord>>;
  deleteService(id: string, options?: DeleteOptions): Promise<ServiceRecord>;
  putMcpServer(input: McpServerPutBody, options?: KeyedWriteOptions): Promise<PutResult<McpServerRecord>>;
  deleteMcpServer(id: string, actor?: Actor): Promise<{ server: McpServerRecord; tools: ToolRecord[] }>;
  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[]): Promise<McpSyncResult>;
  /**
   * A slice of a large sync (issue 29): the tools of `part` that changed, deleting nothing but,
   * with `listed` (the last slice), the server's tools not in it. Absent where a sync must be
   * one write (test doubles), which then writes the list whole.
   */
  syncMcpToolsPart?(serverId: string, serverIndex: number, part: readonly McpTool[], listed?: ReadonlySet<string>): Promise<McpSyncResult>;
  /** Issue 29: an operator accepts or rejects pending versions of an upstream server's tools, by tool and digest. */
  acceptMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult>;
  rejectMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult>;
  /** Issue 30: an OpenAPI source and the tools of its kept operations, converted by the caller, in one write. */
  putOpenApiSource(input: OpenApiSourceInput, actor?: Actor): Promise<OpenApiSourceResult>;
  deleteOpenApiSource(id: string, actor?: Actor): Promise<{ record: OpenApiSourceRecord; deleted: string[] }>;
  /** Issue 30: a single HTTP tool's own outbound credential. */
  setToolCredential(name: string, credential: OutboundCredential, actor?: Actor): Promise<ToolCredentialRecord>;
  removeToolCredential(name: string, actor?: Actor): Promise<void>;
  /** A re-read of a source's documentUrl; and an operator's review of what re-reads held back. */
  refreshOpenApiSource(input: OpenApiRefreshInput, actor?: Actor): Promise<OpenApiRefreshResult>;
  acceptOpenApiChanges(id: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult>;
  rejectOpenApiChanges(id: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult>;
  importBundle(input: unknown, actor?: Actor): Promise<ImportSummary>;
  observeCommits(observer: CommitObserver): () => void;
  /** Proves the database still takes a write (readiness); throws when it does not. */
  probeWrite(): void;
  exportBundle(): { 'tool-services': ToolService[]; tools: unknown[] };
}
