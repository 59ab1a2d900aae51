/**
 * The HTTP API's wire shapes beyond the descriptors: query strings, answers and problems, one
 * zod schema each (house style 4). Routes declare them (src/http/routes), so they type the
 * handlers and generate the OpenAPI document; `id`s name the document's components, and
 * descriptions become its prose. The descriptors (write bodies and stored forms) are
 * descriptors.ts's.
 */
import { z } from 'zod';
import { ERRORS, type ErrorCode } from './errors.js';
import { JsonTypeSchema, ScopeSchema, ToolNameSchema } from './schemas.js';
import { EXPORT_FORMATS } from './exports.js';
import { REFUSAL_REASONS } from './replication.js';
import { ToolDeprecationSchema } from './deprecation.js';
import { McpContentBlockSchema } from './mcp-content.js';

// ---------------------------------------------------------------------------------------------
// Query strings

/** The most tools one page or search answer holds (catalog/listing.ts enforces the same). */
export const MAX_PAGE_SIZE = 1000;
/** The longest `cursor` a page request may carry (the registry's own are far shorter). */
export const MAX_CURSOR_LENGTH = 2048;
/** The longest a blocking query is held. */
export const MAX_WAIT_MS = 10 * 60_000;
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Consul-style durations: `30s`, `5m`, `1500ms`; a bare number is seconds; at most 10 minutes. */
const WaitSchema = z
  .string()
  .regex(/^\d+(ms|s|m|h)?$/, 'must look like 30s, 5m or 1500ms')
  .transform((v) => {
    const match = /^(\d+)(ms|s|m|h)?$/.exec(v);
    return Math.min(Number(match?.[1]) * (UNITS_MS[match?.[2] ?? 's'] ?? 1000), MAX_WAIT_MS);
  });

/** What a registry index looks like on the wire (headers, query strings): digits. */
const INDEX_PATTERN = /^\d{1,15}$/;

/** A registry index in a query string or header, as digits. */
const RegistryIndexParamSchema = z.string().regex(INDEX_PATTERN, 'must be a registry index').transform(Number);

export const DiscoveryQuerySchema = z.object({
  index: RegistryIndexParamSchema.optional().describe(
    'Makes the request a blocking query: the `X-Registry-Index` of the answer the caller last saw. Ignored with `limit`, `cursor`, `q`, `scope` or `updated_since`, unless `format` is given too.',
  ),
  wait: WaitSchema.optional().describe(
    'How long a blocking query may be held: digits with a unit `ms`, `s`, `m` or `h` (`1500ms`, `30s`, `5m`; bare digits are seconds). Default 5 minutes; longer than 10 minutes counts as 10 minutes. Up to 1/16 of random jitter is added, so that many clients do not come back in step. Used only with `index`.',
  ),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).optional().describe('Page size (default 100), or the most search results.'),
  cursor: z.string().max(MAX_CURSOR_LENGTH).optional().describe('The `nextCursor` of the previous page, as given (opaque).'),
  q: z.string().max(500).optional().describe('Full-text search over tool names and descriptions.'),
  scope: ScopeSchema.describe(
    'Only tools one of whose scope entries names this scope token (an entry `a b` names both `a` and `b`).',
  ).optional(),
  passing: z
    .enum(['', 'true', 'false'], { error: 'must be true or false' })
    .transform((v) => v !== 'false')
    .optional()
    .describe(
      'Leave out the tools of tool services that announce themselves (`ANNOUNCE_TOPIC`) and stopped sending heartbeats, until they come back. `?passing` alone means `true`. Services an operator registered always pass.',
    ),
  updated_since: z.iso
    .datetime({ offset: true })
    .transform((v) => new Date(v).toISOString())
    .optional()
    .describe(
      'Only tools created, replaced or deleted at or after this time (RFC 3339 date-time with seconds and a `Z` or numeric offset), tombstones included.',
    ),
  format: z
    .enum(EXPORT_FORMATS, {
      // LangChain has no wire shape of its own: bindTools takes OpenAI's tool definitions.
      error: (issue) =>
        issue.input === 'langchain'
          ? `LangChain takes OpenAI tool definitions (bindTools): use format=openai; the formats are ${EXPORT_FORMATS.join(', ')}`
          : undefined,
    })
    .optional()
    .describe(
      'The caller\'s view in another shape: `openai` (Chat Completions `tools`), `openai-responses` (Responses API `tools`), `openai-strict` (`{tools, skipped}`: strict mode), `anthropic` (Messages API `tools`), `mcp` (an MCP `tools/list` result), `ag-ui` (AG-UI `Tool`s) or `prompt` (the article\'s "Available tools" text). Combines with `limit`, `cursor`, `q`, `scope` and `updated_since`: the same tools in the same order as the plain answer, in the format\'s shape, with the next page\'s URL in a `Link` header (`rel="next"`); deleted tools (tombstones) are left out.',
    ),
});

export const ChangesQuerySchema = z.object({
  since: RegistryIndexParamSchema.optional().describe('Resume after this registry index (used when `Last-Event-ID` is absent).'),
});

export const ChangesHeadersSchema = z.looseObject({
  'last-event-id': RegistryIndexParamSchema.optional().describe('The `id` of the last event received; the stream resumes after it.'),
});

export const AuditOutcomeSchema = z.enum(['ok', 'denied', 'invalid', 'error']);

export const AuditQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100).describe('Entries per page.'),
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,16}$/)
    .transform((c, ctx) => {
      const id = Number(Buffer.from(c, 'base64url').toString('utf8'));
      if (!Number.isSafeInteger(id) || id < 1) {
        ctx.addIssue({ code: 'custom', message: 'is not a cursor this registry gave out' });
        return z.NEVER;
      }
      return id;
    })
    .optional()
    .describe('The `nextCursor` of the previous page (opaque).'),
  sub: z.string().max(512).optional().describe('Only entries by this token subject.'),
  action: z
    .string()
    .max(64)
    .optional()
    .describe(
      "e.g. `tool.put`, `tool.delete`, `tool-service.put`, `tool-service.delete`, `mcp-server.put`, `mcp-server.delete`, `mcp-server.sync` (the registry storing an MCP server's tools), `import`, `tool.invoke`.",
    ),
  outcome: AuditOutcomeSchema.optional(),
  target: z.string().max(200).optional().describe('Tool name or service id.'),
  since: z.iso.datetime().optional().describe('ISO 8601 time, inclusive.'),
  until: z.iso.datetime().optional().describe('ISO 8601 time, exclusive.'),
});

// ---------------------------------------------------------------------------------------------
// Path parameters. Names are not checked here: a name no tool has is a 404, as it always was.

export const ToolNameParamsSchema = z.object({
  name: z.string().describe("The tool's name (1 to 64 letters, digits, `_` or `-`; any other name is answered like an unknown one)."),
});
export const ServiceIdParamsSchema = z.object({
  id: z
    .string()
    .describe("The tool service's id (1 to 128 letters, digits, `_`, `.` or `-`; any other id is answered like an unknown one)."),
});

// ---------------------------------------------------------------------------------------------
// Discovery

export const ToolStatusSchema = z.enum(['active', 'deprecated', 'deleted']);
export const ToolKindSchema = z
  .enum(['http', 'tool-service', 'mcp'])
  .describe('`http` for HTTP tools, `tool-service` for message-bus tools, `mcp` for tools of upstream MCP servers.');
export const DateTimeSchema = z.iso.datetime();

const ToolParameterSchema = z
  .looseObject({
    type: JsonTypeSchema,
    description: z.string().optional(),
    required: z.boolean().optional().describe('Whether the model must give it; absent means true.'),
  })
  .meta({ id: 'ToolParameter', description: "A parameter in the article's form (JSON Schema keywords plus `required`)." });

const InputSchemaSchema = z
  .strictObject({
    type: z.literal('object'),
    properties: z.record(z.string(), z.record(z.string(), z.unknown())),
    required: z.array(z.string()),
    additionalProperties: z.boolean(),
  })
  .meta({
    id: 'InputSchema',
    description:
      "The tool's arguments as a closed JSON Schema object made from `parameters` (or a message-bus tool's `arguments`): a call with a key it does not list is refused.",
  });

const DeclaredSchemaSchema = z.looseObject({ type: z.literal('object') }).meta({
  id: 'DeclaredJsonSchema',
  description:
    "A JSON Schema the tool declares, as given: an HTTP tool's `inputSchema` or `outputSchema`, a message-bus tool's `outputSchema`, an mcp tool's upstream schemas. Draft 2020-12, or draft-07 when its `$schema` says so; references are local (`#/$defs/...`).",
});

const AgentHintSchema = z.json().describe("Agent hint, as given in a message-bus tool's descriptor.");

/** The key order is public-view.ts's, so that answers built here read like the cached views. */
export const PublicToolSchema = z
  .strictObject({
    name: ToolNameSchema,
    description: z.string(),
    scopes: z.array(z.string()),
    parameters: z
      .record(z.string(), ToolParameterSchema)
      .describe("The article's parameter map (derived from `arguments` for message-bus tools)."),
    returns: z.string(),
    endpoint: z.string(),
    host: z.string(),
    port: z.number().int().min(1).max(65535),
    kind: ToolKindSchema,
    inputSchema: z
      .union([InputSchemaSchema, DeclaredSchemaSchema])
      .describe('What calls through the registry are checked against (`400 TR_ERR_INVALID_ARGUMENTS` when they do not fit).'),
    outputSchema: DeclaredSchemaSchema.optional().describe("The tool's structured answer, where the tool declares it."),
    group: AgentHintSchema.optional(),
    state: AgentHintSchema.optional(),
    'applicable-states': AgentHintSchema.optional(),
    status: ToolStatusSchema.describe(
      '`deprecated` for a tool with a deprecation (issue 34: still callable until its sunset, then gone from every view); `deleted` only for tombstones in `GET /` pages and `updated_since` results; the full view and `GET /tools/{name}` never show deleted tools.',
    ),
    deprecation: ToolDeprecationSchema.optional(),
    index: z.number().int().min(1).describe('Registry index of the last write that touched the tool (for a tombstone, its deletion).'),
    updatedAt: DateTimeSchema,
  })
  .meta({
    id: 'PublicTool',
    description:
      "What discovery shows of a tool: the article's fields first, then the registry's own. Queue names and config values never appear here. For message-bus and mcp tools, `endpoint`, `host` and `port` point at the registry's invoke route (`{PUBLIC_URL path}/tools/{name}/invoke` on the `PUBLIC_URL` host), `returns` is fixed text, and the hints `group`, `state` and `applicable-states` appear when the descriptor gives them.",
  });

const ServiceNameSchema = z.string().describe("The registry's name.");

export const DiscoveryResponseSchema = z
  .strictObject({
    service: ServiceNameSchema,
    protocol: z.literal('tool-discovery'),
    tools: z.array(PublicToolSchema).describe("The live tools in the caller's view, sorted by name (code-point order)."),
  })
  .meta({ id: 'DiscoveryResponse', description: 'The full view, as `GET /` answers it without page, search or filter parameters.' });

export const DiscoveryPageSchema = z
  .strictObject({
    service: ServiceNameSchema,
    protocol: z.literal('tool-discovery'),
    tools: z.array(PublicToolSchema).max(MAX_PAGE_SIZE),
    nextCursor: z.string().nullable().describe('The `cursor` for the next page; `null` on the last page and for a search.'),
  })
  .meta({
    id: 'DiscoveryPage',
    description:
      'A page, search or filter result of `GET /`. Pages and filters list tools by name (code-point order), tombstones (`status: deleted`) included where the walk or `updated_since` calls for them; a search lists live tools, best match first.',
  });

export const ChangeEventSchema = z
  .strictObject({
    index: z.number().int().min(1).describe('The registry index of the write.'),
    op: z
      .enum(['upsert', 'delete'])
      .describe(
        "`upsert`: the tool (or service) is in the caller's view after the write, new or changed; `delete`: it was deleted, or left the caller's view.",
      ),
    kind: z.enum(['tool', 'tool-service']).describe('`tool-service` events go to callers holding the admin scope only.'),
    name: z.string().describe("The tool's name, or the tool service's id."),
  })
  .meta({ id: 'ChangeEvent', description: 'The `data` of a `change` event on `GET /changes`.' });

export const AccessExplanationSchema = z
  .strictObject({
    tool: ToolNameSchema,
    requiredScopes: z.array(z.string()).describe('Any one of these grants the tool; none means every caller with a token.'),
    grantedScopes: z.array(z.string()).describe("The caller's scopes (empty for anonymous callers)."),
    missingScopes: z
      .array(z.string())
      .describe('The scope tokens the caller lacks for the nearest scope entry (the one needing fewest more); empty when allowed.'),
    discoverable: z.boolean().describe("Whether the tool is in the caller's discovery view."),
    decision: z.enum(['allow', 'deny']),
    reason: z.string().describe('Why, in words an agent can act on.'),
  })
  .meta({ id: 'AccessExplanation' });

// ---------------------------------------------------------------------------------------------
// Figures

const LatencySummarySchema = z
  .strictObject({
    p50: z.number().min(0),
    p95: z.number().min(0),
    p99: z.number().min(0),
    samples: z.number().int().min(1).describe('How many recent calls the percentiles are over.'),
  })
  .meta({
    id: 'LatencySummary',
    description:
      'Nearest-rank percentiles of call durations in milliseconds, whatever the outcome of the call (calls refused at the scope check are left out).',
  });

export const CountSchema = z.number().int().min(0);
const CallsSchema = z.number().int().min(1);

export const StatsSchema = z
  .strictObject({
    total_tools: CountSchema,
    tools_by_name: z.array(ToolNameSchema),
    scope_usage: z
      .record(z.string(), CallsSchema)
      .describe('How many tools in the view list each scope entry (an entry `a b`, needing both tokens, counts apart from `a`).'),
    unique_scopes: CountSchema,
    tools_by_kind: z.record(z.string(), CountSchema).describe('Tools in the view by kind (`http`, `tool-service`, `mcp`).'),
    total_tool_services: CountSchema.describe("Every live tool service, whatever the caller's view."),
    tools_by_service: z
      .record(z.string(), CountSchema)
      .describe(
        'Live tools per tool service (message-bus tools), by service id, services without tools included. Service ids are backend topology, so this is filled only for tokens holding the admin scope (or `STATS_READ_SCOPE`); everyone else gets it empty.',
      ),
    tools_by_mcp_server: z
      .record(z.string(), CountSchema)
      .describe(
        'Live tools per registered upstream MCP server, by server id; filled for the same callers as `tools_by_service`, empty for everyone else.',
      ),
    registry_index: CountSchema,
    replica: z
      .string()
      .optional()
      .describe(
        'Replicated mode only: the replica that answered (`REPLICA_ID`). Usage figures and audit entries are per replica: each counts the calls it carried and the writes it took.',
      ),
    total_tool_calls: CountSchema.describe(
      "Calls through `POST /tools/{name}/invoke` to the tools in the view (the full view also counts tools deleted since they were called), since the database was created. Every call that passed the tool's scope check counts, whatever its outcome: answered, failed, timed out, cancelled, or refused for want of capacity. Calls refused at the scope check (no token, or none of the tool's scopes) are not uses of the tool: they count only in `errors_by_class` (`denied`). Requests refused before the scope check (invalid token, rate limit, unreadable body, unknown, deleted or past-sunset tool) or after it because the arguments do not fit its input schema do not count at all. `usage_by_tool`, `most_used_tool`, `usage_by_agent` and `latency_ms_by_tool` count the same calls as this figure.",
    ),
    usage_by_tool: z.record(z.string(), CallsSchema).describe('Calls per tool, for tools called at least once, sorted by name.'),
    most_used_tool: z.string().nullable().describe('The tool with the most calls (the first by name on a tie); null before any call.'),
    usage_by_agent: z
      .record(z.string(), z.record(z.string(), CallsSchema))
      .describe(
        "Calls per agent (the token's `sub`; `(no subject)` for a token without `sub`), then per tool. Callers without a token are always refused, so they never appear.",
      ),
    errors_by_class: z
      .partialRecord(z.enum(['denied', 'service-error', 'timeout', 'unavailable', 'cancelled']), CallsSchema)
      .describe(
        "Calls that did not succeed, by class: `denied` (401, 403 at the tool's scope check), `service-error` (502), `timeout` (504), `cancelled` (the caller hung up), `unavailable` (503, `413` for a call too large for the bus, and unexpected failures). Classes without calls are left out.",
      ),
    latency_ms_by_tool: z
      .record(z.string(), LatencySummarySchema)
      .describe('Call duration percentiles per tool, over its most recent calls that passed the scope check (at most 1024).'),
    deprecated_tool_calls: CountSchema.describe(
      'Issue 34: of `total_tool_calls`, the calls made while the tool was deprecated (`PUT /tools/{name}/deprecation`), counted as `total_tool_calls` counts them, since this process started.',
    ),
    deprecated_calls_by_tool: z
      .record(z.string(), CallsSchema)
      .describe('`deprecated_tool_calls` per tool, for tools called at least once while deprecated, sorted by name.'),
  })
  .meta({
    id: 'Stats',
    description:
      "Inventory over the caller's view (the article's figures) plus the registry index and usage fields filled in by the call bridge.",
  });

export const StatsQuerySchema = z.object({
  window: z
    .enum(['1h', '24h'])
    .optional()
    .describe(
      'Usage over the last hour or day instead of since the database was created, with one bucket per minute (`WindowStats`). Without it the answer is `Stats`.',
    ),
});

const MinuteBucketSchema = z
  .strictObject({
    start: z.iso.datetime().describe("The minute's first instant, RFC 3339 (`2026-12-03T10:15:00Z`)."),
    calls: CountSchema.describe('Calls in the minute, counted as `total_tool_calls` counts them.'),
    errors: CountSchema.describe('Calls in the minute that did not succeed, every class of `errors_by_class` (`denied` included).'),
    p50_ms: z.number().min(0).nullable().describe("Median call duration in the minute over the view's tools; null without calls."),
    p95_ms: z.number().min(0).nullable().describe('95th percentile of call durations in the minute; null without calls.'),
  })
  .meta({ id: 'MinuteBucket', description: "One minute of a `WindowStats`, over the tools in the caller's view." });

export const WindowStatsSchema = StatsSchema.pick({
  replica: true,
  usage_by_tool: true,
  most_used_tool: true,
  errors_by_class: true,
})
  .extend({
    window: z.enum(['1h', '24h']).describe('The window asked for.'),
    total_tool_calls: CountSchema.describe(
      "Calls to the tools in the view in the window's minutes, the current one included, counted as `Stats.total_tool_calls` counts them. `usage_by_tool`, `most_used_tool` and `latency_ms_by_tool` count the same calls.",
    ),
    latency_ms_by_tool: z
      .record(z.string(), LatencySummarySchema)
      .describe(
        "Call duration percentiles per tool over every call in the window, merged from per-minute histograms: between 0.125 ms and 524 s within a factor 2^(1/8) (+9.1 % / -8.3 %) of the exact nearest-rank value, and never outside the window's shortest and longest call. `samples` is the number of calls.",
      ),
    buckets: z
      .array(MinuteBucketSchema)
      .describe(
        'One entry per minute of the window (60 or 1,440), oldest first, the current minute last; minutes without calls are included, with zeros and null percentiles.',
      ),
  })
  .meta({
    id: 'WindowStats',
    description:
      "`GET /stats?window=`: the usage fields of `Stats` over the last hour or day of this process's database, plus one bucket per minute. Per-agent figures are not kept by the minute (`usage_by_agent` is absent). Minutes are written to SQLite once they close; a crash loses at most the open minute, a clean shutdown none.",
  });

// ---------------------------------------------------------------------------------------------
// Calls

export const InvokeArgumentsSchema = z.record(z.string(), z.unknown()).meta({
  id: 'InvokeArguments',
  description: "The call's arguments, as a JSON object of argument name to value (an absent body means `{}`).",
  examples: [{ expression: '2 + 2' }],
});

export const BinaryContentSchema = z
  .strictObject({
    type: z.enum(['image', 'resource']).describe('`image` for an image/* answer, `resource` for any other bytes.'),
    mimeType: z.string().describe('The media type the tool sent (`image/png`, `application/pdf`).'),
    data: z.string().describe('The bytes, base64.'),
  })
  .meta({ id: 'BinaryContent', description: "An answer of bytes: an HTTP tool's image or other binary content." });
export type BinaryContent = z.infer<typeof BinaryContentSchema>;

export const InvokeResultSchema = z
  .strictObject({
    tool: ToolNameSchema,
    id: z.string().describe("The call's correlation id (the `id` message property on the bus)."),
    result: z
      .string()
      .describe(
        "The observation as text: an HTTP tool's JSON string answer as is, any other JSON answer as JSON text, a text answer as sent, an image or other bytes named in brackets (`[image image/png, 1234 bytes]`, the bytes in `content`); a message-bus tool's answer chunks joined; an mcp tool's `structuredContent` as JSON text, else its text content joined by line feeds (other content named in brackets, e.g. `[image image/png, 1234 bytes]`, and every block whole in `content`).",
      ),
    content: z
      .union([BinaryContentSchema, z.array(McpContentBlockSchema)])
      .optional()
      .describe(
        "Present when an HTTP tool answered with an image or other bytes (a content type that is neither JSON nor text): the bytes as base64 with their media type, as MCP's image content and embedded resources carry them; `result` then names them (`[image image/png, 1234 bytes]`). For an mcp tool, always an array: the upstream's content blocks as it sent them (text, image, audio, resource, resource_link; issue 31).",
      ),
    durationMs: z.number().min(0).describe('How long the call took, in milliseconds (two decimals).'),
  })
  .meta({ id: 'InvokeResult', description: 'The observation of a completed call.' });

export const InvokeChunkSchema = z
  .strictObject({ text: z.string().describe('The next piece of the observation.') })
  .meta({ id: 'InvokeChunk', description: 'The `data` of a `chunk` event in a streamed call.' });

// ---------------------------------------------------------------------------------------------
// Operations

export const HealthSchema = z.strictObject({ status: z.literal('ok') }).meta({ id: 'Health' });

/** Replicated mode's state on the replica that answered (src/replication/replicator.ts). */
const ReplicationStateSchema = z
  .strictObject({
    replica: z.string().describe('The replica that answered (`REPLICA_ID`).'),
    topic: z.string().describe('The replication topic (`REPLICATION_TOPIC`).'),
    caughtUp: z
      .boolean()
      .describe('Whether this replica has applied everything published before it started; `/readyz` answers `503` until it has.'),
    broker: z
      .enum(['connected', 'disconnected'])
      .describe('Whether writes reach the broker now; while `disconnected` writes answer `503` and reads go on.'),
    appliedIndex: CountSchema.describe('The registry index of the last message this replica applied.'),
    failed: z.string().optional().describe('Why this replica stopped applying the topic (it needs a restart).'),
    refused: z
      .strictObject({
        count: CountSchema.describe('Messages refused since this replica started.'),
        last: z
          .strictObject({
            index: CountSchema.describe('The registry index of the message (its position on the topic).'),
            messageId: z.string().describe("The message's Pulsar id (base64)."),
            reason: z.enum(REFUSAL_REASONS).describe('`unsigned`, `unknown-key`, `bad-mac`, `stamp-ahead` or `no-publish-time`.'),
            detail: z.string().describe('Why, in words.'),
            at: z.string().describe('When this replica refused it.'),
          })
          .optional()
          .describe('The last message refused.'),
      })
      .describe(
        'Messages of the topic this replica refused and passed over, applying nothing of them: without a valid MAC under a key it holds, or stamped more than 5 minutes ahead of when the broker took them. Each is audited (`replication.refused`) and counted in `tool_registry_replication_refused_total`; refusals do not make the replica unready.',
      ),
  })
  .meta({ id: 'ReplicationState' });

export const ReadinessSchema = z
  .strictObject({
    status: z.literal('ready'),
    checks: z.strictObject({
      database: z.literal('ok'),
      bridge: z
        .enum(['not-configured', 'connected', 'disconnected'])
        .describe(
          'The message bus: `not-configured` (no `PULSAR_WS_URL`; calls to message-bus tools answer `503`), `connected`, or `disconnected` (not connected yet, or the connection dropped). Reported apart: it does not make the registry unready.',
        ),
    }),
    signingKeys: z
      .enum(['local', 'loaded'])
      .describe(
        'The keys tokens are verified with: `local` (`JWT_SECRET`, `JWT_PUBLIC_KEY` or the dev secret) or `loaded` (the authorization server\'s JWKS was fetched). While a JWKS is configured and no keys are loaded, every token would get `401`: `/readyz` answers `503` then, saying why, with `signingKeys: "unavailable"`.',
      ),
    index: CountSchema.describe('The registry index the catalogue reflects.'),
    inflightCalls: CountSchema.describe('Tool calls in flight now (at most `MAX_INFLIGHT_CALLS`).'),
    waiters: CountSchema.describe('Blocking discovery queries and change streams held now (at most `MAX_WAITERS`).'),
    replication: ReplicationStateSchema.optional().describe('Replicated mode only (`REPLICATION_TOPIC`).'),
  })
  .meta({ id: 'Readiness' });

export const OpenApiDocumentSchema = z
  .looseObject({ openapi: z.string() })
  .meta({ id: 'OpenApiDocument', description: 'An OpenAPI 3.1 document.' });

export const ProtectedResourceMetadataSchema = z
  .strictObject({
    resource: z.string().describe("This API's resource identifier (`RESOURCE_URL`, default `PUBLIC_URL`)."),
    authorization_servers: z.array(z.string()).describe('Issuer URLs (`AUTHORIZATION_SERVERS`, default `JWT_ISSUER`); may be empty.'),
    scopes_supported: z.array(z.string()).describe("Every scope token a live tool's scope entries name, plus the admin scope, sorted."),
    bearer_methods_supported: z.array(z.literal('header')),
    resource_name: z.literal('tool-registry'),
  })
  .meta({ id: 'ProtectedResourceMetadata', description: 'RFC 9728 protected-resource metadata.' });

// ---------------------------------------------------------------------------------------------
// Problems

const FieldErrorSchema = z
  .strictObject({
    path: z
      .string()
      .describe(
        "Dotted path into the request body, e.g. `arguments.0.name`, `tools.3.service` or `inputSchema.properties.x.items.type`; empty for the body itself; the parameter's name for a query parameter. For `TR_ERR_INVALID_ARGUMENTS` a JSON pointer into the arguments instead, e.g. `/items/0/name` (empty for the arguments themselves).",
      ),
    message: z.string(),
  })
  .meta({ id: 'FieldError' });

const ERROR_CODES = Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]];

/** Open to members a code adds (`extra` of a RegistryError); the known ones are listed. */
export const ProblemSchema = z
  .looseObject({
    type: z
      .string()
      .regex(/^urn:tool-registry:error:[a-z-]+$/)
      .describe('`urn:tool-registry:error:` followed by the code without `TR_ERR_`, lower-cased, `_` as `-`.'),
    title: z.string().describe('Fixed per code.'),
    status: z.number().int().min(400).max(599),
    detail: z
      .string()
      .describe(
        'What went wrong with this request. Internal errors (`500`) get a generic detail; failed tool calls (`502`, `503`, `504`) say which tool and why.',
      ),
    code: z.enum(ERROR_CODES).describe('Stable error code; clients may switch on it.'),
    errors: z
      .array(FieldErrorSchema)
      .optional()
      .describe('One entry per problem in the request (validation errors, or what a service replacement would break).'),
    tools: z
      .array(ToolNameSchema)
      .optional()
      .describe('The tools that hold a tool service (`TR_ERR_IN_USE`) or would break (`TR_ERR_CONFLICT`).'),
    serviceError: z
      .strictObject({
        type: z
          .string()
          .describe(
            "The service's error type, or `http-{status}`, `tool-unreachable`, `invalid-response`, `response-too-large`; for mcp tools `mcp-tool-error` (the tool's answer had `isError`) or `mcp-error` (the server refused the call).",
          ),
        message: z.string(),
      })
      .optional()
      .describe('`TR_ERR_TOOL_SERVICE` only: the error the tool or its service answered with.'),
    mcpServer: z
      .string()
      .optional()
      .describe('`TR_ERR_CONFLICT` on a tool write: the MCP server whose tool it is, which alone may change it.'),
    jsonrpc: z
      .literal('2.0')
      .optional()
      .describe('`/mcp` only: with `error` and `id`, the same refusal as a JSON-RPC error, for MCP clients that read one.'),
    error: z
      .strictObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() })
      .optional()
      .describe('`/mcp` only: the JSON-RPC error object.'),
    id: z
      .union([z.string(), z.number(), z.null()])
      .optional()
      .describe('`/mcp` only: the JSON-RPC id (null: the refusal answers no one request).'),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details, served as `application/problem+json`.' });
export type Problem = z.infer<typeof ProblemSchema>;

// ---------------------------------------------------------------------------------------------
// MCP (the Streamable HTTP transport's messages, documented; the SDK checks them)

export const JsonRpcMessageSchema = z
  .looseObject({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number()]).optional().describe('Present on requests and responses; absent on notifications.'),
    method: z
      .string()
      .optional()
      .describe('Requests and notifications: `initialize`, `tools/list`, `tools/call`, `notifications/initialized`, ...'),
    params: z.record(z.string(), z.unknown()).optional(),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'JsonRpcMessage', description: 'One JSON-RPC 2.0 message of the Model Context Protocol.' });

export const McpHeadersSchema = z.object({
  'mcp-session-id': z
    .string()
    .max(200)
    .optional()
    .describe('The session id the `initialize` answer gave; required on every request after it.'),
  'mcp-protocol-version': z
    .string()
    .max(40)
    .optional()
    .describe(
      'The protocol revision agreed at `initialize`, e.g. `2025-11-25`; at `2026-07-28`, the one the request names in its `_meta`.',
    ),
  'mcp-method': z
    .string()
    .max(200)
    .optional()
    .describe("Revision 2026-07-28, required there: the request's `method`, which it must equal."),
  'mcp-name': z
    .string()
    .max(1000)
    .optional()
    .describe(
      'Revision 2026-07-28, required for `tools/call`: `params.name`, which it must equal (as `=?base64?...?=` where the name is not plain ASCII).',
    ),
});
