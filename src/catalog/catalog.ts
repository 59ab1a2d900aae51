/**
 * The read model every front serves from: the snapshot of live descriptors (snapshot.ts) with
 * its discovery views (views.ts). Reads never touch SQLite. The catalogue holds the snapshot
 * rather than extending it: the snapshot reports every change of its state (its one #changed),
 * and that drops every cached view at once, so no write, present or added later, can leave a
 * stale view or ETag behind. Who hears of the write is the change bus's job
 * (src/registry/change-bus.ts), not the catalogue's.
 */
import type { Change, McpServerRecord, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import type { ViewKey } from '../model/visibility.js';
import type { CatalogTool } from './catalog-tool.js';
import type { History } from './history.js';
import type { LiveIndexes } from './indexes.js';
import { Scheduler } from './scheduler.js';
import type { SearchFeeder } from './search-feeder.js';
import { CatalogSnapshot, type CatalogWrite, type PreparedWrite, type SnapshotData } from './snapshot.js';
import type { SortedNames } from './sorted-names.js';
import type { Steps } from './steps.js';
import { CatalogViews, type CatalogView, type ViewPlan } from './views.js';

export type { CatalogTool } from './catalog-tool.js';
export type { PreparedWrite } from './snapshot.js';
export type { CatalogView, ViewPlan } from './views.js';

export interface CatalogOptions {
  /** Base URL agents use to reach this registry; message-bus tools point at its invoke route. */
  publicUrl: URL;
  /** The article's `service` field in discovery responses. */
  serviceName: string;
  /** Upper bound on the bytes of cached views. */
  viewCacheBytes: number;
  /** The app's one scheduler of background work (a new one when not given). */
  scheduler?: Scheduler;
  /** The clock sunsets are read against (issue 34); Date.now when not given. */
  now?: () => number;
}

/** Told when tools leave the catalogue at their sunset (issue 34), as after a write at the current index. */
export type SunsetListener = (index: number, changes: readonly Change[]) => void;

/** setTimeout's longest delay (about 24.8 days): a later sunset re-arms the timer when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface CatalogStats {
  total_tools: number;
  tools_by_name: string[];
  scope_usage: Record<string, number>;
  unique_scopes: number;
  tools_by_kind: Record<string, number>;
  total_tool_services: number;
}

/** Live tools per tool service and per MCP server: backend topology, so for operators only. */
export interface ServiceStats {
  tools_by_service: Record<string, number>;
  tools_by_mcp_server: Record<string, number>;
}

export class Catalog {
  /** The app's scheduler of background work: the search backlog, imports, replays and MCP listings share it. */
  readonly scheduler: Scheduler;
  readonly #snapshot: CatalogSnapshot;
  /** The snapshot's parts, held here so that a read is one call away from its data. */
  readonly #live: LiveIndexes;
  readonly #history: History;
  readonly #feeder: SearchFeeder;
  readonly #views: CatalogViews;
  readonly #serviceName: string;
  /** The whole catalogue's view after each prepared write, built with it. */
  readonly #preparedViews = new WeakMap<PreparedWrite, CatalogView>();
  readonly #now: () => number;
  #sunsetTimer: NodeJS.Timeout | undefined;
  /** The sunset the timer is armed for. */
  #sunsetAt: number | undefined;
  readonly #sunsetListeners = new Set<SunsetListener>();

  constructor(options: CatalogOptions) {
    this.#serviceName = options.serviceName;
    this.scheduler = options.scheduler ?? new Scheduler();
    this.#now = options.now ?? Date.now;
    this.#snapshot = new CatalogSnapshot(
      options.publicUrl,
      () => {
        this.#views.invalidate();
        this.#armSunset();
      },
      this.scheduler,
      this.#now,
    );
    this.#live = this.#snapshot.live;
    this.#history = this.#snapshot.history;
    this.#feeder = this.#snapshot.feeder;
    this.#views = new CatalogViews(this.#snapshot, { serviceName: options.serviceName, cacheBytes: options.viewCacheBytes });
    this.getTool = this.#live.getTool;
    this.existedAt = this.#history.existedAt;
    this.lookupService = this.#snapshot.lookupService;
  }

  /** Calls `listener` when tools leave at their sunset; returns the unsubscribe. */
  onSunset(listener: SunsetListener): () => void {
    this.#sunsetListeners.add(listener);
    return () => {
      this.#sunsetListeners.delete(listener);
    };
  }

  /** Stops the sunset timer (the app's close). */
  close(): void {
    clearTimeout(this.#sunsetTimer);
    this.#sunsetTimer = undefined;
    this.#sunsetAt = undefined;
  }

  /**
   * Arms the timer for the nearest sunset, after every change of the state: a map of the few
   * tools with one, never a walk of the catalogue.
   */
  #armSunset(): void {
    const next = this.#snapshot.sunsets.nearest();
    if (next === this.#sunsetAt) return;
    clearTimeout(this.#sunsetTimer);
    this.#sunsetAt = next;
    if (next === undefined) return;
    this.#sunsetTimer = setTimeout(() => this.expireSunsets(), Math.min(MAX_TIMER_MS, Math.max(0, next - this.#now())));
    this.#sunsetTimer.unref();
  }

  /**
   * Drops the tools whose sunset has come, as tombstones at the current index, without a write:
   * the views are rebuilt as after a write, and the listeners (the change bus) told, so that
   * blocking queries and change feeds wake. Returns the changes (none when nothing was due).
   */
  expireSunsets(): Change[] {
    this.#sunsetTimer = undefined;
    this.#sunsetAt = undefined;
    const due = this.#snapshot.sunsets.due(this.#now());
    const records = due.flatMap((name) => {
      const record = this.getTool(name)?.record;
      return record ? [record] : [];
    });
    if (records.length === 0) {
      this.#armSunset();
      return [];
    }
    // apply() turns each past-sunset record into its tombstone.
    const changes = this.#snapshot.apply(this.index, { tools: records });
    for (const listener of this.#sunsetListeners) listener(this.index, changes);
    return changes;
  }

  /** The article's `service` field of discovery responses. */
  get serviceName(): string {
    return this.#serviceName;
  }

  get index(): number {
    return this.#snapshot.index;
  }

  /** Changes with every write and load: what is cached from the catalogue is valid while it stays. */
  get version(): number {
    return this.#snapshot.version;
  }

  /** Where agents reach this registry: part of every message-bus tool's discovery entry. */
  get publicUrl(): URL {
    return this.#snapshot.publicUrl;
  }

  get scopeSetChangedAt(): number {
    return this.#snapshot.scopeSetChangedAt;
  }

  get serviceCount(): number {
    return this.#snapshot.serviceCount;
  }

  get toolCount(): number {
    return this.#live.size;
  }

  /** Written tools not yet searchable: indexed in slices after a big write. */
  get searchBacklog(): number {
    return this.#feeder.pending;
  }

  load(data: SnapshotData): void {
    this.#snapshot.load(data);
  }

  /** A live record's entry built ahead of a big write (see CatalogSnapshot.prepare). */
  prepare(record: ToolRecord): CatalogTool {
    return this.#snapshot.prepare(record);
  }

  /** Applies one committed write in place (see CatalogSnapshot.apply); returns its changes. */
  apply(index: number, change: CatalogWrite, prepared?: ReadonlyMap<string, CatalogTool>): Change[] {
    return this.#snapshot.apply(index, change, prepared);
  }

  /** A big write prepared in steps (see CatalogSnapshot), with the full view it will show. */
  *prepareWrite(index: number, change: CatalogWrite, entries?: ReadonlyMap<string, CatalogTool>): Steps<PreparedWrite> {
    const write = yield* this.#snapshot.prepareWrite(index, change, entries);
    this.#preparedViews.set(write, yield* this.#views.prepareFullView(write.indexes.sorted, index));
    return write;
  }

  /** Swaps in a prepared write (see CatalogSnapshot.applyPrepared), with its full view when it swapped. */
  applyPrepared(write: PreparedWrite): { changes: Change[]; swapped: boolean } {
    const applied = this.#snapshot.applyPrepared(write);
    const view = this.#preparedViews.get(write);
    if (applied.swapped && view) this.#views.installFullView(view);
    return applied;
  }

  /** A live tool by name: the live indexes' own lookup, handed out as it is (the hottest read). */
  readonly getTool: (name: string) => CatalogTool | undefined;

  /** Descriptor lookup for validation of message-bus tools. */
  readonly lookupService: (id: string) => ToolService | undefined;

  getService(id: string): ServiceRecord | undefined {
    return this.#snapshot.getService(id);
  }

  services(): ServiceRecord[] {
    return this.#snapshot.services();
  }

  getMcpServer(id: string): McpServerRecord | undefined {
    return this.#snapshot.getMcpServer(id);
  }

  /** Live MCP servers, sorted by id. */
  mcpServers(): McpServerRecord[] {
    return this.#snapshot.mcpServers();
  }

  /** How many live tools each tool service and each MCP server carries (0 for none), in id order. */
  toolCountsByService(): { services: Map<string, number>; mcpServers: Map<string, number> } {
    return this.#snapshot.toolCountsByService();
  }

  /** Every live tool in name order. */
  tools(): readonly CatalogTool[] {
    return this.#live.tools();
  }

  /** Live names in order: every tool, or those needing no scope. */
  names(which: 'all' | 'public'): SortedNames {
    return this.#live.names(which);
  }

  /** Live names in order of the tools that list this scope among theirs (undefined: none). */
  namesWithScope(scope: string): SortedNames | undefined {
    return this.#live.namesWithScope(scope);
  }

  /** The entry indexes whose scope entries match (LiveIndexes.scopeIndexes). */
  scopeIndexes(match: (entry: string) => boolean): SortedNames[] {
    return this.#live.scopeIndexes(match);
  }

  toolsUsingService(id: string): string[] {
    return this.#live.toolsUsingService(id);
  }

  /** Names of the live tools of an MCP server, in name order. */
  toolsOfMcpServer(id: string): string[] {
    return this.#live.toolsOfMcpServer(id);
  }

  /** Every scope entry any live tool lists, with how many tools list it, in name order. */
  knownScopes(): ReadonlyMap<string, number> {
    return this.#live.knownScopes();
  }

  /** Every scope token some live tool's entry names (what `scopes_supported` lists). */
  knownTokens(): ReadonlySet<string> {
    return this.#live.knownTokens();
  }

  /**
   * Every scope token some live tool's entry names: what the visibility rules list in the
   * challenge under ANONYMOUS_DISCOVERY=none (tokens, as RFC 6750's `scope` is). Bound once, so
   * a request passes it without allocating a closure.
   */
  readonly knownScopeNames = (): Iterable<string> => this.#live.knownTokens();

  getTombstone(name: string): ToolRecord | undefined {
    return this.#history.getTombstone(name);
  }

  /** Whether a tool by this name was live at `index`: History's own (a pinned walk asks it of every entry). */
  readonly existedAt: (name: string, index: number) => boolean;

  /** Tombstones whose deletion came after `index`, oldest deletion first. */
  deletedAfter(index: number): Generator<ToolRecord> {
    return this.#history.deletedAfter(index);
  }

  /** Tools (live, or tombstones) in the order of their latest change (see History.changedSince). */
  changedSince(
    since: string | undefined,
    after: { index: number; name: string } | undefined,
  ): Generator<{ record: ToolRecord; entry: CatalogTool | undefined }> {
    return this.#history.changedSince(since, after);
  }

  /** Live tools matching `query`, best first (see SearchFeeder.search). */
  search(query: string, limit: number, accept: (entry: CatalogTool) => boolean): CatalogTool[] {
    return this.#feeder.search(query, limit, accept);
  }

  /** Null when every written tool is searchable; else a promise that resolves once they are. */
  searchable(): Promise<void> | null {
    return this.#feeder.searchable();
  }

  view(key: ViewKey): CatalogView {
    return this.#views.view(key);
  }

  /** The view's tools, ETag, index and hidden count, without building its bytes (views.ts). */
  plan(key: ViewKey): ViewPlan {
    return this.#views.plan(key);
  }

  changedAt(key: ViewKey): number {
    return this.#views.changedAt(key);
  }

  /** The article's /stats figures over one view. */
  stats(key: ViewKey): CatalogStats {
    const { tools } = this.plan(key);
    // Scopes are user input: counted in a Map, handed out as a null-prototype object (a scope
    // named `constructor` made its count a string when this was a plain object).
    const scopeUsage = new Map<string, number>();
    const byKind = new Map<string, number>([
      ['http', 0],
      ['tool-service', 0],
      ['mcp', 0],
    ]);
    for (const { tool } of tools) {
      byKind.set(tool.kind, (byKind.get(tool.kind) ?? 0) + 1);
      for (const scope of new Set(tool.scopes)) scopeUsage.set(scope, (scopeUsage.get(scope) ?? 0) + 1);
    }
    return {
      total_tools: tools.length,
      tools_by_name: tools.map((t) => t.tool.name),
      scope_usage: nullPrototype(scopeUsage),
      unique_scopes: scopeUsage.size,
      tools_by_kind: nullPrototype(byKind),
      total_tool_services: this.#snapshot.serviceCount,
    };
  }

  /** Live tools per tool service and per MCP server, whatever the view; one step per service. */
  serviceStats(): ServiceStats {
    const { services, mcpServers } = this.toolCountsByService();
    return { tools_by_service: nullPrototype(services), tools_by_mcp_server: nullPrototype(mcpServers) };
  }
}

/** A Map as a JSON-ready object without a prototype, so that no key can reach Object.prototype. */
function nullPrototype<V>(map: ReadonlyMap<string, V>): Record<string, V> {
  const object = Object.create(null) as Record<string, V>;
  for (const [key, value] of map) object[key] = value;
  return object;
}
