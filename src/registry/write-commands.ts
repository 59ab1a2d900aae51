/**
 * The single writes, each run inside a group commit's batch (src/registry/group-commit.ts):
 * validate against the registry as the writes so far leave it, write, stage the records for the
 * catalogue. Validation and the write run synchronously, so no other write can slip between
 * them in this process; the store re-checks what SQLite can (services in use).
 */
import { isDeepStrictEqual } from 'node:util';
import { RegistryError, type FieldError } from '../model/errors.js';
import { resolveTool, validationError, type ParsedTool } from '../model/resolve.js';
import { named, type McpServerPutBody, type ToolPutBody, type ToolServicePutBody } from '../model/descriptors.js';
import { outboundTargetsOf, type OutboundCheck, type OutboundTarget } from '../model/outbound-address.js';
import type { BusTool, ToolService } from '../model/schemas.js';
import { credentialOf, type McpServer, type McpTool } from '../model/mcp-schemas.js';
import { clashOf, planMcpSync, prefixOf, type McpSyncPlan } from '../model/mcp-tools.js';
import type { Actor, AuditEntryInput, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { AuditFor, PendingRecord, RegistryStore } from '../store/registry-store.js';
import { openApiSourceOf } from '../model/openapi-source.js';
import { serviceRecordRepresentation, toolRecordRepresentation } from '../catalog/record-etag.js';
import { checkWriteCondition, type WriteCondition } from '../model/write-condition.js';
import type { GroupCommit } from './group-commit.js';
import { toolDigest } from './tool-digest.js';
import { deprecationOf, type DeprecationBody } from '../model/deprecation.js';

/** What a sync of an MCP server's tools did (src/registry/mcp-sync.ts). */
export interface McpSyncResult {
  /** The server was replaced or deleted since its tools were listed: nothing was written. */
  stale: boolean;
  /** The registry index of the write; null when nothing changed (no write at all). */
  index: number | null;
  plan: McpSyncPlan | null;
}

/**
 * Who writes: `owner` is the announcer a write is made under (it writes only what it owns), null
 * for an operator. A replicated write's comes with its message, so that every replica decides
 * ownership the same way.
 */
interface Writer {
  actor?: Actor | undefined;
  owner: string | null;
}

/**
 * Who writes when the registry syncs an MCP server's tools (issue 29): the source, by its id, so
 * that the audit (and the dashboard's writer column) tells an upstream's writes from an
 * operator's; they were "(anonymous)".
 */
function mcpServerActor(serverId: string): Actor {
  return { sub: `mcp-server:${serverId}`, iss: null, client: null, requestId: null };
}

/** The digest of what agents are served of a stored tool now, or null for none. */
function currentDigest(record: ToolRecord | undefined): string | null {
  return record ? toolDigest(record.descriptor as McpTool) : null;
}

/** Tools a sync's audit entry names; past it, a count. 100 entries take about 15 kB. */
const AUDITED_TOOLS = 100;

/** `name old -> new` for the first AUDITED_TOOLS entries, then a count of the rest. */
function namedDigests(entries: readonly string[]): string {
  const more = entries.length > AUDITED_TOOLS ? `; and ${entries.length - AUDITED_TOOLS} more` : '';
  return `${entries.slice(0, AUDITED_TOOLS).join('; ')}${more}`;
}

/**
 * A sync's audit detail: the counts, then each tool written or removed with its digest before
 * and after (`none` where there was, or is, no such tool), the first AUDITED_TOOLS of them, then
 * the versions it found that now wait for review. Read before the write, so `stored` still gives
 * the old versions.
 */
function syncDetail(plan: McpSyncPlan, stored: (name: string) => ToolRecord | undefined): string {
  const digestOf = (name: string): string => {
    const record = stored(name);
    return record ? toolDigest(record.descriptor as McpTool) : 'none';
  };
  const written = [
    ...plan.upserts.map((tool) => `${tool.name} ${digestOf(tool.name)} -> ${toolDigest(tool)}`),
    ...plan.deletes.map((name) => `${name} ${digestOf(name)} -> none`),
  ];
  const fresh = plan.pending.filter((p) => p.fresh).map((p) => `${p.tool.name} ${p.acceptedDigest ?? 'none'} -> ${p.digest}`);
  const counts = `${plan.upserts.length} tool(s) written, ${plan.deletes.length} deleted`;
  const parts = [written.length > 0 ? `${counts}: ${namedDigests(written)}` : counts];
  if (fresh.length > 0) parts.push(`${fresh.length} pending review: ${namedDigests(fresh)}`);
  return parts.join('; ');
}

/** One change an operator accepts or rejects (issue 29): the served name and the digest it was listed with. */
export interface ReviewedChange {
  tool: string;
  digest: string;
}

/** What accepting or rejecting did: each change with the digest agents were served before. */
export interface ReviewResult {
  index: number | null;
  changes: { tool: string; digest: string; acceptedDigest: string | null }[];
}

export class WriteCommands {
  readonly #store: RegistryStore;
  readonly #commit: GroupCommit;
  /** The outbound address policy's check of the hosts and URLs descriptors point at. */
  readonly #outbound: OutboundCheck;
  readonly #lookupService = (id: string): ToolService | undefined => this.#commit.view.service(id);

  constructor(store: RegistryStore, commit: GroupCommit, outbound: OutboundCheck) {
    this.#store = store;
    this.#commit = commit;
    this.#outbound = outbound;
  }

  /** `pathName`, from a PUT's URL, must match the body's name. */
  putTool(
    input: ToolPutBody,
    { pathName, condition, actor, owner }: Writer & { pathName?: string | undefined; condition?: WriteCondition | undefined },
  ): PutResult<ToolRecord> {
    // Before the body is looked at (RFC 9110 section 13.2.2); a PUT names its tool in the path.
    // The route checked it before the body too; here it holds as of this batch.
    if (condition !== undefined && pathName !== undefined) this.#checkCondition(pathName, condition);
    const parsed = resolveTool(named(input, 'name', pathName), this.#lookupService);
    this.checkTargets(parsed);
    const existing = this.#commit.view.tool(parsed.name);
    // An operator's write of a name an upstream's tool has takes the name (issue 29): the
    // operator decides what a name means, so an upstream must not be able to block one, nor a
    // restore of a backup holding it; 409 made both fail. The upstream's tool is replaced, and
    // its later syncs skip it as taken (shown under upstream.skipped). An announcer may not.
    const displaced = existing?.kind === 'mcp' ? existing.serviceId : null;
    // An OpenAPI source's tool changes with its source only: its next write would undo an edit.
    if (openApiSourceOf(existing?.owner) !== undefined) this.#refuseManaged(parsed.name);
    if (owner !== null) {
      this.#refuseManaged(parsed.name);
      refuseNotOwned('tool', parsed.name, existing, owner);
      // An announcement repeats itself with every heartbeat: the same descriptor writes nothing.
      if (existing && isDeepStrictEqual(existing.descriptor, parsed.descriptor)) return { record: existing, created: false };
    }
    const at = this.#commit.stamp();
    const detail = displaced === null ? undefined : `replaced the tool of MCP server "${displaced}"`;
    const result = this.#store.putTool(
      { ...parsed, owner },
      at,
      this.#audit(actor, at, 'tool.put', (r) => [r.record.name, r.created ? 201 : 200, detail]),
    );
    this.#commit.stage(result.record.index, { tools: [result.record] });
    return result;
  }

  deleteTool(name: string, { condition, actor, owner }: Writer & { condition?: WriteCondition | undefined }): ToolRecord {
    if (condition !== undefined) this.#checkCondition(name, condition);
    this.#refuseManaged(name);
    if (owner !== null) refuseNotOwned('tool', name, this.#commit.view.tool(name), owner);
    const at = this.#commit.stamp();
    const record = this.#store.deleteTool(
      name,
      at,
      this.#audit(actor, at, 'tool.delete', (r) => [r.name, 200]),
    );
    this.#commit.stage(record.index, { tools: [record] });
    return record;
  }

  /**
   * Issue 34: sets (a body) or lifts (null) a live tool's deprecation. The replacement must be
   * another tool the registry has now; the sunset is stored in UTC. An OpenAPI source's or an
   * announcer's tool may be deprecated too: the deprecation is the operator's, not the source's.
   */
  deprecateTool(
    name: string,
    body: DeprecationBody | null,
    { condition, actor, owner }: Writer & { condition?: WriteCondition | undefined },
  ): ToolRecord {
    if (condition !== undefined) this.#checkCondition(name, condition);
    if (owner !== null) refuseNotOwned('tool', name, this.#commit.view.tool(name), owner);
    if (!this.#commit.view.tool(name)) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${name}"`);
    const replacement = body?.replacement;
    if (replacement !== undefined) {
      const field = (message: string) =>
        new RegistryError('TR_ERR_BAD_REQUEST', `replacement: ${message}`, { fieldErrors: [{ path: 'replacement', message }] });
      if (replacement === name) throw field('must be another tool than the deprecated one');
      if (!this.#commit.view.tool(replacement)) throw field(`no tool "${replacement}"`);
    }
    const at = this.#commit.stamp();
    const record = this.#store.deprecateTool(
      name,
      body && deprecationOf(body, at),
      at,
      this.#audit(actor, at, body ? 'tool.deprecate' : 'tool.undeprecate', (r) => [r.name, 200]),
    );
    this.#commit.stage(record.index, { tools: [record] });
    return record;
  }

  /**
   * Creates or replaces a service. A replacement must keep every live tool on it valid (a new
   * required config param, say, would break them), or nothing changes.
   */
  putService(
    input: ToolServicePutBody,
    { pathId, condition, actor, owner }: Writer & { pathId?: string | undefined; condition?: WriteCondition | undefined },
  ): PutResult<ServiceRecord> {
    // As a tool's PUT: before the body is looked at, as of this batch.
    if (condition !== undefined && pathId !== undefined) this.#checkServiceCondition(pathId, condition);
    const service = named(input, 'id', pathId);
    if (owner !== null) {
      const existing = this.#commit.view.serviceRecord(service.id);
      refuseNotOwned('tool service', service.id, existing, owner);
      if (existing && isDeepStrictEqual(existing.descriptor, service)) return { record: existing, created: false };
      refuseForeignQueues(service, existing, owner, this.#commit.view.services());
    }
    const broken = this.toolsBrokenBy(service);
    if (broken.length > 0) {
      throw new RegistryError(
        'TR_ERR_CONFLICT',
        `replacing tool service "${service.id}" would invalidate tools: ${broken.map((b) => b.name).join(', ')}`,
        { fieldErrors: broken.flatMap((b) => b.errors), extra: { tools: broken.map((b) => b.name) } },
      );
    }
    const at = this.#commit.stamp();
    const result = this.#store.putService(
      service,
      at,
      this.#audit(actor, at, 'tool-service.put', (r) => [r.record.id, r.created ? 201 : 200]),
      owner,
    );
    this.#commit.stage(result.record.index, { services: [result.record] });
    return result;
  }

  deleteService(id: string, { condition, actor, owner }: Writer & { condition?: WriteCondition | undefined }): ServiceRecord {
    if (condition !== undefined) this.#checkServiceCondition(id, condition);
    if (owner !== null) refuseNotOwned('tool service', id, this.#commit.view.serviceRecord(id), owner);
    const users = this.#commit.view.toolsUsingService(id);
    if (users.length > 0) {
      throw new RegistryError('TR_ERR_IN_USE', `tool service "${id}" is still used by: ${users.join(', ')}`, { extra: { tools: users } });
    }
    const at = this.#commit.stamp();
    const record = this.#store.deleteService(
      id,
      at,
      this.#audit(actor, at, 'tool-service.delete', (r) => [r.id, 200]),
    );
    this.#commit.stage(record.index, { services: [record] });
    return record;
  }

  putMcpServer(input: McpServerPutBody, pathId: string | undefined, actor: Actor | undefined): PutResult<McpServerRecord> {
    const { server, credential } = credentialOf(named(input, 'id', pathId));
    this.#refuseTargets('MCP server', outboundTargetsOf('mcp-server', server));
    this.#refuseOverlappingPrefix(server);
    const at = this.#commit.stamp();
    // The audit entry names the server only: never its credential.
    const result = this.#store.putMcpServer(
      server,
      credential,
      at,
      this.#audit(actor, at, 'mcp-server.put', (r) => [r.record.id, r.created ? 201 : 200]),
    );
    this.#commit.stage(result.record.index, { mcpServers: [result.record] });
    return result;
  }

  deleteMcpServer(id: string, actor: Actor | undefined): { server: McpServerRecord; tools: ToolRecord[] } {
    const at = this.#commit.stamp();
    const describe = (r: { server: McpServerRecord; tools: ToolRecord[] }): [string, number, string] => [
      r.server.id,
      200,
      `${r.tools.length} tool(s) deleted with it`,
    ];
    const result = this.#store.deleteMcpServer(id, at, this.#audit(actor, at, 'mcp-server.delete', describe));
    this.#commit.stage(result.server.index, { mcpServers: [result.server], tools: result.tools });
    return result;
  }

  /**
   * Brings an MCP server's stored tools in line with `wanted`, listed while the server's record
   * was at `serverIndex`. `listed`: undefined for a whole list; a slice's: null (delete nothing)
   * or every name of the list. Under the server's policy `review` (issue 29), what differs from
   * the accepted versions is written as pending instead, and agents keep what was accepted.
   */
  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[], listed?: ReadonlySet<string> | null): McpSyncResult {
    const view = this.#commit.view;
    const server = view.mcpServer(serverId);
    if (server?.index !== serverIndex) return { stale: true, index: null, plan: null };
    let own = view.toolsOfMcpServer(serverId);
    if (listed === null) own = [];
    // The names of this slice are in `wanted`, so kept; the others listed were written by slices before.
    else if (listed !== undefined) own = own.filter((name) => !listed.has(name));
    const review = server.descriptor.policy !== 'auto';
    const plan = planMcpSync(
      serverId,
      wanted,
      (name) => view.tool(name),
      own,
      (name) => view.tombstone(name),
      review ? { digest: toolDigest, pending: (name) => this.#store.mcpPending(serverId, name) } : undefined,
    );
    const pending = { serverId, put: plan.pending, drop: this.#pendingDropped(serverId, plan, wanted, listed, review) };
    const pendingChanged = pending.put.length > 0 || pending.drop.length > 0;
    const wrote = plan.upserts.length > 0 || plan.deletes.length > 0;
    // The same list as last time writes nothing (no stamp, no index, no change event).
    if (!wrote && !pendingChanged) return { stale: false, index: null, plan };
    const at = this.#commit.stamp();
    const detail = syncDetail(plan, (name) => view.tool(name));
    // Only pending versions changed: no tool agents see, so no index and no change event.
    if (!wrote) {
      const audit = plan.pending.some((p) => p.fresh)
        ? this.#audit(mcpServerActor(serverId), at, 'mcp-server.sync', () => [serverId, 200, detail])
        : undefined;
      this.#store.writeMcpPending(pending, at, audit?.(undefined));
      return { stale: false, index: null, plan };
    }
    const writes = plan.upserts.map((tool) => ({ name: tool.name, kind: 'mcp' as const, serviceId: serverId, descriptor: tool }));
    const records = this.#store.writeMcpTools(
      writes,
      plan.deletes,
      at,
      this.#audit(mcpServerActor(serverId), at, 'mcp-server.sync', () => [serverId, 200, detail]),
      pendingChanged ? pending : undefined,
    );
    const index = records[0]?.index ?? null;
    if (index !== null) this.#commit.stage(index, { tools: records });
    return { stale: false, index, plan };
  }

  /**
   * The pending rows a sync removes: names listed again at their accepted version, or taken;
   * and after a whole list (or its last slice), every name it did not list, or every row at
   * all under the policy `auto`.
   */
  #pendingDropped(
    serverId: string,
    plan: McpSyncPlan,
    wanted: readonly McpTool[],
    listed: ReadonlySet<string> | null | undefined,
    review: boolean,
  ): string[] {
    const dropped = [...plan.settled];
    if (listed === null) return dropped;
    const names = listed ?? new Set(wanted.map((t) => t.name));
    for (const name of this.#store.mcpPendingNames(serverId)) if (!review || !names.has(name)) dropped.push(name);
    return dropped;
  }

  /**
   * An operator accepts pending versions of a server's tools (issue 29): each must be pending
   * now with the digest the operator read, so that a version that moved again meanwhile is
   * never accepted unseen; all or none. Written as the server's tools and audited under the
   * operator, with the digests before and after.
   */
  acceptMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor: Actor | undefined): ReviewResult {
    const view = this.#commit.view;
    const found = this.#reviewed(serverId, changes, 'accept');
    // Taken meanwhile (an operator's write of the name): the rule a sync holds its tools to.
    const errors: FieldError[] = [];
    found.forEach(({ version }, i) => {
      const clash = clashOf(serverId, version.name, view.tool(version.name), (name) => view.tombstone(name));
      if (clash !== undefined) errors.push({ path: `changes.${i}.tool`, message: clash });
    });
    if (errors.length > 0)
      throw new RegistryError('TR_ERR_CONFLICT', `cannot accept: ${errors[0]?.message ?? ''}`, { fieldErrors: errors });
    const at = this.#commit.stamp();
    const result: ReviewResult = { index: null, changes: found.map(({ change }) => change) };
    const detail = `${result.changes.length} change(s) accepted: ${namedDigests(result.changes.map((c) => `${c.tool} ${c.acceptedDigest ?? 'none'} -> ${c.digest}`))}`;
    const writes = found.map(({ version }) => ({
      name: version.name,
      kind: 'mcp' as const,
      serviceId: serverId,
      descriptor: version.descriptor,
    }));
    const records = this.#store.acceptMcpTools(
      serverId,
      writes,
      at,
      this.#audit(actor, at, 'mcp-server.accept', () => [serverId, 200, detail]),
    );
    result.index = records[0]?.index ?? null;
    if (result.index !== null) this.#commit.stage(result.index, { tools: records });
    return result;
  }

  /**
   * An operator rejects pending versions (issue 29), checked as accepting them is: agents keep
   * what they are served, and the same version listed again stays out of the queue.
   */
  rejectMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor: Actor | undefined): ReviewResult {
    const found = this.#reviewed(serverId, changes, 'reject');
    const at = this.#commit.stamp();
    const result: ReviewResult = { index: null, changes: found.map(({ change }) => change) };
    const detail = `${result.changes.length} change(s) rejected: ${namedDigests(result.changes.map((c) => `${c.tool} ${c.digest}`))}`;
    const audit = this.#audit(actor, at, 'mcp-server.reject', () => [serverId, 200, detail]);
    this.#store.rejectMcpPending(
      serverId,
      found.map(({ version }) => version.name),
      at,
      audit?.(undefined),
    );
    return result;
  }

  /**
   * The pending versions `changes` name, each at the digest given, with the entry the answer
   * gives for it (the digest agents are served now); a 404 or 409 naming each that is not.
   */
  #reviewed(
    serverId: string,
    changes: readonly ReviewedChange[],
    verb: 'accept' | 'reject',
  ): { version: PendingRecord; change: ReviewResult['changes'][number] }[] {
    const view = this.#commit.view;
    if (!view.mcpServer(serverId)) throw new RegistryError('TR_ERR_NOT_FOUND', `no MCP server "${serverId}"`);
    return reviewedChanges(
      changes,
      verb,
      (name) => this.#store.mcpPending(serverId, name),
      (name) => currentDigest(view.tool(name)),
      { mcpServer: serverId },
    );
  }

  /** An HTTP tool's host and port against the outbound address policy. */
  checkTargets(tool: ParsedTool, prefix: readonly PropertyKey[] = []): void {
    if (tool.kind === 'http') this.#refuseTargets('HTTP tool', outboundTargetsOf('http-tool', tool.descriptor), prefix);
  }

  /** Live tools on `service` that its new version would break, except those `replacedBy` replaces. */
  toolsBrokenBy(service: ToolService, replacedBy: ReadonlyMap<string, unknown> = new Map()): { name: string; errors: FieldError[] }[] {
    const view = this.#commit.view;
    const broken: { name: string; errors: FieldError[] }[] = [];
    for (const name of view.toolsUsingService(service.id)) {
      if (replacedBy.has(name)) continue;
      const record = view.tool(name);
      if (!record) continue;
      try {
        resolveTool(record.descriptor as BusTool, (id) => (id === service.id ? service : view.service(id)), ['tools', name]);
      } catch (err) {
        if (!(err instanceof RegistryError)) throw err;
        broken.push({ name, errors: err.fieldErrors ?? [{ path: `tools.${name}`, message: err.message }] });
      }
    }
    return broken;
  }

  /**
   * Namespaces do not nest (issue 29): a server whose prefix starts another server's, or starts
   * with it (`gh_` and `gh_s`), could list a name inside the other's namespace (`earch` ->
   * `gh_search`) and hold it whenever the other does not list it, a shadow of its tool. A new
   * prefix that overlaps a live server's is refused; a server stored with one before this check
   * keeps it as long as its prefix does not change.
   */
  #refuseOverlappingPrefix(server: McpServer): void {
    const view = this.#commit.view;
    const prefix = prefixOf(server);
    const before = view.mcpServer(server.id);
    if (before && prefixOf(before.descriptor) === prefix) return;
    for (const other of view.mcpServers()) {
      if (other.id === server.id) continue;
      const theirs = prefixOf(other.descriptor);
      if (!theirs.startsWith(prefix) && !prefix.startsWith(theirs)) continue;
      const message = `"${prefix}" overlaps the prefix "${theirs}" of MCP server "${other.id}": one server's tools could take names in the other's namespace; give a prefix that neither starts nor is started by another server's`;
      throw new RegistryError('TR_ERR_CONFLICT', `MCP server "${server.id}": ${message}`, {
        fieldErrors: [{ path: server.prefix === undefined ? 'id' : 'prefix', message }],
        extra: { mcpServer: other.id },
      });
    }
  }

  /** A `TR_ERR_VALIDATION` naming each refused target's field and the rule that refuses it. */
  #refuseTargets(what: string, targets: readonly OutboundTarget[], prefix: readonly PropertyKey[] = []): void {
    const errors: FieldError[] = [];
    for (const target of targets) {
      const refusal = this.#outbound(target);
      if (refusal !== undefined) errors.push({ path: [...prefix, target.path].map(String).join('.'), message: refusal });
    }
    if (errors.length > 0) throw validationError(what, errors);
  }

  /**
   * An MCP server's tool may not be deleted through /tools (its next sync would list it again),
   * nor written by an announcer; an operator's write takes its name over instead (putTool).
   */
  #refuseManaged(name: string): void {
    const record = this.#commit.view.tool(name);
    const source = openApiSourceOf(record?.owner);
    if (source !== undefined)
      throw new RegistryError(
        'TR_ERR_CONFLICT',
        `tool "${name}" belongs to OpenAPI source "${source}", which manages it: change the source (its filter or document) or delete it instead`,
        { extra: { openApiSource: source } },
      );
    if (record?.kind !== 'mcp') return;
    throw new RegistryError(
      'TR_ERR_CONFLICT',
      `tool "${name}" belongs to MCP server "${record.serviceId ?? ''}", which manages it: change or delete the server instead`,
      {
        extra: { mcpServer: record.serviceId },
      },
    );
  }

  /** A tool write's If-Match / If-None-Match against the tool as stored now, staged writes included. */
  #checkCondition(name: string, condition: WriteCondition): void {
    const current = this.#commit.view.tool(name);
    checkWriteCondition(`tool "${name}"`, condition, current && toolRecordRepresentation(current).etag);
  }

  /** A tool service write's If-Match / If-None-Match against the service as stored now, staged writes included. */
  #checkServiceCondition(id: string, condition: WriteCondition): void {
    const current = this.#commit.view.serviceRecord(id);
    checkWriteCondition(`tool service "${id}"`, condition, current && serviceRecordRepresentation(current).etag);
  }

  /** The audit entry of a successful write (stamped like its records), built inside the transaction. */
  #audit<T>(
    actor: Actor | undefined,
    at: string,
    action: string,
    describe: (result: T) => [target: string | null, status: number, detail?: string],
  ): AuditFor<T> | undefined {
    return auditFor(actor, at, action, describe);
  }
}

/**
 * The pending versions `changes` name (issues 29 and 30: an MCP server's or an OpenAPI source's
 * queue), each at the digest the operator read, with the entry the answer gives for it (the
 * digest agents are served now); a 409 naming each that is named twice, not pending, or pending
 * at another digest now, with `extra` (which queue) in the problem.
 */
export function reviewedChanges<V extends { name: string; digest: string }>(
  changes: readonly ReviewedChange[],
  verb: 'accept' | 'reject',
  pendingOf: (name: string) => V | undefined,
  servedDigestOf: (name: string) => string | null,
  extra: Record<string, string>,
): { version: V; change: ReviewResult['changes'][number] }[] {
  const errors: FieldError[] = [];
  const found: { version: V; change: ReviewResult['changes'][number] }[] = [];
  const seen = new Set<string>();
  changes.forEach((change, i) => {
    if (seen.has(change.tool)) {
      errors.push({ path: `changes.${i}.tool`, message: `"${change.tool}" is named more than once` });
      return;
    }
    seen.add(change.tool);
    const version = pendingOf(change.tool);
    if (!version) errors.push({ path: `changes.${i}.tool`, message: `no change of "${change.tool}" is pending` });
    else if (version.digest !== change.digest)
      errors.push({
        path: `changes.${i}.digest`,
        message: `the pending version of "${change.tool}" is ${version.digest} now, not ${change.digest}: read the queue again`,
      });
    else found.push({ version, change: { tool: version.name, digest: version.digest, acceptedDigest: servedDigestOf(version.name) } });
  });
  if (errors.length > 0)
    throw new RegistryError('TR_ERR_CONFLICT', `cannot ${verb}: ${errors[0]?.message ?? ''}`, { fieldErrors: errors, extra });
  return found;
}

/** The audit entry of a write by `actor`, from its result; none without an actor (the registry's own writes). */
export function auditFor<T>(
  actor: Actor | undefined,
  at: string,
  action: string,
  describe: (result: T) => [target: string | null, status: number, detail?: string],
): AuditFor<T> | undefined {
  if (!actor) return undefined;
  return (result: T): AuditEntryInput => {
    const [target, status, detail] = describe(result);
    return { ...actor, at, action, target, outcome: 'ok', status, detail: detail ?? null };
  };
}

/** Who holds a tool name, in words for a refusal. */
export function holderOf(record: ToolRecord): string {
  const source = openApiSourceOf(record.owner);
  if (source !== undefined) return `OpenAPI source "${source}"`;
  if (record.kind === 'mcp') return `MCP server "${record.serviceId ?? ''}"`;
  if (record.owner !== undefined) return 'an announced tool service';
  return "an operator's tool";
}

/** An announcer writes only what it owns (or what does not exist): never an operator's. */
function refuseNotOwned(what: string, name: string, existing: { owner?: string } | undefined, owner: string): void {
  if (existing === undefined || existing.owner === owner) return;
  throw new RegistryError(
    'TR_ERR_CONFLICT',
    `${what} "${name}" was registered by ${existing.owner === undefined ? 'an operator' : 'another announcer'}: an announcement cannot write over it`,
  );
}

/**
 * An announcer's service may not use a queue another owner's service uses (an operator's, or
 * another announcer's: issue 29), or its requests would reach that owner's workers, and their
 * answers the announcer's tools. A queue this service already had as stored is kept, so services
 * that shared before this rule keep working. Decided here, on the write side, so that every
 * replica decides it alike; an operator's own writes may share queues (the operator says so).
 */
function refuseForeignQueues(
  service: ToolService,
  existing: ServiceRecord | undefined,
  owner: string,
  services: readonly ServiceRecord[],
): void {
  const queues = [service['request-queue'], service['response-queue']];
  const kept = new Set(existing ? [existing.descriptor['request-queue'], existing.descriptor['response-queue']] : []);
  for (const other of services) {
    if (other.id === service.id || other.owner === owner) continue;
    const taken = queues.filter(
      (queue) => !kept.has(queue) && (queue === other.descriptor['request-queue'] || queue === other.descriptor['response-queue']),
    );
    if (taken.length > 0)
      throw new RegistryError(
        'TR_ERR_CONFLICT',
        `tool service "${service.id}" names ${taken.join(' and ')}, which tool service "${other.id}" of ${other.owner === undefined ? 'an operator' : 'another announcer'} uses: an announcement cannot take another owner's queues`,
        { extra: { toolService: other.id } },
      );
  }
}
