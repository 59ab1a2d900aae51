/**
 * Replicated mode's wire shape (src/replication/): one message on the replication topic per
 * registry write, JSON, keyed `kind/name` so that a compacted reader keeps the latest write of
 * each descriptor. Every replica applies the topic in order with the same validation, so a write
 * carries what its HTTP caller sent (not a decided record): the topic's order decides conflicts.
 * Version 1: a message that is not a version-1 write is skipped, the same way on every replica.
 */
import { z } from 'zod';
import { WriteConditionSchema } from './write-condition.js';
import { isObject } from './json-object.js';

export const REPLICATION_OPS = [
  'tool.put',
  'tool.delete',
  /** Issue 34: a tool's deprecation set (`body`: the DeprecationBody as sent) or lifted. */
  'tool.deprecate',
  'tool.undeprecate',
  'tool-service.put',
  'tool-service.delete',
  'mcp-server.put',
  'mcp-server.delete',
  'mcp-server.sync',
  /** Issue 29: an operator accepts, or rejects, pending versions of a server's tools (`body`: the changes, by tool and digest). */
  'mcp-server.accept',
  'mcp-server.reject',
  'import',
  /** One part of an import too big for one message: parts are staged, the last one applies the whole import. */
  'import.part',
  /** A replica's "where is the end?": it has caught up once it reads its own marker back. */
  'marker',
] as const;

export type ReplicationOp = (typeof REPLICATION_OPS)[number];

export const ReplicationEventSchema = z.object({
  v: z.literal(1),
  op: z.enum(REPLICATION_OPS),
  /** The write's id: how the replica that published it finds its waiting caller. */
  write: z.string().min(1).max(100),
  /** The replica that published it (REPLICA_ID). */
  origin: z.string().min(1).max(200),
  /** The writer's clock; every replica stamps the write with it (never before the last stamp). */
  at: z.iso.datetime(),
  /** The name or id from the URL path (PUT, DELETE, a sync's server), when there is one. */
  target: z.string().max(1000).optional(),
  /** What the caller sent (a descriptor, a server, a bundle). */
  body: z.unknown().optional(),
  /** Who owns what the write makes: the announcer (src/announce/), absent for an operator. */
  owner: z.string().min(1).max(300).optional(),
  /** tool.put, tool.delete, tool.deprecate, tool.undeprecate, tool-service.put, tool-service.delete: If-Match / If-None-Match, checked against the tool or service where the write is applied. */
  condition: WriteConditionSchema.optional(),
  /** mcp-server.sync: the server record's index the tools were listed at. */
  serverIndex: z.number().int().nonnegative().optional(),
  /**
   * mcp-server.sync: a slice of a long list (issue 29), which deletes nothing; its last slice
   * gives `listed`, every name of the list, and deletes the server's tools not in it.
   */
  slice: z.literal(true).optional(),
  listed: z.array(z.string().max(256)).max(100_000).optional(),
  /** import.part: this part's number, from 0; parts are published in order. */
  part: z.number().int().nonnegative().optional(),
  /** import.part: how many parts the import has (the same in every part). */
  parts: z.number().int().positive().optional(),
  /** import.part: this part's slice of the import's JSON text, cut between characters; the parts joined in order are the bundle. */
  chunk: z.string().optional(),
});

export type ReplicationEvent = z.infer<typeof ReplicationEventSchema>;

/**
 * An MCP server's credential as a replicated `mcp-server.put` carries it, in place of
 * `{ "bearer": ... }`: AES-256-GCM under the key of REPLICATION_SECRET_FILE
 * (src/replication/credential-seal.ts).
 */
export const SealedCredentialSchema = z.strictObject({
  /** base64 of the 12-byte IV, the ciphertext of the bearer (UTF-8) and the 16-byte GCM tag; the AAD is the JSON of ["tool-registry mcp-server credential v1", write, target]. */
  sealed: z.string().min(1).max(16_384),
  /** The key's id: hex of the first 8 bytes of HMAC-SHA256(key, "tool-registry replication key id"). */
  kid: z.string().regex(/^[0-9a-f]{16}$/),
});
export type SealedCredential = z.infer<typeof SealedCredentialSchema>;

/** Limits of imports sent in parts: IMPORT_PART_LIMITS below. */
export interface ImportPartLimits {
  readonly maxParts: number;
  readonly maxImportBytes: number;
  readonly maxStagedBytes: number;
  readonly orphanAfterMs: number;
}

/**
 * Limits of an import sent in parts (src/replication/import-parts.ts), the same on every
 * replica, so that each refuses or drops parts the same way: they are part of the message
 * format, not settings.
 */
export const IMPORT_PART_LIMITS: ImportPartLimits = {
  /** Most parts one import may have. */
  maxParts: 10_000,
  /** Most bytes (UTF-8) of JSON one import may join to: far above IMPORT_BODY_LIMIT's default of 64 MiB, and under V8's longest string. */
  maxImportBytes: 256 * 1024 * 1024,
  /** Most bytes staged at once, every unfinished import together: a part past it is refused. */
  maxStagedBytes: 512 * 1024 * 1024,
  /**
   * A staged part is dropped once a message stamped this long after it is applied: its writer
   * died or lost the broker mid-import. Its writer publishes the parts back to back, within
   * seconds; ten minutes also absorbs clock skew between replicas (stamps are writers' clocks).
   */
  orphanAfterMs: 10 * 60 * 1000,
};

/**
 * How far a message's stamp (`at`, its writer's clock) may be ahead of the time the broker took
 * it (its publish time): further, and every replica refuses it (src/replication/message-auth.ts).
 * Stamps never go back, so one message stamped a year ahead would stamp every later write on
 * every replica with that year. Part of the message format, not a setting: every replica must
 * decide the same way, and a replica's own clock would not (a replica reading the topic a day
 * later would find the same message in the past).
 */
export const MAX_STAMP_AHEAD_MS = 5 * 60 * 1000;

/**
 * Why a replica refused a message without applying it (the replication state in /readyz, the
 * metrics' `reason` label, the audit entry): no MAC, a key id it holds no key for, a MAC that
 * does not match, a stamp more than MAX_STAMP_AHEAD_MS ahead of the publish time, no publish time.
 */
export const REFUSAL_REASONS = ['unsigned', 'unknown-key', 'bad-mac', 'stamp-ahead', 'no-publish-time'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** The message key: `tool/<name>`, `tool-service/<id>`, `mcp-server/<id>`, `import/<write>` (an import and each of its parts), `marker/<replica>`. */
export function replicationKey(event: ReplicationEvent): string {
  switch (event.op) {
    case 'tool.put':
    case 'tool.delete':
      return `tool/${event.target ?? nameOf(event.body) ?? event.write}`;
    case 'tool.deprecate':
    case 'tool.undeprecate':
      // Not the tool's key: a compacted reader must keep the tool's last put beside its deprecation.
      return `tool-deprecation/${event.target ?? nameOf(event.body) ?? event.write}`;
    case 'tool-service.put':
    case 'tool-service.delete':
      return `tool-service/${event.target ?? idOf(event.body) ?? event.write}`;
    case 'mcp-server.put':
    case 'mcp-server.delete':
    case 'mcp-server.sync':
      return `mcp-server/${event.target ?? idOf(event.body) ?? event.write}`;
    case 'mcp-server.accept':
    case 'mcp-server.reject':
      // Not the server's key: a compacted reader keeps every review, and the server's own last write.
      return `mcp-server-review/${event.target ?? ''}/${event.write}`;
    case 'import':
    case 'import.part':
      // Every part of one import under one key: they stay in one order wherever the topic goes.
      return `import/${event.write}`;
    case 'marker':
      return `marker/${event.origin}`;
  }
}

/** Whether a message is the last part of an import sent in parts: the one that applies the import. */
export function isLastImportPart(event: ReplicationEvent): boolean {
  return event.op === 'import.part' && event.part !== undefined && event.parts !== undefined && event.part === event.parts - 1;
}

const stringMember = (body: unknown, key: string): string | undefined => {
  if (!isObject(body)) return undefined;
  const value = body[key];
  return typeof value === 'string' ? value : undefined;
};
const nameOf = (body: unknown) => stringMember(body, 'name');
const idOf = (body: unknown) => stringMember(body, 'id');
