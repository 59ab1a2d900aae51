/**
 * OpenAPI sources (issue 30): an operator's OpenAPI 3.0 or 3.1 document, whose kept operations
 * the registry serves as HTTP tools named under the source's `prefix`. What is stored of a
 * source is this descriptor (the document text beside it, the credential sealed apart from both,
 * migrations/015_openapi_sources.sql); its tools are ordinary HTTP tools owned by
 * `openapi-source:<id>`, which only writes of the source change.
 */
import { z } from 'zod';
import { SourceCredentialInputSchema } from './outbound-credential.js';
import { ScopeSchema, ScopesSchema, ServiceIdSchema, UpstreamUrlSchema } from './schemas.js';

/** The owner string of a source's tools and credential. */
export const openApiSourceOwner = (id: string): string => `openapi-source:${id}`;

/** The source id an owner string names, or undefined when it is not a source's. */
export function openApiSourceOf(owner: string | null | undefined): string | undefined {
  return owner?.startsWith('openapi-source:') ? owner.slice('openapi-source:'.length) : undefined;
}

const FILTER_LIST = (item: z.ZodType<string>) => z.array(item).min(1).max(1000).optional();

const OpenApiFilterSchema = z
  .strictObject({
    /** Operations with at least one of these tags. */
    tags: FILTER_LIST(z.string().min(1).max(200)),
    /** Operations with one of these `operationId`s. */
    operationIds: FILTER_LIST(z.string().min(1).max(200)),
    /** Operations whose path starts with one of these (`/pet`). */
    pathPrefixes: FILTER_LIST(z.string().min(1).max(1000).startsWith('/', 'must start with "/"')),
    /** Operations of these methods. */
    methods: FILTER_LIST(z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'get', 'post', 'put', 'patch', 'delete'])),
  })
  .meta({
    id: 'OpenApiFilter',
    description:
      'Which operations become tools: those that pass every filter given (tags: any of them; operationIds; pathPrefixes; methods). No filter keeps every operation.',
  });

/** What is stored of a source: everything but its document text and its credential. */
export const OpenApiSourceSchema = z.strictObject({
  id: ServiceIdSchema,
  /** Where the document was read from, when it was not given inline. */
  documentUrl: UpstreamUrlSchema.optional(),
  /** The API's base URL, instead of the document's first `servers` entry. */
  baseUrl: UpstreamUrlSchema.optional(),
  /** Prepended to every tool name, as an upstream MCP server's prefix is (required). */
  prefix: z.string().regex(/^[a-zA-Z0-9_-]{1,32}$/, 'must be 1 to 32 letters, digits, "_" or "-"'),
  filter: OpenApiFilterSchema.optional(),
  /**
   * Whether what a re-read of documentUrl finds reaches agents at once (`auto`) or once an
   * operator accepts it (`review`), as for upstream MCP servers (issue 29).
   */
  policy: z
    .enum(['review', 'auto'])
    .default('review')
    .describe(
      "For a `documentUrl` source: `review` (the default): what a later read of the URL finds new or changed waits in `GET /openapi-sources/{id}/pending` until an operator accepts it, agents keep the tools they have meanwhile, and an operation the document drops leaves at once. `auto`: every read applies at once. A PUT is the operator's own word and always applies at once.",
    ),
  /** Seconds between reads of documentUrl (default OPENAPI_REFRESH_S; 0: only on demand). */
  refreshIntervalS: z
    .number()
    .int()
    .min(0)
    .max(604_800)
    .refine((s) => s === 0 || s >= 60, 'must be 0 (read only on demand) or 60 to 604800 seconds')
    .optional(),
  /** Each call's timeout, unless TOOL_CALL_TIMEOUT_MS. */
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
  /** Scope entries for the operations the document leaves open (no `security`); none: open, as the document says. */
  scopes: ScopesSchema.default([]),
  /** The document's scope (and scheme) names mapped to the registry's: `{"write:pets": "pets.write"}`. */
  scopeMap: z
    .record(ScopeSchema, ScopeSchema)
    .refine((m) => Object.keys(m).length <= 1000, 'must have at most 1000 entries')
    .optional(),
});
export type OpenApiSource = z.infer<typeof OpenApiSourceSchema>;

/** `PUT /openapi-sources/{id}`: the descriptor, the document inline (`document`) or by URL (`documentUrl`), and a credential. */
export const OpenApiSourcePutBodySchema = OpenApiSourceSchema.extend({
  /** The path gives it; a body that names another id is refused. */
  id: ServiceIdSchema.optional(),
  /** The document itself: JSON or YAML text, or the JSON object. */
  document: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
  /** What the registry sends to the API: the document's security scheme filled (`{"apiKey": "…"}`), or a full credential. */
  credential: SourceCredentialInputSchema.optional(),
})
  .refine((body) => (body.document === undefined) !== (body.documentUrl === undefined), {
    message: 'give exactly one of "document" (the document inline) and "documentUrl"',
    path: ['document'],
  })
  .meta({ id: 'OpenApiSourcePut' });
export type OpenApiSourcePutBody = z.infer<typeof OpenApiSourcePutBodySchema>;

/** One stored source, as the store reads it back. */
export interface OpenApiSourceRecord {
  id: string;
  descriptor: OpenApiSource;
  /** The document text as given, or as last read from documentUrl. */
  document: string;
  title: string;
  version: string;
  skipped: { pointer: string; reason: string }[];
  /** The masked credential (kind and fields that are not secret), or null. */
  credential: Record<string, unknown> | null;
  createdIndex: number;
  index: number;
  updatedAt: string;
}

const SkippedSchema = z.array(z.strictObject({ pointer: z.string(), reason: z.string() }));

/** The admin view of a source: what is stored, its document's title and version, its tools; never its credential's secret. */
export const OpenApiSourceRecordSchema = z
  .strictObject({
    id: ServiceIdSchema,
    index: z.number().int().describe('Registry index of the last write of the source.'),
    createdIndex: z.number().int().describe('Registry index of the write that created it.'),
    updatedAt: z.string(),
    descriptor: OpenApiSourceSchema,
    title: z.string().describe("The document's info.title."),
    version: z.string().describe("The document's info.version."),
    documentBytes: z.number().int().describe('Size of the stored document text.'),
    credential: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        'The credential masked: its kind and the fields that are not secret (a secret only as `set: true`, a file path as itself).',
      ),
    tools: z.array(z.string()).describe("The names of the source's tools."),
    skipped: SkippedSchema.describe('Operations not made into tools, each with its JSON pointer and why.'),
    refresh: z
      .strictObject({
        lastReadAt: z.string().nullable().describe('When the registry last read the documentUrl again (null: not since it started).'),
        lastError: z.string().nullable().describe('Why that read failed; null when it did not. The tools stay as they were.'),
        nextReadAt: z.string().nullable().describe('When the next read on the interval is due; null: only on demand.'),
        pending: z.number().int().describe('Versions found by reads that wait for review (rejected ones left out).'),
      })
      .optional()
      .describe('For a source read from documentUrl: its reads again, and what waits for review.'),
    written: z.array(z.string()).optional().describe('On a write: the tools it wrote (new or changed).'),
    deleted: z.array(z.string()).optional().describe('On a write or delete: the tools it deleted.'),
  })
  .meta({ id: 'OpenApiSourceRecord', description: 'An OpenAPI source as stored, with its tools.' });

export const OpenApiSourceListSchema = z
  .strictObject({ openApiSources: z.array(OpenApiSourceRecordSchema) })
  .meta({ id: 'OpenApiSourceList' });

export const OpenApiSourceIdParamsSchema = z.object({
  id: z.string().describe("The source's id (1 to 128 letters, digits, `_`, `.` or `-`)."),
});

/** What a read shows of a stored source. */
export function openApiSourceBody(record: OpenApiSourceRecord, tools: readonly string[]): z.output<typeof OpenApiSourceRecordSchema> {
  return {
    id: record.id,
    index: record.index,
    createdIndex: record.createdIndex,
    updatedAt: record.updatedAt,
    descriptor: record.descriptor,
    title: record.title,
    version: record.version,
    documentBytes: Buffer.byteLength(record.document),
    ...(record.credential !== null && { credential: record.credential }),
    tools: [...tools],
    skipped: record.skipped,
  };
}
