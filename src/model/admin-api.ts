/**
 * The admin side's wire shapes: stored records as admins read them, upstream MCP servers, the
 * audit log, and bulk import and export. One zod schema each, as in api.ts (the read side's).
 */
import { z } from 'zod';
import { AuditOutcomeSchema, CountSchema, DateTimeSchema, ToolKindSchema, ToolStatusSchema } from './api.js';
import { StoredToolDescriptorSchema, ToolBodySchema, ToolServiceBodySchema } from './descriptors.js';
import { McpServerSchema } from './mcp-schemas.js';
import { ToolDeprecationSchema } from './deprecation.js';
import { ServiceIdSchema, ToolNameSchema, ToolServiceSchema } from './schemas.js';
// ---------------------------------------------------------------------------------------------
// Records (admin views)

const WriteIndexSchema = z.number().int().min(1);

export const ToolRecordSchema = z
  .strictObject({
    name: ToolNameSchema,
    kind: ToolKindSchema,
    status: ToolStatusSchema,
    index: WriteIndexSchema.describe('Registry index of the last write that touched the tool.'),
    createdIndex: WriteIndexSchema.describe('Registry index of the write that (re)created the tool.'),
    updatedAt: DateTimeSchema,
    deprecation: ToolDeprecationSchema.optional(),
    owner: z
      .string()
      .optional()
      .describe(
        "Issue 34: what alone writes the tool, where it is not operators: `openapi-source:<id>` (an OpenAPI source's operation) or `announcer:<subject>` (a tool service that announced it). A tool of an MCP server names its server in `descriptor.server`, a message-bus tool its service in `descriptor.service`.",
      ),
    descriptor: StoredToolDescriptorSchema,
  })
  .meta({ id: 'ToolRecord', description: 'The admin view of a stored tool.' });

export const ServiceRecordSchema = z
  .strictObject({
    id: ServiceIdSchema,
    status: z.enum(['active', 'deleted']),
    index: WriteIndexSchema.describe('Registry index of the last write that touched the service.'),
    createdIndex: WriteIndexSchema.describe('Registry index of the write that (re)created the service.'),
    updatedAt: DateTimeSchema,
    descriptor: ToolServiceSchema,
  })
  .meta({ id: 'ServiceRecord', description: 'The admin view of a stored tool service.' });

export const ToolServiceListSchema = z.strictObject({ toolServices: z.array(ServiceRecordSchema) }).meta({ id: 'ToolServiceList' });

// ---------------------------------------------------------------------------------------------
// Upstream MCP servers (admin only)

export const McpServerIdParamsSchema = z.object({
  id: z.string().describe("The MCP server's id (1 to 128 letters, digits, `_`, `.` or `-`; any other id is answered like an unknown one)."),
});

const McpServerViewSchema = McpServerSchema.extend({
  credential: z
    .strictObject({ set: z.literal(true) })
    .optional()
    .describe('Present when a credential is stored; the credential itself is never shown.'),
}).meta({ id: 'McpServer', description: 'A stored MCP server, its credential hidden.' });

const McpUpstreamStatusSchema = z
  .strictObject({
    state: z
      .enum(['connecting', 'connected', 'down'])
      .describe(
        '`down`: the server cannot be reached; calls to its tools answer `503` until it can, which the registry retries with backoff.',
      ),
    lastSyncAt: DateTimeSchema.nullable().describe('When its tool list was last read and stored.'),
    lastError: z.string().nullable().describe('Why the last connection or listing failed, if it did.'),
    nextRefreshAt: DateTimeSchema.nullable().describe(
      'When its next full refresh is due (`refreshIntervalS`, default MCP_UPSTREAM_REFRESH_S); null while it is not connected. A `list_changed` refreshes it at once.',
    ),
    tools: z.number().int().min(0).describe('Its live tools in the registry.'),
    pending: z
      .number()
      .int()
      .min(0)
      .describe('Versions of its tools that wait for an operator (`GET /mcp-servers/{id}/pending`): policy `review` only.'),
    skipped: z
      .array(z.strictObject({ name: z.string().describe("The upstream's tool name."), reason: z.string() }))
      .describe(
        'Upstream tools not listed: a name that is no valid tool name with the prefix, one another tool has, or a descriptor the registry refuses.',
      ),
  })
  .meta({ id: 'McpUpstreamStatus', description: 'What this registry process knows of its connection to the server.' });

export const McpServerRecordSchema = z
  .strictObject({
    id: ServiceIdSchema,
    status: z.enum(['active', 'deleted']),
    index: WriteIndexSchema.describe('Registry index of the last write that touched the server.'),
    createdIndex: WriteIndexSchema.describe('Registry index of the write that (re)created the server.'),
    updatedAt: DateTimeSchema,
    descriptor: McpServerViewSchema,
    upstream: McpUpstreamStatusSchema.optional().describe('Absent on a tombstone.'),
  })
  .meta({ id: 'McpServerRecord', description: 'The admin view of an upstream MCP server.' });

export const McpServerListSchema = z.strictObject({ mcpServers: z.array(McpServerRecordSchema) }).meta({ id: 'McpServerList' });

// ---------------------------------------------------------------------------------------------
// Review of upstream tools (issue 29; admin only)

export const DigestSchema = z
  .string()
  .regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" and 64 lowercase hex digits')
  .describe(
    "SHA-256 of the canonical JSON (keys sorted) of the tool's version: of an upstream MCP server's tool, what agents are served (name, title, description, input and output schemas); of an OpenAPI source's tool, the whole tool, where its calls go and its scopes included.",
  );

/**
 * One change to accept or reject: the served name and the digest of the version the operator
 * read. Other members are ignored, so that the entries of `GET .../pending` can be sent back
 * as they are (`jq '{changes: .changes}'`).
 */
export const ReviewChangesSchema = z
  .array(
    z.object({
      tool: ToolNameSchema.describe("The tool's served name (the server's or source's prefix and the upstream's or operation's name)."),
      digest: DigestSchema,
    }),
  )
  .min(1)
  .max(1000);

export const ReviewBodySchema = z.strictObject({ changes: ReviewChangesSchema }).meta({
  id: 'McpReview',
  description:
    'Pending changes, each by its tool and the digest it was listed with: a version that moved again meanwhile is refused (409).',
});

export const ReviewResultSchema = z
  .strictObject({
    changes: z.array(
      z.strictObject({
        tool: ToolNameSchema,
        digest: DigestSchema,
        acceptedDigest: DigestSchema.nullable().describe('The version agents were served before; null for a tool that was not served.'),
      }),
    ),
  })
  .meta({ id: 'McpReviewResult', description: 'The changes accepted or rejected.' });

const ServedVersionSchema = z.strictObject({
  title: z.string().optional(),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
});

const PendingChangeSchema = z
  .strictObject({
    tool: ToolNameSchema.describe('The served name.'),
    upstreamName: z.string().describe("The tool's name at the upstream."),
    digest: DigestSchema.describe('The digest of the pending version: what accepting or rejecting names.'),
    acceptedDigest: DigestSchema.nullable().describe('The digest of the version agents are served now; null for a new tool.'),
    change: z.enum(['added', 'changed']),
    seenAt: DateTimeSchema.describe('When the upstream first listed this version.'),
    rejectedAt: DateTimeSchema.nullable().describe('When an operator rejected this version (listed only with `rejected=true`).'),
    proposed: ServedVersionSchema.describe('What agents would be served: its text and schemas.'),
    diff: z
      .array(
        z.strictObject({
          op: z.enum(['add', 'remove', 'replace']),
          pointer: z.string().describe('A JSON pointer into the served version: `/description`, `/inputSchema/properties/city`.'),
          old: z.unknown().optional(),
          new: z.unknown().optional(),
        }),
      )
      .describe('From the accepted version to the pending one; every field is an `add` for a new tool.'),
    diffTruncated: z.boolean().describe('The versions differ in more places than the diff lists (200).'),
  })
  .meta({ id: 'McpPendingChange', description: 'A version of an upstream tool that waits for an operator.' });

export const PendingListSchema = z
  .strictObject({
    changes: z.array(PendingChangeSchema),
    pending: CountSchema.describe('Every version of the server that waits for an operator (rejected ones left out).'),
    next: z.string().nullable().describe('Pass as `after` for the next page; null on the last.'),
  })
  .meta({ id: 'McpPendingList' });

export const PendingQuerySchema = z.object({
  after: z.string().max(256).optional().describe('Only changes of tools named after this (the `next` of the page before).'),
  limit: z.coerce.number().int().min(1).max(500).default(50).describe('At most this many changes (1 to 500).'),
  rejected: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true')
    .describe('`true`: rejected versions are listed too.'),
});

// ---------------------------------------------------------------------------------------------
// Audit

const AuditEntrySchema = z
  .strictObject({
    id: z.number().int(),
    at: DateTimeSchema,
    sub: z.string().nullable().describe('The token subject; null when anonymous.'),
    iss: z.string().nullable(),
    client: z.string().nullable().describe('Client address.'),
    action: z.string(),
    target: z.string().nullable(),
    outcome: AuditOutcomeSchema,
    status: z.number().int().describe('The HTTP status the request got.'),
    detail: z.string().nullable().describe('A summary, or the error code of a refusal.'),
    registryIndex: z.number().int().nullable().describe('The registry index a successful write committed.'),
    requestId: z.string().nullable(),
  })
  .meta({ id: 'AuditEntry' });

export const AuditPageSchema = z
  .strictObject({
    entries: z.array(AuditEntrySchema),
    nextCursor: z.string().nullable().describe('Pass back as `cursor` for the next page; `null` on the last.'),
  })
  .meta({ id: 'AuditPage' });

// ---------------------------------------------------------------------------------------------
// Bulk

const ImportBundleDescriptorSchema = z
  .strictObject({
    // Said in words, as for every request body (src/http/openapi/transform.ts): zod writes no
    // `default` for these two lists, so describeRequestDefaults has none to move.
    'tool-services': z.array(ToolServiceBodySchema).max(200_000).default([]).describe('Default: `[]`.'),
    tools: z.array(ToolBodySchema).max(200_000).default([]).describe('Default: `[]`.'),
  })
  .meta({
    id: 'ImportBundle',
    description:
      'Tool services and tools to create or replace in one transaction. Items are checked one by one; ids and names must be unique within the bundle.',
  });

export const ExportBundleSchema = z
  .strictObject({
    'tool-services': z.array(ToolServiceSchema),
    tools: z.array(StoredToolDescriptorSchema),
  })
  .meta({ id: 'ExportBundle', description: 'Every live tool service and tool, as stored; valid as an `ImportBundle`.' });

const ImportCountsSchema = z.strictObject({ created: CountSchema, replaced: CountSchema }).meta({ id: 'ImportCounts' });

export const ImportSummarySchema = z
  .strictObject({
    index: WriteIndexSchema.describe('The registry index of the import.'),
    toolServices: ImportCountsSchema,
    tools: ImportCountsSchema,
    skipped: z
      .array(z.strictObject({ item: z.string().describe('`type/key`, or a config type'), reason: z.string() }))
      .optional()
      .describe(
        'TrustGraph dumps only: the items left out (tools of kinds other than `tool-service`, other config types), at most 100 listed.',
      ),
  })
  .meta({ id: 'ImportSummary' });

const TrustGraphItemsInputSchema = z.record(z.string(), z.record(z.string(), z.union([z.string(), z.record(z.string(), z.unknown())])));

/** What `POST /import` takes: a registry bundle, or a TrustGraph config dump (told apart by its keys). */
export const ImportBodySchema = z
  .union([
    ImportBundleDescriptorSchema,
    z
      .looseObject({ source_workspace: z.string().optional(), source_version: z.number().optional(), config: TrustGraphItemsInputSchema })
      .meta({
        id: 'TrustGraphDumpToImport',
        description:
          'A dump as `tg-export-workspace-config` writes it (or `GET /export?format=trustgraph`): `config` maps `tool-service` and `tool` keys to descriptors as JSON text (objects are taken too).',
      }),
    TrustGraphItemsInputSchema.meta({
      id: 'TrustGraphItemsToImport',
      description: 'The bare `{type: {key: value}}` form, with a `tool-service` or `tool` member.',
    }),
  ])
  .meta({ id: 'ImportBody' });

export const ExportQuerySchema = z.strictObject({
  format: z
    .enum(['registry', 'trustgraph'])
    .default('registry')
    .describe(
      "`registry` (the default): an `ImportBundle`. `trustgraph`: the tool services and message-bus tools as TrustGraph's config service stores them, in `tg-export-workspace-config`'s form.",
    ),
});
