/**
 * The in-memory catalogue: every live tool and tool service, and the discovery views serialised
 * once per catalogue version and view key. Reads never touch SQLite; a write swaps entries in
 * and bumps the version, which invalidates every cached view at once (O(1)).
 */
import { createHash } from 'node:crypto';
import { normaliseTool, type Tool } from '../descriptors/normalise.js';
import type { ToolService } from '../descriptors/schemas.js';
import type { ServiceRecord, ToolRecord } from '../store/registry-store.js';
import { LruByteCache } from './lru-byte-cache.js';
import { publicToolView, type PublicTool } from './public-view.js';

export interface CatalogTool {
  tool: Tool;
  record: ToolRecord;
  /** The discovery entry, built once per write of this tool. */
  view: PublicTool;
}

/** Who is looking: everything, only tools that need no scope, or a set of granted scopes. */
export type ViewKey = { kind: 'all' } | { kind: 'public' } | { kind: 'scopes'; scopes: ReadonlySet<string> };

export interface CatalogView {
  /** The exact response bytes of `GET /` for this view. */
  body: Buffer;
  /** Strong ETag over the body. */
  etag: string;
  /** Registry index the view was built at. */
  index: number;
  tools: readonly CatalogTool[];
  /** Live tools the caller cannot see. */
  hidden: number;
}

export interface CatalogOptions {
  /** Base URL agents use to reach this registry; message-bus tools point at its invoke route. */
  publicUrl: URL;
  /** The article's `service` field in discovery responses. */
  serviceName: string;
  /** Upper bound on the bytes of cached views. */
  viewCacheBytes: number;
}

/** One descriptor a write touched, with the scopes that granted it before and after. */
export interface CatalogChange {
  kind: 'tool' | 'tool-service';
  name: string;
  op: 'upsert' | 'delete';
  /** null where it did not exist before (or was deleted). */
  scopesBefore: readonly string[] | null;
  scopesAfter: readonly string[] | null;
}

export type ChangeListener = (index: number, changes: readonly CatalogChange[]) => void;

export interface CatalogStats {
  total_tools: number;
  tools_by_name: string[];
  scope_usage: Record<string, number>;
  unique_scopes: number;
  tools_by_kind: Record<string, number>;
  total_tool_services: number;
}

export class Catalog {
  readonly #options: CatalogOptions;
  readonly #tools = new Map<string, CatalogTool>();
  readonly #services = new Map<string, ServiceRecord>();
  #index = 0;
  /** Tools in name order; rebuilt lazily after a write. */
  #sorted: CatalogTool[] | null = null;
  /** How many live tools require each scope, kept up to date write by write. */
  readonly #scopeCounts = new Map<string, number>();
  /** The same, sorted; rebuilt lazily after a write. */
  #scopeUsage: Map<string, number> | null = null;
  /**
   * The index at which the set of known scopes last changed. Token views are keyed by the
   * scopes some tool needs, so when that set changes a token may move to another key: every
   * scope-keyed view counts as changed then (an early answer at worst, never a late one).
   */
  #scopeSetChangedAt = 0;
  readonly #views: LruByteCache<CatalogView>;
  /** Deleted tools (tombstones), for paged walks pinned to an earlier index and filters. */
  readonly #tombstones = new Map<string, ToolRecord>();
  /** For names deleted and registered again: the span of the life before (pinned walks). */
  readonly #priorLives = new Map<string, { createIndex: number; deletedAt: number }>();
  /** Per view key: the ETag last seen and the index at which it last changed (bounded). */
  readonly #viewChanges = new Map<string, { etag: string; changedAt: number }>();
  readonly #listeners = new Set<ChangeListener>();
  #allView: CatalogView | null = null;
  /** While a group commit runs: notifications held until it has committed. */
  #held: [number, CatalogChange[]][] | null = null;

  constructor(options: CatalogOptions) {
    this.#options = options;
    this.#views = new LruByteCache(options.viewCacheBytes);
  }

  /** The article's `service` field of discovery responses. */
  get serviceName(): string {
    return this.#options.serviceName;
  }

  /** The registry index this catalogue reflects. */
  get index(): number {
    return this.#index;
  }

  load(snapshot: { index: number; services: ServiceRecord[]; tools: ToolRecord[]; tombstones?: ToolRecord[] }): void {
    this.#tools.clear();
    this.#services.clear();
    this.#tombstones.clear();
    for (const s of snapshot.services) this.#services.set(s.id, s);
    for (const t of snapshot.tools) this.#tools.set(t.name, this.#entry(t));
    for (const t of snapshot.tombstones ?? []) this.#tombstones.set(t.name, t);
    this.#scopeCounts.clear();
    for (const { tool } of this.#tools.values()) this.#countScopes(tool.scopes, 1);
    this.#scopeSetChangedAt = snapshot.index;
    this.#changed(snapshot.index);
  }

  /** Called after every committed write with what it changed (the change feed, the waiters). */
  onChange(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Applies stored records (upserts or tombstones) from one committed write. */
  apply(index: number, change: { services?: ServiceRecord[]; tools?: ToolRecord[] }): void {
    const changes: CatalogChange[] = [];
    let scopeSetChanged = false;
    for (const s of change.services ?? []) {
      const before = this.#services.has(s.id) ? [] : null;
      if (s.status === 'deleted') this.#services.delete(s.id);
      else this.#services.set(s.id, s);
      changes.push({ kind: 'tool-service', name: s.id, op: s.status === 'deleted' ? 'delete' : 'upsert', scopesBefore: before, scopesAfter: s.status === 'deleted' ? null : [] });
    }
    for (const t of change.tools ?? []) {
      const before = this.#tools.get(t.name)?.tool.scopes ?? null;
      let after: readonly string[] | null = null;
      if (t.status === 'deleted') {
        this.#tools.delete(t.name);
        this.#tombstones.set(t.name, t);
      } else {
        const entry = this.#entry(t);
        this.#tools.set(t.name, entry);
        const tombstone = this.#tombstones.get(t.name);
        if (tombstone) this.#priorLives.set(t.name, { createIndex: tombstone.createIndex, deletedAt: tombstone.index });
        this.#tombstones.delete(t.name);
        after = entry.tool.scopes;
      }
      changes.push({ kind: 'tool', name: t.name, op: t.status === 'deleted' ? 'delete' : 'upsert', scopesBefore: before, scopesAfter: after });
      // Count the new scopes in before the old ones out, so a tool that keeps a scope never
      // looks like that scope leaving and coming back.
      const added = this.#countScopes(after, 1);
      const removed = this.#countScopes(before, -1);
      if (added || removed) scopeSetChanged = true;
    }
    if (scopeSetChanged) this.#scopeSetChangedAt = index;
    this.#changed(index);
    if (this.#held) this.#held.push([index, changes]);
    else this.#notify(index, changes);
  }

  /**
   * Holds change notifications (change feed, waiters) until `release`: a group commit applies
   * its writes to the catalogue inside the transaction, but nobody may hear of them before the
   * commit, and nobody at all if it fails (`discard`, then `load` from the database).
   */
  hold(): void {
    this.#held ??= [];
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = null;
    for (const [index, changes] of held) this.#notify(index, changes);
  }

  discard(): void {
    this.#held = null;
  }

  #notify(index: number, changes: readonly CatalogChange[]): void {
    for (const listener of this.#listeners) listener(index, changes);
  }

  /** Whether a live tool also existed at `index` (in this life, or the one before it). */
  existedAt(entry: CatalogTool, index: number): boolean {
    if (entry.record.createIndex <= index) return true;
    const prior = this.#priorLives.get(entry.record.name);
    return prior !== undefined && prior.createIndex <= index && index < prior.deletedAt;
  }

  getTombstone(name: string): ToolRecord | undefined {
    return this.#tombstones.get(name);
  }

  tombstones(): IterableIterator<ToolRecord> {
    return this.#tombstones.values();
  }

  /**
   * The registry index at which this view last changed. Views are compared by ETag when
   * computed, so a write that leaves a view's bytes alone does not count for it. A key not seen
   * before counts as changed now, which at worst answers a blocking query early, never late.
   */
  changedAt(key: ViewKey): number {
    const view = this.view(key);
    const recorded = this.#viewChanges.get(this.#cacheKeyOf(key))?.changedAt ?? view.index;
    return key.kind === 'scopes' ? Math.max(recorded, this.#scopeSetChangedAt) : recorded;
  }

  getTool(name: string): CatalogTool | undefined {
    return this.#tools.get(name);
  }

  getService(id: string): ServiceRecord | undefined {
    return this.#services.get(id);
  }

  /** Descriptor lookup for validation of message-bus tools. */
  readonly lookupService = (id: string): ToolService | undefined => this.#services.get(id)?.descriptor;

  services(): ServiceRecord[] {
    return [...this.#services.values()].sort((a, b) => compare(a.id, b.id));
  }

  tools(): readonly CatalogTool[] {
    this.#sorted ??= [...this.#tools.values()].sort((a, b) => compare(a.tool.name, b.tool.name));
    return this.#sorted;
  }

  toolsUsingService(id: string): string[] {
    return this.tools()
      .filter((t) => t.tool.serviceId === id)
      .map((t) => t.tool.name);
  }

  /** Every scope any live tool requires, with how many tools require it, in name order. */
  knownScopes(): ReadonlyMap<string, number> {
    this.#scopeUsage ??= new Map([...this.#scopeCounts].sort(([a], [b]) => compare(a, b)));
    return this.#scopeUsage;
  }

  /** Counts a tool's scopes in or out; returns whether the set of known scopes changed. */
  #countScopes(scopes: readonly string[] | null, delta: 1 | -1): boolean {
    let changed = false;
    for (const scope of new Set(scopes ?? [])) {
      const n = (this.#scopeCounts.get(scope) ?? 0) + delta;
      if (n <= 0) {
        this.#scopeCounts.delete(scope);
        changed = true;
      } else {
        if (n === 1 && delta === 1) changed = true;
        this.#scopeCounts.set(scope, n);
      }
    }
    return changed;
  }

  /** Whether a tool is in the view. */
  static visible(tool: Tool, key: ViewKey): boolean {
    return Catalog.visibleScopes(tool.scopes, key);
  }

  /** Whether a tool that these scopes grant is in the view. */
  static visibleScopes(scopes: readonly string[], key: ViewKey): boolean {
    if (key.kind === 'all' || scopes.length === 0) return true;
    if (key.kind === 'public') return false;
    return scopes.some((s) => key.scopes.has(s));
  }

  view(key: ViewKey): CatalogView {
    // The whole catalogue is the hottest view (anonymous rediscovery): one field, no key.
    if (key.kind === 'all' && this.#allView) return this.#allView;
    const normalised = this.#normaliseKey(key);
    const keyString = viewKeyString(normalised);
    // The cache is emptied on every write, so the key needs no index.
    const cacheKey = keyString;
    const cached = this.#views.get(cacheKey);
    if (cached) return cached;
    const all = this.tools();
    const tools = normalised.kind === 'all' ? all : all.filter((t) => Catalog.visible(t.tool, normalised));
    const body = Buffer.from(
      JSON.stringify({ service: this.#options.serviceName, protocol: 'tool-discovery', tools: tools.map((t) => t.view) }),
    );
    const view: CatalogView = {
      body,
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`,
      index: this.#index,
      tools,
      hidden: all.length - tools.length,
    };
    this.#views.set(cacheKey, view, body.length + 256);
    if (normalised.kind === 'all') this.#allView = view;
    this.#recordViewChange(keyString, view);
    return view;
  }

  /** The article's /stats figures over one view. */
  stats(key: ViewKey): CatalogStats {
    const { tools } = this.view(key);
    const scopeUsage: Record<string, number> = {};
    const byKind: Record<string, number> = { http: 0, 'tool-service': 0 };
    for (const { tool } of tools) {
      byKind[tool.kind] = (byKind[tool.kind] ?? 0) + 1;
      for (const scope of new Set(tool.scopes)) scopeUsage[scope] = (scopeUsage[scope] ?? 0) + 1;
    }
    return {
      total_tools: tools.length,
      tools_by_name: tools.map((t) => t.tool.name),
      scope_usage: scopeUsage,
      unique_scopes: Object.keys(scopeUsage).length,
      tools_by_kind: byKind,
      total_tool_services: this.#services.size,
    };
  }

  /**
   * Only scopes some tool requires can change a view, so tokens that differ in other scopes
   * share one cached view.
   */
  #normaliseKey(key: ViewKey): ViewKey {
    if (key.kind !== 'scopes') return key;
    const known = this.knownScopes();
    return { kind: 'scopes', scopes: new Set([...key.scopes].filter((s) => known.has(s))) };
  }

  #cacheKeyOf(key: ViewKey): string {
    return viewKeyString(this.#normaliseKey(key));
  }

  #recordViewChange(keyString: string, view: CatalogView): void {
    const seen = this.#viewChanges.get(keyString);
    if (seen && seen.etag === view.etag) return;
    this.#viewChanges.delete(keyString);
    this.#viewChanges.set(keyString, { etag: view.etag, changedAt: view.index });
    // Bounded: the oldest keys go first (a missing key only means an early answer).
    if (this.#viewChanges.size > 100_000) {
      const oldest = this.#viewChanges.keys().next().value;
      if (oldest !== undefined) this.#viewChanges.delete(oldest);
    }
  }

  #entry(record: ToolRecord): CatalogTool {
    const tool = normaliseTool(record.kind, record.descriptor);
    return { tool, record, view: publicToolView(tool, record, this.#options.publicUrl) };
  }

  #changed(index: number): void {
    this.#index = index;
    this.#sorted = null;
    this.#scopeUsage = null;
    // Views are per catalogue version: a write drops them all at once.
    this.#views.clear();
    this.#allView = null;
  }
}

/** A view key as a string: `all`, `public`, or `scopes:` and the sorted scopes. */
export function viewKeyString(key: ViewKey): string {
  if (key.kind !== 'scopes') return key.kind;
  return `scopes:${[...key.scopes].sort().join(' ')}`;
}

/** Code-point order, so that names sort the same everywhere (not locale-dependent). */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
