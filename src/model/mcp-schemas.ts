/**
 * Upstream MCP servers (issue 11): the descriptor operators register, and the tools of kind
 * `mcp` the registry derives from the server's `tools/list` (src/model/mcp-tools.ts). The
 * server's credential is a secret: it is parsed here but stored apart from the descriptor
 * (migrations/008_mcp_servers.sql) and never part of any answer, log line or export.
 */
import { z } from 'zod';
import {
  DescriptionSchema,
  NOT_PROTO,
  notProto,
  ObjectJsonSchema,
  ScopesSchema,
  ServiceIdSchema,
  ToolNameSchema,
  UpstreamUrlSchema,
} from './schemas.js';
import { countedFirst, text } from './text-checks.js';

/** A tool's name at its upstream: MCP allows more than the registry's names (which may be prefixed). */
const UpstreamToolNameSchema = z
  .string()
  .regex(/^[\x21-\x7E]{1,128}$/, 'must be 1 to 128 printable ASCII characters')
  .refine(notProto, NOT_PROTO);

/** A tool of an upstream MCP server, as the registry stores it (kind `mcp`). */
export const McpToolSchema = z.strictObject({
  type: z.literal('mcp'),
  /** The registry's name: the server's prefix, then the upstream's name. */
  name: ToolNameSchema,
  /** The id of the MCP server that lists it. */
  server: ServiceIdSchema,
  /** Its name at the upstream, which calls use. */
  upstreamName: UpstreamToolNameSchema,
  title: text(512).optional(),
  description: DescriptionSchema,
  /** The upstream's JSON Schema of the arguments, as given. */
  inputSchema: ObjectJsonSchema,
  /** The upstream's JSON Schema of the structured answer, where it declares one. */
  outputSchema: ObjectJsonSchema.optional(),
  /** Scope entries any one of which grants the tool (ScopesSchema): the server's `toolScopes` entry, else its `scopes`. */
  scopes: ScopesSchema,
  /** The server's `timeoutMs`, where it sets one. */
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
});
export type McpTool = z.infer<typeof McpToolSchema>;

/** What the registry stores of a server: everything but its credential. */
export const McpServerSchema = z.strictObject({
  id: ServiceIdSchema,
  /** The server's Streamable HTTP endpoint: the only URL the registry sends its requests to. */
  url: UpstreamUrlSchema,
  /** Prepended to every upstream tool name; a result that is not a valid tool name is skipped. */
  prefix: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,32}$/, 'must be 1 to 32 letters, digits, "_" or "-"')
    .optional(),
  /** Scopes for every tool of the server; none means every caller. */
  scopes: ScopesSchema.default([]),
  /** Scopes per upstream tool name; an entry wins over `scopes`. */
  toolScopes: countedFirst(
    10_000,
    'entries',
    z
      .record(UpstreamToolNameSchema, ScopesSchema)
      .refine((value) => Object.keys(value).length <= 10_000, 'must have at most 10000 entries')
      // Inside the count, which lets undefined through: zod's document shows no default outside a preprocess.
      .default({}),
  ),
  /**
   * Whether what the upstream lists reaches agents at once (`auto`) or only once an operator has
   * accepted it (`review`, issue 29): new and changed tools wait as pending changes, agents keep
   * the accepted version, and a tool the upstream drops leaves at once. Servers stored before
   * the field existed were migrated to `auto` (migrations/013_mcp_pending.sql), what they did.
   */
  policy: z
    .enum(['review', 'auto'])
    .default('review')
    .describe(
      '`review` (the default): new and changed upstream tools wait in `GET /mcp-servers/{id}/pending` until an operator accepts them, and agents keep the accepted version meanwhile; a tool the upstream drops leaves at once. `auto`: whatever the upstream lists is served at once.',
    ),
  /** Seconds between full refreshes of its tool list (default MCP_UPSTREAM_REFRESH_S). */
  refreshIntervalS: z.number().int().min(5).max(86_400).optional(),
  /** How long a call to one of its tools may wait for its answer (default TOOL_CALL_TIMEOUT_MS). */
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
});
export type McpServer = z.infer<typeof McpServerSchema>;

/** `{ bearer }` sets the credential; `{ set: true }` (what reads show) keeps the stored one. */
const CredentialInputSchema = z.union([
  z.strictObject({ bearer: z.string().regex(/^[\x21-\x7E]{1,4096}$/, 'must be 1 to 4096 printable ASCII characters') }),
  z.strictObject({ set: z.literal(true) }),
]);

export const McpServerInputSchema = McpServerSchema.extend({ credential: CredentialInputSchema.optional() });

/** What a write does with the stored credential. */
export type CredentialChange = { bearer: string } | 'keep' | 'none';

/** An operator's descriptor (parsed, with its id) as what is stored and what happens to the credential. */
export function credentialOf({ credential, ...server }: z.output<typeof McpServerInputSchema>): {
  server: McpServer;
  credential: CredentialChange;
} {
  return { server, credential: credential === undefined ? 'none' : 'bearer' in credential ? { bearer: credential.bearer } : 'keep' };
}
