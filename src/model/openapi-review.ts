/**
 * Reviewed re-reads of OpenAPI sources (issue 30): what a re-read of a source's `documentUrl`
 * would change, held for an operator as upstream MCP servers' changes are (issue 29). A pending
 * version is the whole tool an operation would become: where its calls go and its scopes count
 * as much as its text, since a re-read document can move calls to another host or open a tool.
 * Pure.
 */
import { z } from 'zod';
import { CountSchema, DateTimeSchema } from './api.js';
import { DigestSchema } from './admin-api.js';
import { jsonDiff } from './json-diff.js';
import { ToolNameSchema } from './schemas.js';

/** What waits for review of one operation: the tool body it becomes, where it is in the document, its `deprecated` mark. */
export interface OpenApiPendingTool {
  pointer: string;
  deprecated: boolean;
  body: Record<string, unknown>;
}

/** A pending version as stored. */
export interface OpenApiPendingRow {
  name: string;
  digest: string;
  descriptor: OpenApiPendingTool;
  acceptedDigest: string | null;
  seenAt: string;
  rejectedAt: string | null;
}

/** The answer's entry for a pending version, against `accepted` (the body of the tool agents are served, if any). */
export function openApiPendingBody(row: OpenApiPendingRow, accepted: Record<string, unknown> | undefined) {
  const diff = jsonDiff(accepted ?? {}, row.descriptor.body);
  return {
    tool: row.name,
    pointer: row.descriptor.pointer,
    digest: row.digest,
    acceptedDigest: row.acceptedDigest,
    change: row.acceptedDigest === null ? ('added' as const) : ('changed' as const),
    deprecated: row.descriptor.deprecated,
    seenAt: row.seenAt,
    rejectedAt: row.rejectedAt,
    proposed: row.descriptor.body,
    diff: diff.ops,
    diffTruncated: diff.truncated,
  };
}

const OpenApiPendingChangeSchema = z
  .strictObject({
    tool: ToolNameSchema.describe("The tool's name."),
    pointer: z.string().describe("The operation's JSON pointer in the document read: `/paths/~1pet~1{petId}/get`."),
    digest: DigestSchema.describe('The digest of the pending version: what accepting or rejecting names.'),
    acceptedDigest: DigestSchema.nullable().describe('The digest of the tool agents are served now; null for a new tool.'),
    change: z.enum(['added', 'changed']),
    deprecated: z.boolean().describe('Whether the document marks the operation deprecated.'),
    seenAt: DateTimeSchema.describe('When a re-read first found this version.'),
    rejectedAt: DateTimeSchema.nullable().describe('When an operator rejected this version (listed only with `rejected=true`).'),
    proposed: z.record(z.string(), z.unknown()).describe('The HTTP tool the operation would become, as `PUT /tools/{name}` takes it.'),
    diff: z
      .array(
        z.strictObject({
          op: z.enum(['add', 'remove', 'replace']),
          pointer: z.string().describe('A JSON pointer into the tool: `/description`, `/target/path`, `/scopes/0`.'),
          old: z.unknown().optional(),
          new: z.unknown().optional(),
        }),
      )
      .describe('From the tool agents are served to the pending one; every field is an `add` for a new tool.'),
    diffTruncated: z.boolean().describe('The versions differ in more places than the diff lists (200).'),
  })
  .meta({
    id: 'OpenApiPendingChange',
    description: 'A version of an OpenAPI source tool, from a re-read of its document, that waits for an operator.',
  });

export const OpenApiPendingListSchema = z
  .strictObject({
    changes: z.array(OpenApiPendingChangeSchema),
    pending: CountSchema.describe('Every version of the source that waits for an operator (rejected ones left out).'),
    next: z.string().nullable().describe('Pass as `after` for the next page; null on the last.'),
  })
  .meta({ id: 'OpenApiPendingList' });

/** What a re-read did: tools written at once (policy `auto`), removed at once, held for review, unchanged. */
export const OpenApiRefreshResultSchema = z
  .strictObject({
    id: z.string(),
    index: z.number().int().nullable().describe('Registry index of the write, or null when no tool agents see changed.'),
    title: z.string(),
    version: z.string(),
    written: z.array(ToolNameSchema).describe('Tools written at once: new or changed, under the policy `auto`.'),
    deleted: z.array(ToolNameSchema).describe('Tools the document no longer has: deleted at once, under either policy.'),
    pending: z.array(ToolNameSchema).describe('New or changed tools held for review (policy `review`), rejected versions left out.'),
    unchanged: CountSchema.describe('Operations whose tool is as served (or pending, or rejected) already.'),
    skipped: z.array(z.strictObject({ pointer: z.string(), reason: z.string() })).describe('Operations not made into tools, and why.'),
  })
  .meta({ id: 'OpenApiRefreshResult', description: 'What reading a source’s document again changed.' });
