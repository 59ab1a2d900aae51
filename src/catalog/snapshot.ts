/**
 * The catalogue's state: every live tool and tool service, deleted tools (tombstones) for
 * pinned walks and filters, and how many tools need each scope. A write swaps records in and
 * reports what it changed; nothing here serialises or caches views.
 */
import { normaliseTool, type Tool } from '../model/normalise.js';
import { publicToolView, type PublicTool } from '../model/public-view.js';
import type { Change, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';

export interface CatalogTool {
  tool: Tool;
  record: ToolRecord;
  /** The discovery entry, built once per write of this tool. */
  view: PublicTool;
}

export interface SnapshotData {
  index: number;
  services: ServiceRecord[];
  tools: ToolRecord[];
  tombstones?: ToolRecord[];
}

/** Code-point order, so that names sort the same everywhere (not locale-dependent). */
function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export class CatalogSnapshot {
  readonly #publicUrl: URL;
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
   * scopes some tool needs, so when that set changes a token may move to another key.
   */
  #scopeSetChangedAt = 0;
  readonly #tombstones = new Map<string, ToolRecord>();
  /** For names deleted and registered again: the span of the life before (pinned walks). */
  readonly #priorLives = new Map<string, { createIndex: number; deletedAt: number }>();

  constructor(publicUrl: URL) {
    this.#publicUrl = publicUrl;
  }

  get index(): number {
    return this.#index;
  }

  get scopeSetChangedAt(): number {
    return this.#scopeSetChangedAt;
  }

  get serviceCount(): number {
    return this.#services.size;
  }

  load(data: SnapshotData): void {
    this.#tools.clear();
    this.#services.clear();
    this.#tombstones.clear();
    for (const s of data.services) this.#services.set(s.id, s);
    for (const t of data.tools) this.#tools.set(t.name, this.#entry(t));
    for (const t of data.tombstones ?? []) this.#tombstones.set(t.name, t);
    this.#scopeCounts.clear();
    for (const { tool } of this.#tools.values()) this.#countScopes(tool.scopes, 1);
    this.#scopeSetChangedAt = data.index;
    this.#changed(data.index);
  }

  /** Applies stored records (upserts or tombstones) from one committed write. */
  apply(index: number, change: { services?: readonly ServiceRecord[]; tools?: readonly ToolRecord[] }): Change[] {
    const changes: Change[] = [];
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
    return changes;
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

  getTool(name: string): CatalogTool | undefined {
    return this.#tools.get(name);
  }

  getService(id: string): ServiceRecord | undefined {
    return this.#services.get(id);
  }

  /** Descriptor lookup for validation of message-bus tools. */
  readonly lookupService = (id: string): ToolService | undefined => this.#services.get(id)?.descriptor;

  services(): ServiceRecord[] {
    return [...this.#services.values()].sort((a, b) => compareNames(a.id, b.id));
  }

  tools(): readonly CatalogTool[] {
    this.#sorted ??= [...this.#tools.values()].sort((a, b) => compareNames(a.tool.name, b.tool.name));
    return this.#sorted;
  }

  toolsUsingService(id: string): string[] {
    return this.tools()
      .filter((t) => t.tool.serviceId === id)
      .map((t) => t.tool.name);
  }

  /**
   * The names of every scope some live tool requires: what the visibility rules list in the
   * challenge under ANONYMOUS_DISCOVERY=none. Bound once, so a request passes it without
   * allocating a closure.
   */
  readonly knownScopeNames = (): Iterable<string> => this.knownScopes().keys();

  /** Every scope any live tool requires, with how many tools require it, in name order. */
  knownScopes(): ReadonlyMap<string, number> {
    this.#scopeUsage ??= new Map([...this.#scopeCounts].sort(([a], [b]) => compareNames(a, b)));
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

  #entry(record: ToolRecord): CatalogTool {
    const tool = normaliseTool(record.kind, record.descriptor);
    return { tool, record, view: publicToolView(tool, record, this.#publicUrl) };
  }

  #changed(index: number): void {
    this.#index = index;
    this.#sorted = null;
    this.#scopeUsage = null;
  }
}
