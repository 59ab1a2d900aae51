/**
 * From an upstream MCP server's `tools/list` to the registry's tools of kind `mcp`, and from
 * those to the one write that brings the stored tools in line. Plain functions: the sync
 * (src/registry/mcp-sync.ts) does the listing, the registry service the write.
 */
import { fieldErrorsFrom } from './resolve.js';
import { McpToolSchema, type McpServer, type McpTool } from './mcp-schemas.js';
import type { ToolDescriptor, ToolKind } from './schemas.js';

/** A tool as an upstream lists it (the SDK has checked the shape of the list). */
export interface UpstreamTool {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema: { type: 'object'; [keyword: string]: unknown };
  outputSchema?: { type: 'object'; [keyword: string]: unknown } | undefined;
}

/** An upstream tool the registry does not list, and why. */
export interface SkippedTool {
  name: string;
  reason: string;
}

/** The bound of an operator's `prefix` (McpServerSchema), which a derived one keeps too. */
const MAX_PREFIX = 32;

/**
 * The namespace of a server's tools (issue 29): its `prefix`, else one derived from its id, the
 * id with each character outside the tool-name alphabet (ids may hold ".") made "_", cut to 31
 * characters, then "_" (`docs.search` -> `docs_search_`). Without a prefix an upstream listing
 * `calculator` was named `calculator`, a name outside any namespace of its own: it took the name
 * the moment an operator's tool of that name was deleted. Derived when tools are listed, never
 * stored, so servers stored without a prefix need no migration (their tools are renamed on the
 * first sync after the upgrade; docs/mcp.md says so). Two long ids may derive the same prefix:
 * the one whose tools were there first keeps a name, the other's tool is skipped as taken.
 */
export function prefixOf(server: Pick<McpServer, 'id' | 'prefix'>): string {
  if (server.prefix !== undefined) return server.prefix;
  return `${server.id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, MAX_PREFIX - 1)}_`;
}

/**
 * The tools the server's list makes, under its prefix (prefixOf) and scopes. A tool whose name or
 * descriptor does not fit the registry's rules is skipped with the reason, not the whole list.
 */
export function mcpToolsOf(server: McpServer, upstream: readonly UpstreamTool[]): { tools: McpTool[]; skipped: SkippedTool[] } {
  const tools: McpTool[] = [];
  const skipped: SkippedTool[] = [];
  const seen = new Set<string>();
  // User-keyed (house style 14): looked up in a Map, never on the parsed object.
  const toolScopes = new Map(Object.entries(server.toolScopes));
  const prefix = prefixOf(server);
  for (const tool of upstream) {
    if (seen.has(tool.name)) {
      skipped.push({ name: tool.name, reason: 'the upstream lists this name more than once' });
      continue;
    }
    seen.add(tool.name);
    const description = tool.description?.trim() || tool.title?.trim() || `${tool.name}, a tool of MCP server "${server.id}"`;
    const candidate = {
      type: 'mcp',
      name: `${prefix}${tool.name}`,
      server: server.id,
      upstreamName: tool.name,
      ...(tool.title !== undefined && { title: tool.title }),
      description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
      scopes: toolScopes.get(tool.name) ?? server.scopes,
      ...(server.timeoutMs !== undefined && { timeoutMs: server.timeoutMs }),
    };
    const parsed = McpToolSchema.safeParse(candidate);
    if (parsed.success) {
      tools.push(parsed.data);
      continue;
    }
    const first = fieldErrorsFrom(parsed.error)[0];
    const reason =
      first?.path === 'name'
        ? `"${candidate.name}" is not a valid tool name: ${first.message}`
        : `${first?.path || '(tool)'}: ${first?.message ?? 'invalid'}`;
    skipped.push({ name: tool.name, reason });
  }
  return { tools, skipped };
}

/** A live stored tool, as the plan needs to see it. */
export interface StoredTool {
  kind: ToolKind;
  serviceId: string | null;
  descriptor: ToolDescriptor;
}

/** A version of an upstream tool waiting for an operator (issue 29), as the sync found it. */
export interface PendingVersion {
  tool: McpTool;
  /** Its digest (src/registry/tool-digest.ts). */
  digest: string;
  /** The digest of the version agents are served now, or null for a tool not served yet. */
  acceptedDigest: string | null;
  /** First listed by this sync (not the version already pending): the audit names it. */
  fresh: boolean;
}

/** A pending version as stored (migrations/013_mcp_pending.sql). */
export interface StoredPending {
  digest: string;
  descriptor: McpTool;
  rejected: boolean;
}

/** A server's policy `review` (issue 29): how the plan weighs what is listed against what is accepted. */
export interface ReviewRules {
  digest: (tool: McpTool) => string;
  /** The version of the name pending now, if one is. */
  pending: (name: string) => StoredPending | undefined;
}

export interface McpSyncPlan {
  upserts: McpTool[];
  /** Names of the server's tools the upstream no longer lists (or that no longer fit). */
  deletes: string[];
  /** Upstream tools whose name another tool has, or an operator's deleted tool had. */
  clashes: SkippedTool[];
  unchanged: number;
  /** Policy `review`: versions to hold as pending, new or changed (a pending row written). */
  pending: PendingVersion[];
  /** Names listed whose pending row goes: what is listed is the accepted version again, or taken. */
  settled: string[];
  /** Names whose listed version is pending already, unchanged (rejected ones included). */
  held: string[];
}

/**
 * What one write must do so that the server's stored tools are `wanted`: new and changed tools
 * (compared as canonical JSON, so that an upstream that reorders keys writes nothing), the
 * server's tools no longer wanted, and names another tool has (never taken over).
 *
 * `deleted` gives the tombstone of a name no live tool has. A name whose last holder was not
 * an upstream's (an operator's or an announcer's tool, since deleted) stays theirs (issue 29):
 * agents that knew `calculator` as the operator's, scoped tool must never find an upstream's
 * copy under it, so such a tool is skipped with the reason until an operator registers the
 * name again or gives the server another prefix.
 */
export function planMcpSync(
  serverId: string,
  wanted: readonly McpTool[],
  stored: (name: string) => StoredTool | undefined,
  own: readonly string[],
  deleted: (name: string) => StoredTool | undefined = () => undefined,
  review?: ReviewRules,
): McpSyncPlan {
  const plan: McpSyncPlan = { upserts: [], deletes: [], clashes: [], unchanged: 0, pending: [], settled: [], held: [] };
  const kept = new Set<string>();
  for (const listed of wanted) {
    const existing = stored(listed.name);
    const clash = clashOf(serverId, listed.name, existing, deleted);
    if (clash !== undefined) {
      plan.clashes.push({ name: listed.upstreamName, reason: clash });
      if (review?.pending(listed.name)) plan.settled.push(listed.name);
      continue;
    }
    const accepted = existing?.descriptor as McpTool | undefined;
    const tool = review ? reviewed(listed, accepted, review, plan) : listed;
    // A new tool under review is not served (nor kept) until it is accepted.
    if (tool === undefined) continue;
    kept.add(tool.name);
    if (existing && canonicalJson(existing.descriptor) === canonicalJson(tool)) plan.unchanged++;
    else plan.upserts.push(tool);
  }
  for (const name of own) if (!kept.has(name)) plan.deletes.push(name);
  return plan;
}

/**
 * Why the server may not hold `name`, or undefined when it may: another tool has it (an
 * operator's, an announcer's, another server's), or its tombstone is one an operator's or an
 * announcer's tool left. The one rule for a sync's tools and for an operator's accept of one.
 */
export function clashOf(
  serverId: string,
  name: string,
  existing: StoredTool | undefined,
  deleted: (name: string) => StoredTool | undefined,
): string | undefined {
  if (existing) {
    if (existing.kind === 'mcp' && existing.serviceId === serverId) return undefined;
    const holder = existing.kind === 'mcp' ? `a tool of MCP server "${existing.serviceId ?? ''}"` : `a tool of kind ${existing.kind}`;
    return `"${name}" is taken by ${holder}`;
  }
  const tombstone = deleted(name);
  if (tombstone && tombstone.kind !== 'mcp')
    return `"${name}" was a tool of kind ${tombstone.kind}, deleted: a name an operator held is never taken over by an upstream`;
  return undefined;
}

/**
 * Policy `review`: what to serve of a listed tool. The listed version when agents are served
 * it already (its pending row, if any, settled); else it is pending, and agents keep the
 * accepted version's served fields (text and schemas) with the rest of the listing's (scopes and
 * timeout come from the operator's server descriptor, not the upstream); undefined for a tool
 * not accepted yet.
 */
function reviewed(listed: McpTool, accepted: McpTool | undefined, review: ReviewRules, plan: McpSyncPlan): McpTool | undefined {
  const digest = review.digest(listed);
  const acceptedDigest = accepted ? review.digest(accepted) : null;
  const held = review.pending(listed.name);
  if (digest === acceptedDigest) {
    if (held) plan.settled.push(listed.name);
    return listed;
  }
  // The same version pending already (its scopes perhaps changed since): rewritten only when the row differs.
  const same = held?.digest === digest;
  if (same && canonicalJson(held.descriptor) === canonicalJson(listed)) plan.held.push(listed.name);
  else plan.pending.push({ tool: listed, digest, acceptedDigest, fresh: !same });
  return accepted && servedAsAccepted(accepted, listed);
}

/** The accepted version's served fields with the listing's others, in the stored key order. */
function servedAsAccepted(accepted: McpTool, listed: McpTool): McpTool {
  return {
    type: 'mcp',
    name: listed.name,
    server: listed.server,
    upstreamName: listed.upstreamName,
    ...(accepted.title !== undefined && { title: accepted.title }),
    description: accepted.description,
    inputSchema: accepted.inputSchema,
    ...(accepted.outputSchema !== undefined && { outputSchema: accepted.outputSchema }),
    scopes: listed.scopes,
    ...(listed.timeoutMs !== undefined && { timeoutMs: listed.timeoutMs }),
  };
}

/** JSON with every object's keys sorted: equal for values that differ only in key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const sorted = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}
