/**
 * The catalogue's state, in parts: the live tools and their name and service indexes
 * (indexes.ts), tombstones, change marks and lives (history.ts), the search index and what is
 * left to feed it (search-feeder.ts), and the tool services and MCP servers. A write is planned
 * once (write-plan.ts) and applied by #commit, in place or, for a big write prepared beside the
 * live indexes in slices (prepareWrite), by a swap of references. Every change of the state
 * ends in #changed, which tells the owner (Catalog: its cached views) that the version moved.
 * Nothing here serialises whole views or caches them.
 */
import { normaliseTool } from '../model/normalise.js';
import { publicToolView } from '../model/public-view.js';
import type { Change, McpServerRecord, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import { ByteArena } from './byte-arena.js';
import { CatalogTool } from './catalog-tool.js';
import { History, type PreparedHistory, type ToolLifeEvent } from './history.js';
import { LiveIndexes, type BuiltIndexes } from './indexes.js';
import type { Scheduler } from './scheduler.js';
import { SearchFeeder } from './search-feeder.js';
import { compareNames } from './sorted-names.js';
import { finish, type Steps } from './steps.js';
import { planWrite, type CatalogWrite, type PlanSource, type WritePlan } from './write-plan.js';
import { asOf, Sunsets } from './sunsets.js';

export type { CatalogWrite } from './write-plan.js';

export interface SnapshotData {
  index: number;
  services: ServiceRecord[];
  mcpServers?: McpServerRecord[];
  tools: ToolRecord[];
  tombstones?: ToolRecord[];
  /** Every change of the names that were ever deleted, in order: a name's lives before this one. */
  toolHistory?: ToolLifeEvent[];
}

/**
 * A big write (an import) planned and prepared beside the live catalogue (prepareWrite): every
 * index it changes is built anew in slices while reads go on against the old ones, so that
 * applying it (applyPrepared) is a swap of references, whatever its size.
 */
export interface PreparedWrite {
  readonly plan: WritePlan;
  readonly indexes: BuiltIndexes;
  readonly history: PreparedHistory;
}

export class CatalogSnapshot {
  readonly #publicUrl: URL;
  readonly #onChange: () => void;
  readonly live = new LiveIndexes();
  readonly history = new History(this.live);
  readonly feeder: SearchFeeder;
  readonly #services = new Map<string, ServiceRecord>();
  readonly #mcpServers = new Map<string, McpServerRecord>();
  #index = 0;
  /** Bumped by every change of the state: a prepared write checks it has not moved. */
  #version = 0;
  /**
   * The index at which the set of known scopes last changed. Token views are keyed by the
   * scopes some tool needs, so when that set changes a token may move to another key.
   */
  #scopeSetChangedAt = 0;
  /** Where prepare() puts entries' bytes. */
  readonly #arena = new ByteArena(256 * 1024);
  /** What a plan reads of this catalogue. */
  readonly #source: PlanSource;
  /** Issue 34: the live tools' sunsets, and the clock they are read against. */
  readonly sunsets = new Sunsets();
  readonly #now: () => number;

  /**
   * `onChange`: called after every change of the state (load, apply, applyPrepared);
   * `scheduler`: the app's scheduler of background work, which drains the search backlog.
   */
  constructor(publicUrl: URL, onChange: () => void, scheduler: Scheduler, now: () => number = Date.now) {
    this.#publicUrl = publicUrl;
    this.#now = now;
    this.feeder = new SearchFeeder(this.live, scheduler);
    this.#onChange = onChange;
    this.#source = {
      getTool: this.live.getTool,
      getTombstone: (name) => this.history.getTombstone(name),
      hasService: (id) => this.#services.has(id),
      entryOf: (record) => this.#entry(record),
    };
  }

  get index(): number {
    return this.#index;
  }

  /** Changes with every write and load: what is cached from the catalogue is valid while it stays. */
  get version(): number {
    return this.#version;
  }

  /** Where agents reach this registry: part of every message-bus tool's discovery entry. */
  get publicUrl(): URL {
    return this.#publicUrl;
  }

  get scopeSetChangedAt(): number {
    return this.#scopeSetChangedAt;
  }

  get serviceCount(): number {
    return this.#services.size;
  }

  getService(id: string): ServiceRecord | undefined {
    return this.#services.get(id);
  }

  /** Descriptor lookup for validation of message-bus tools. */
  readonly lookupService = (id: string): ToolService | undefined => this.#services.get(id)?.descriptor;

  services(): ServiceRecord[] {
    return [...this.#services.values()].sort((a, b) => compareNames(a.id, b.id));
  }

  getMcpServer(id: string): McpServerRecord | undefined {
    return this.#mcpServers.get(id);
  }

  /** Live MCP servers, sorted by id. */
  mcpServers(): McpServerRecord[] {
    return [...this.#mcpServers.values()].sort((a, b) => compareNames(a.id, b.id));
  }

  /** How many live tools each tool service and each MCP server carries (0 for none), in id order. */
  toolCountsByService(): { services: Map<string, number>; mcpServers: Map<string, number> } {
    return this.live.toolCounts(this.#services.keys(), this.#mcpServers.keys());
  }

  load(data: SnapshotData): void {
    this.#services.clear();
    this.#mcpServers.clear();
    for (const s of data.services) this.#services.set(s.id, s);
    for (const m of data.mcpServers ?? []) this.#mcpServers.set(m.id, m);
    // A tool past its sunset is loaded as a tombstone (issue 34): after a restart it stays gone.
    const now = this.#now();
    const live: ToolRecord[] = [];
    const tombstones = [...(data.tombstones ?? [])];
    this.sunsets.clear();
    for (const t of data.tools) {
      const record = asOf(t, now);
      if (record.status === 'deleted') tombstones.push(record);
      else {
        live.push(record);
        this.sunsets.track(record);
      }
    }
    this.live.load(live.map((t) => this.#entry(t)));
    this.history.load(tombstones, data.toolHistory ?? []);
    this.feeder.load();
    this.#scopeSetChangedAt = data.index;
    this.#changed(data.index);
  }

  /**
   * A live record's entry, built ahead of the write that will apply it (its discovery entry
   * serialised too): a big write (an import) prepares its entries in slices between other
   * requests, so that applying it is only the swap.
   */
  prepare(record: ToolRecord): CatalogTool {
    const tool = normaliseTool(record.kind, record.descriptor);
    const view = publicToolView(tool, record, this.#publicUrl);
    return new CatalogTool(tool, record, view, this.#arena.bytesOf(JSON.stringify(view)));
  }

  /**
   * Applies stored records (upserts or tombstones) from one committed write, in place;
   * `prepared` holds entries built by prepare() for some of them (any whose record differs is
   * built again).
   */
  apply(index: number, change: CatalogWrite, prepared?: ReadonlyMap<string, CatalogTool>): Change[] {
    return this.#commit(finish(planWrite(this.#source, index, this.#asOfNow(change), { base: this.#version, entries: prepared })));
  }

  /** A write's tools past their sunset (a deprecation set with a past one) applied as tombstones. */
  #asOfNow(change: CatalogWrite): CatalogWrite {
    const tools = change.tools;
    if (tools === undefined || !tools.some((t) => t.deprecation?.sunset !== undefined)) return change;
    const now = this.#now();
    return { ...change, tools: tools.map((t) => asOf(t, now)) };
  }

  /**
   * Prepares a big write of live tools (an import; it deletes nothing), given in strictly
   * ascending name order, beside the live indexes, in steps: its plan, then the indexes and
   * change marks it leaves, built anew while reads go on against the old ones; `entries` are
   * those built by prepare(). applyPrepared() then swaps them in at once.
   */
  *prepareWrite(index: number, change: CatalogWrite, entries?: ReadonlyMap<string, CatalogTool>): Steps<PreparedWrite> {
    const plan = yield* planWrite(this.#source, index, change, { base: this.#version, entries, bulk: true });
    const indexes = yield* this.live.build(plan.steps);
    const history = yield* this.history.prepare(plan.steps, indexes.tools);
    return { plan, indexes, history };
  }

  /**
   * Applies a prepared write: a swap of references, plus its few services and revived names.
   * On a catalogue that changed since it was prepared (nothing writes during an import, so only
   * after a bug) it is planned afresh and applied in place. Returns its changes, and whether it
   * swapped.
   */
  applyPrepared(write: PreparedWrite): { changes: Change[]; swapped: boolean } {
    const { plan } = write;
    if (plan.base !== this.#version) return { changes: this.apply(plan.index, plan.change, plan.entries), swapped: false };
    return { changes: this.#commit(plan, write), swapped: true };
  }

  /**
   * The one place a write changes the state: in place from its plan, or by swapping in what
   * prepareWrite built from it.
   */
  #commit(plan: WritePlan, prepared?: PreparedWrite): Change[] {
    // MCP servers are admin configuration, not in the change log: their tools' changes are.
    for (const m of plan.change.mcpServers ?? []) {
      if (m.status === 'deleted') this.#mcpServers.delete(m.id);
      else this.#mcpServers.set(m.id, m);
    }
    for (const s of plan.change.services ?? []) {
      if (s.status === 'deleted') this.#services.delete(s.id);
      else this.#services.set(s.id, s);
    }
    for (const step of plan.steps) this.sunsets.track(step.record);
    let scopeSetChanged: boolean;
    if (prepared) {
      this.live.swap(prepared.indexes);
      this.history.commit(prepared.history.revived, prepared.history);
      this.feeder.writtenInBulk(prepared.indexes.written);
      scopeSetChanged = prepared.indexes.scopeSetChanged;
    } else {
      scopeSetChanged = this.live.update(plan.steps);
      this.history.commit(plan.steps);
      this.feeder.written(plan.steps);
    }
    if (scopeSetChanged) this.#scopeSetChangedAt = plan.index;
    this.#changed(plan.index);
    return plan.changes;
  }

  #entry(record: ToolRecord): CatalogTool {
    const tool = normaliseTool(record.kind, record.descriptor);
    return new CatalogTool(tool, record, publicToolView(tool, record, this.#publicUrl));
  }

  #changed(index: number): void {
    this.#version++;
    this.#index = index;
    this.#onChange();
  }
}
