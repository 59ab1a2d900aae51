/**
 * What the registry keeps: stored descriptors with their registry metadata, change-log rows,
 * tool-call records and audit entries. Storage fills these; every layer above reads them.
 */
import type { z } from 'zod';
import type { McpServerRecordSchema, ServiceRecordSchema, ToolRecordSchema } from './admin-api.js';
import type { McpServer } from './mcp-schemas.js';
import type { ToolDescriptor, ToolService } from './schemas.js';
import type { ToolDeprecation } from './deprecation.js';

/**
 * A record's registry metadata, as the admin answers spell it (ToolRecordSchema and the
 * others in api.ts): one spelling of each field from the wire to the store.
 */
type Metadata<T extends Record<MetadataField, unknown>> = Pick<T, MetadataField>;
type MetadataField = 'status' | 'index' | 'createdIndex' | 'updatedAt';

export type ToolStatus = z.output<typeof ToolRecordSchema>['status'];

export interface ServiceRecord extends Metadata<z.output<typeof ServiceRecordSchema>> {
  id: string;
  descriptor: ToolService;
  /** Who announced it (`announcer:<subject>`, src/announce/); absent for an operator's. */
  owner?: string;
}

/** An upstream MCP server; its credential stays in the store, only whether it has one is here. */
export interface McpServerRecord extends Metadata<z.output<typeof McpServerRecordSchema>> {
  id: string;
  descriptor: McpServer;
  hasCredential: boolean;
}

export interface ToolRecord extends Metadata<z.output<typeof ToolRecordSchema>> {
  name: string;
  kind: z.output<typeof ToolRecordSchema>['kind'];
  serviceId: string | null;
  /** As stored: the answers declare it as StoredToolDescriptor (src/model/descriptors.ts). */
  descriptor: ToolDescriptor;
  /** Who announced it (`announcer:<subject>`, src/announce/); absent for an operator's. */
  owner?: string;
  /** Issue 34: set by `PUT /tools/{name}/deprecation`; `status` is then `deprecated`. */
  deprecation?: ToolDeprecation;
}

export interface PutResult<T> {
  record: T;
  created: boolean;
}

/** One descriptor a committed write touched, with the scopes that granted it before and after. */
export interface Change {
  kind: 'tool' | 'tool-service';
  name: string;
  op: 'upsert' | 'delete';
  /** null where it did not exist before (or was deleted). */
  scopesBefore: readonly string[] | null;
  scopesAfter: readonly string[] | null;
}

/** One row of the stored change log. */
export interface ChangeRecord extends Change {
  seq: number;
  index: number;
}

/** Told after every committed write, with the registry index and what it changed. */
export type ChangeListener = (index: number, changes: readonly Change[]) => void;

/** `cancelled`: the caller hung up and the call was abandoned. The order is that of stored per-minute counts (migration 017). */
export const CALL_OUTCOMES = ['ok', 'service-error', 'timeout', 'unavailable', 'denied', 'cancelled'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

export interface CallRecord {
  at: string;
  tool: string;
  sub: string | null;
  outcome: CallOutcome;
  durationMs: number;
  /** Issue 34: the tool was deprecated when called (counted in /stats, not stored). */
  deprecated?: boolean;
}

export type AuditOutcome = 'ok' | 'denied' | 'invalid' | 'error';

export interface AuditEntryInput {
  at: string;
  sub: string | null;
  iss: string | null;
  /** Client address. */
  client: string | null;
  /** e.g. `tool.put`, `tool.delete`, `tool-service.put`, `import`, `tool.invoke`. */
  action: string;
  /** Tool name or service id, where there is one. */
  target: string | null;
  outcome: AuditOutcome;
  status: number;
  detail: string | null;
  requestId: string | null;
}

export interface AuditEntry extends AuditEntryInput {
  id: number;
  registryIndex: number | null;
}

/** Who is writing, for the audit log. */
export interface Actor {
  sub: string | null;
  iss: string | null;
  client: string | null;
  requestId: string | null;
  /** A tool service announcing itself (src/announce/): it writes only what it owns. */
  announcer?: string;
}
