/**
 * The live tools and the indexes every read walks instead of the whole catalogue: names in
 * order (every tool, those needing no scope, those needing each scope) and tool names per tool
 * service and per MCP server. A write plan (write-plan.ts) changes them in place (update), or a
 * big one has changed copies built beside them in steps (build) and swapped in at once (swap).
 */
import { entryTokens } from '../model/scope-rule.js';
import type { CatalogTool } from './catalog-tool.js';
import { compareNames, SortedNames } from './sorted-names.js';
import type { Steps } from './steps.js';
import { PLAN_STEP, type ToolStep } from './write-plan.js';

/** A name index a write changes: a SortedNames, or a scope's by its name. */
type IndexKey = SortedNames | string;

/** Names joining or leaving name indexes in one write. */
type IndexChanges = Map<IndexKey, string[]>;

/** The indexes after a big write, built beside the live ones (LiveIndexes.build). */
export interface BuiltIndexes {
  readonly tools: Map<string, CatalogTool>;
  readonly all: SortedNames;
  readonly public: SortedNames;
  readonly byScope: Map<string, SortedNames>;
  readonly byService: Map<string, Set<string>>;
  readonly byMcpServer: Map<string, Set<string>>;
  /** The live tools after it, in name order: what tools() will return. */
  readonly sorted: readonly CatalogTool[];
  readonly scopeSetChanged: boolean;
  /** The names it stores, in name order (to be indexed for search after the swap). */
  readonly written: readonly string[];
}

export class LiveIndexes {
  #tools = new Map<string, CatalogTool>();
  #all = new SortedNames();
  #public = new SortedNames();
  #byScope = new Map<string, SortedNames>();
  #byService = new Map<string, Set<string>>();
  /** Live mcp tools by MCP server id (ids of services and of MCP servers are apart). */
  #byMcpServer = new Map<string, Set<string>>();
  /** Live tools in name order, as entries; rebuilt lazily (in O(n), from #all) after a write. */
  #sorted: readonly CatalogTool[] | null = null;
  /** How many live tools require each scope, in scope name order; rebuilt lazily after a write. */
  #scopeUsage: Map<string, number> | null = null;
  /** Every token some live tool's scope entry names; rebuilt lazily after a write. */
  #tokens: Set<string> | null = null;

  get size(): number {
    return this.#tools.size;
  }

  /** Bound once, so that the catalogue hands it out as its own without a hop (the hottest lookup). */
  readonly getTool = (name: string): CatalogTool | undefined => this.#tools.get(name);

  /** Every live entry, in no order. */
  entries(): IterableIterator<CatalogTool> {
    return this.#tools.values();
  }

  /** Every live tool in name order. */
  tools(): readonly CatalogTool[] {
    if (this.#sorted === null) {
      const sorted: CatalogTool[] = [];
      for (const name of this.#all.values()) sorted.push(this.#tools.get(name) as CatalogTool);
      this.#sorted = sorted;
    }
    return this.#sorted;
  }

  /** Live names in order: every tool, or those needing no scope. */
  names(which: 'all' | 'public'): SortedNames {
    return which === 'all' ? this.#all : this.#public;
  }

  /**
   * Live names in order of the tools that list this scope entry (canonical form) among theirs
   * (undefined: none). The indexes are keyed by entry, so `a b` and `a` are apart.
   */
  namesWithScope(scope: string): SortedNames | undefined {
    return this.#byScope.get(scope);
  }

  /** The entry indexes whose entries match: those a view's held tokens grant, or those naming a token. */
  scopeIndexes(match: (entry: string) => boolean): SortedNames[] {
    const indexes: SortedNames[] = [];
    for (const [entry, names] of this.#byScope) if (match(entry)) indexes.push(names);
    return indexes;
  }

  /**
   * Every scope token some live tool's entry names: only these can change what a token sees,
   * so views are keyed by the held scopes among them (views.ts).
   */
  knownTokens(): ReadonlySet<string> {
    this.#tokens ??= new Set([...this.#byScope.keys()].flatMap((entry) => entryTokens(entry)));
    return this.#tokens;
  }

  /** Names of the live tools of a tool service, in name order. */
  toolsUsingService(id: string): string[] {
    return [...(this.#byService.get(id) ?? [])].sort(compareNames);
  }

  /** Names of the live tools of an MCP server, in name order. */
  toolsOfMcpServer(id: string): string[] {
    return [...(this.#byMcpServer.get(id) ?? [])].sort(compareNames);
  }

  /** How many live tools each of these tool services and MCP servers carries (0 for none), in id order. */
  toolCounts(
    serviceIds: Iterable<string>,
    mcpServerIds: Iterable<string>,
  ): { services: Map<string, number>; mcpServers: Map<string, number> } {
    const count = (ids: Iterable<string>, index: ReadonlyMap<string, ReadonlySet<string>>) =>
      new Map([...ids].sort(compareNames).map((id) => [id, index.get(id)?.size ?? 0] as const));
    return { services: count(serviceIds, this.#byService), mcpServers: count(mcpServerIds, this.#byMcpServer) };
  }

  /** Every scope entry any live tool lists, with how many tools list it, in name order. */
  knownScopes(): ReadonlyMap<string, number> {
    this.#scopeUsage ??= new Map(
      [...this.#byScope].map(([scope, names]) => [scope, names.size] as const).sort(([a], [b]) => compareNames(a, b)),
    );
    return this.#scopeUsage;
  }

  /** Replaces every index with these entries'. */
  load(entries: readonly CatalogTool[]): void {
    this.#tools = new Map();
    this.#byScope = new Map();
    this.#byService = new Map();
    this.#byMcpServer = new Map();
    const publicNames: string[] = [];
    const scopeNames = new Map<string, string[]>();
    for (const entry of entries) {
      const name = entry.record.name;
      this.#tools.set(name, entry);
      if (entry.tool.scopes.length === 0) publicNames.push(name);
      for (const scope of new Set(entry.tool.scopes)) {
        const names = scopeNames.get(scope);
        if (names) names.push(name);
        else scopeNames.set(scope, [name]);
      }
      this.#indexService(entry, 'in');
    }
    // Rows come in name order, so the name indexes are usually taken as they are.
    this.#all = new SortedNames(this.#tools.keys());
    this.#public = new SortedNames(publicNames);
    for (const [scope, names] of scopeNames) this.#byScope.set(scope, new SortedNames(names));
    this.#sorted = null;
    this.#scopeUsage = null;
    this.#tokens = null;
  }

  /** Applies a write's steps in place; returns whether the set of known scopes changed. */
  update(steps: readonly ToolStep[]): boolean {
    // Name-order index updates are gathered, so that a big write merges once per index.
    const added: IndexChanges = new Map();
    const removed: IndexChanges = new Map();
    for (let i = 0; i < steps.length; i++) {
      const { record, previous, entry } = steps[i] as ToolStep;
      // A name written twice in one write (its steps sit together) leaves the name indexes it
      // was in before its first step and joins those of its last: noting every step kept it in
      // its first entry's indexes, or, deleted by its last step, left it in all of them.
      if (previous) {
        if (steps[i - 1]?.record.name !== record.name) this.#note(previous, removed);
        this.#indexService(previous, 'out');
      }
      if (entry) {
        this.#tools.set(record.name, entry);
        if (steps[i + 1]?.record.name !== record.name) this.#note(entry, added);
        this.#indexService(entry, 'in');
      } else this.#tools.delete(record.name);
    }
    let scopeSetChanged = false;
    for (const key of new Set([...added.keys(), ...removed.keys()])) {
      if (typeof key !== 'string') {
        key.update(added.get(key) ?? [], removed.get(key) ?? []);
        continue;
      }
      // A scope's index exists while some live tool lists the scope: the set of known scopes
      // changes when one appears or goes (judged over the whole write, so a tool that keeps
      // its scope never looks like the scope leaving and coming back).
      const known = this.#byScope.has(key);
      let names = this.#byScope.get(key);
      if (!names) {
        names = new SortedNames();
        this.#byScope.set(key, names);
      }
      names.update(added.get(key) ?? [], removed.get(key) ?? []);
      if (names.size === 0) this.#byScope.delete(key);
      if (known !== names.size > 0) scopeSetChanged = true;
    }
    this.#sorted = null;
    this.#scopeUsage = null;
    this.#tokens = null;
    return scopeSetChanged;
  }

  /**
   * The indexes after a write's steps (a bulk plan: it deletes nothing), built anew in steps
   * while reads go on against these: the tools map, each name index it touches, the service
   * indexes it touches (the others are shared) and the tools in name order. At 100,000 tools
   * applying such a write in place held the event loop for about a second.
   */
  *build(steps: readonly ToolStep[]): Steps<BuiltIndexes> {
    let step = 0;
    const due = () => ++step % PLAN_STEP === 0;
    const tools = new Map<string, CatalogTool>();
    for (const [name, entry] of this.#tools) {
      tools.set(name, entry);
      if (due()) yield;
    }
    const added: IndexChanges = new Map();
    const removed: IndexChanges = new Map();
    const serviceMoves = new Map<string, { index: Map<string, Set<string>>; id: string; in: string[]; out: Set<string> }>();
    const move = (entry: CatalogTool, direction: 'in' | 'out') => {
      const { name, serviceId, kind } = entry.tool;
      if (!serviceId) return;
      const index = kind === 'mcp' ? this.#byMcpServer : this.#byService;
      const key = `${kind === 'mcp' ? 'm' : 's'}\u0000${serviceId}`;
      let moves = serviceMoves.get(key);
      if (!moves) serviceMoves.set(key, (moves = { index, id: serviceId, in: [], out: new Set() }));
      if (direction === 'in') moves.in.push(name);
      else moves.out.add(name);
    };
    const written: string[] = [];
    for (const { record, previous, entry } of steps) {
      written.push(record.name);
      if (previous) {
        this.#note(previous, removed);
        move(previous, 'out');
      }
      // A bulk plan has an entry for every step.
      if (entry) {
        tools.set(record.name, entry);
        this.#note(entry, added);
        move(entry, 'in');
      }
      if (due()) yield;
    }

    // The name indexes: each touched one merged anew (removals first: an added name stays).
    let all = this.#all;
    let publicNames = this.#public;
    const byScope = new Map(this.#byScope);
    let scopeSetChanged = false;
    for (const key of new Set([...added.keys(), ...removed.keys()])) {
      const current = typeof key === 'string' ? (this.#byScope.get(key) ?? new SortedNames()) : key;
      const merged = yield* current.mergedSteps(added.get(key) ?? [], new Set(removed.get(key)));
      if (key === this.#all) all = merged;
      else if (key === this.#public) publicNames = merged;
      else if (typeof key === 'string') {
        if (merged.size > 0) byScope.set(key, merged);
        else byScope.delete(key);
        if (this.#byScope.has(key) !== merged.size > 0) scopeSetChanged = true;
      }
    }

    // The service indexes it touches, copied and changed (the others are shared).
    const byService = new Map(this.#byService);
    const byMcpServer = new Map(this.#byMcpServer);
    for (const moves of serviceMoves.values()) {
      const names = new Set<string>();
      for (const name of moves.index.get(moves.id) ?? []) {
        if (!moves.out.has(name)) names.add(name);
        if (due()) yield;
      }
      for (const name of moves.in) names.add(name);
      const target = moves.index === this.#byMcpServer ? byMcpServer : byService;
      if (names.size > 0) target.set(moves.id, names);
      else target.delete(moves.id);
    }

    const sorted: CatalogTool[] = [];
    for (const name of all.values()) {
      sorted.push(tools.get(name) as CatalogTool);
      if (due()) yield;
    }
    return { tools, all, public: publicNames, byScope, byService, byMcpServer, sorted, scopeSetChanged, written };
  }

  /** Makes indexes from build() the live ones: a swap of references, whatever the write's size. */
  swap(built: BuiltIndexes): void {
    this.#tools = built.tools;
    this.#all = built.all;
    this.#public = built.public;
    this.#byScope = built.byScope;
    this.#byService = built.byService;
    this.#byMcpServer = built.byMcpServer;
    this.#sorted = built.sorted;
    this.#scopeUsage = null;
    this.#tokens = null;
  }

  /** Notes the name indexes a tool is in (every tool, public, one per scope) as changing for it. */
  #note(entry: CatalogTool, changes: IndexChanges): void {
    const name = entry.tool.name;
    const note = (key: IndexKey) => {
      const names = changes.get(key);
      if (names) names.push(name);
      else changes.set(key, [name]);
    };
    note(this.#all);
    if (entry.tool.scopes.length === 0) note(this.#public);
    for (const scope of new Set(entry.tool.scopes)) note(scope);
  }

  /** Adds a tool to, or takes it out of, its tool service's or MCP server's index. */
  #indexService(entry: CatalogTool, direction: 'in' | 'out'): void {
    const { name, serviceId, kind } = entry.tool;
    if (!serviceId) return;
    const index = kind === 'mcp' ? this.#byMcpServer : this.#byService;
    const names = index.get(serviceId);
    if (direction === 'out') {
      names?.delete(name);
      if (names?.size === 0) index.delete(serviceId);
    } else if (names) names.add(name);
    else index.set(serviceId, new Set([name]));
  }
}
