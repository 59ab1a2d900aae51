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
import { credentialOf, type McpTool } from '../model/mcp-schemas.js';
import { planMcpSync, type McpSyncPlan } from '../model/mcp-tools.js';
import type { Actor, AuditEntryInput, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { AuditFor, RegistryStore } from '../store/registry-store.js';
import { toolRecordRepresentation } from '../catalog/record-etag.js';
import { checkWriteCondition, type WriteCondition } from '../model/write-condition.js';
import type { GroupCommit } from './group-commit.js';
import { toolDigest } from './tool-digest.js';

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

/** Tools a sync's audit entry names; past it, a count. 100 entries take about 15 kB. */
const AUDITED_TOOLS = 100;

/**
 * A sync's audit detail: the counts, then each tool written or removed with its digest before
 * and after (`none` where there was, or is, no such tool), the first AUDITED_TOOLS of them.
 * Read before the write, so `stored` still gives the old versions.
 */
function syncDetail(plan: McpSyncPlan, stored: (name: string) => ToolRecord | undefined): string {
  const digestOf = (name: string): string => {
    const record = stored(name);
    return record ? toolDigest(record.descriptor as McpTool) : 'none';
  };
  const named: string[] = [];
  for (const tool of plan.upserts) {
    if (named.length === AUDITED_TOOLS) break;
    named.push(`${tool.name} ${digestOf(tool.name)} -> ${toolDigest(tool)}`);
  }
  for (const name of plan.deletes) {
    if (named.length === AUDITED_TOOLS) break;
    named.push(`${name} ${digestOf(name)} -> none`);
  }
  const total = plan.upserts.length + plan.deletes.length;
  const more = total > named.length ? `; and ${total - named.length} more` : '';
  return `${plan.upserts.length} tool(s) written, ${plan.deletes.length} deleted: ${named.join('; ')}${more}`;
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
   * Creates or replaces a service. A replacement must keep every live tool on it valid (a new
   * required config param, say, would break them), or nothing changes.
   */
  putService(input: ToolServicePutBody, { pathId, actor, owner }: Writer & { pathId?: string | undefined }): PutResult<ServiceRecord> {
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

  deleteService(id: string, { actor, owner }: Writer): ServiceRecord {
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
   * or every name of the list.
   */
  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[], listed?: ReadonlySet<string> | null): McpSyncResult {
    const view = this.#commit.view;
    if (view.mcpServer(serverId)?.index !== serverIndex) return { stale: true, index: null, plan: null };
    let own = view.toolsOfMcpServer(serverId);
    if (listed === null) own = [];
    // The names of this slice are in `wanted`, so kept; the others listed were written by slices before.
    else if (listed !== undefined) own = own.filter((name) => !listed.has(name));
    const plan = planMcpSync(
      serverId,
      wanted,
      (name) => view.tool(name),
      own,
      (name) => view.tombstone(name),
    );
    // The same list as last time writes nothing: no index, no change event.
    if (plan.upserts.length === 0 && plan.deletes.length === 0) return { stale: false, index: null, plan };
    const at = this.#commit.stamp();
    const detail = syncDetail(plan, (name) => view.tool(name));
    const writes = plan.upserts.map((tool) => ({ name: tool.name, kind: 'mcp' as const, serviceId: serverId, descriptor: tool }));
    const records = this.#store.writeMcpTools(
      writes,
      plan.deletes,
      at,
      this.#audit(mcpServerActor(serverId), at, 'mcp-server.sync', () => [serverId, 200, detail]),
    );
    const index = records[0]?.index ?? null;
    if (index !== null) this.#commit.stage(index, { tools: records });
    return { stale: false, index, plan };
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

  /** The audit entry of a successful write (stamped like its records), built inside the transaction. */
  #audit<T>(
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
