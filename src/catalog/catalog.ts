/**
 * The read model every front serves from: the snapshot of live descriptors (snapshot.ts) with
 * its discovery views (views.ts). Reads never touch SQLite. A write applies committed records
 * here and drops every cached view at once; who hears of the write is the change bus's job
 * (src/registry/change-bus.ts), not the catalogue's.
 */
import type { Change } from '../model/records.js';
import type { ViewKey } from '../model/visibility.js';
import { CatalogSnapshot, type CatalogTool, type CatalogWrite, type PreparedWrite, type SnapshotData } from './snapshot.js';
import type { Steps } from './steps.js';
import { CatalogViews, type CatalogView } from './views.js';

export type { CatalogTool, PreparedWrite } from './snapshot.js';
export type { CatalogView } from './views.js';

export interface CatalogOptions {
  /** Base URL agents use to reach this registry; message-bus tools point at its invoke route. */
  publicUrl: URL;
  /** The article's `service` field in discovery responses. */
  serviceName: string;
  /** Upper bound on the bytes of cached views. */
  viewCacheBytes: number;
}

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

export class Catalog extends CatalogSnapshot {
  readonly #views: CatalogViews;
  readonly #serviceName: string;
  /** The whole catalogue's view after each prepared write, built with it. */
  readonly #preparedViews = new WeakMap<PreparedWrite, CatalogView>();

  constructor(options: CatalogOptions) {
    super(options.publicUrl);
    this.#serviceName = options.serviceName;
    this.#views = new CatalogViews(this, { serviceName: options.serviceName, cacheBytes: options.viewCacheBytes });
  }

  /** The article's `service` field of discovery responses. */
  get serviceName(): string {
    return this.#serviceName;
  }

  override load(data: SnapshotData): void {
    super.load(data);
    this.#views.invalidate();
  }

  override apply(index: number, change: CatalogWrite, prepared?: ReadonlyMap<string, CatalogTool>): Change[] {
    const changes = super.apply(index, change, prepared);
    this.#views.invalidate();
    return changes;
  }

  /** A big write prepared in steps (see CatalogSnapshot), with the full view it will show. */
  override *prepareWrite(index: number, change: CatalogWrite, entries?: ReadonlyMap<string, CatalogTool>): Steps<PreparedWrite> {
    const write = yield* super.prepareWrite(index, change, entries);
    this.#preparedViews.set(write, yield* this.#views.prepareFullView(write.sorted, index));
    return write;
  }

  override applyPrepared(write: PreparedWrite): { changes: Change[]; swapped: boolean } {
    const applied = super.applyPrepared(write);
    this.#views.invalidate();
    const view = this.#preparedViews.get(write);
    if (applied.swapped && view) this.#views.installFullView(view);
    return applied;
  }

  view(key: ViewKey): CatalogView {
    return this.#views.view(key);
  }

  changedAt(key: ViewKey): number {
    return this.#views.changedAt(key);
  }

  /** The article's /stats figures over one view. */
  stats(key: ViewKey): CatalogStats {
    const { tools } = this.view(key);
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
      total_tool_services: this.serviceCount,
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
