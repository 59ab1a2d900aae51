/**
 * The catalogue's state: every live tool and tool service, deleted tools (tombstones), and the
 * indexes every read walks instead of the whole catalogue: names in order (all, public, per
 * scope, per service), tombstones in order of deletion, tool changes in order of index, and the
 * lives of names that were deleted and registered again. A write updates each index in place;
 * a big one (an import) is prepared beside them in slices and swapped in at once
 * (prepareWrite, applyPrepared). Nothing here serialises whole views or caches them.
 */
import { createHash } from 'node:crypto';
import { normaliseTool, type Tool } from '../model/normalise.js';
import { publicToolView, type PublicTool } from '../model/public-view.js';
import type { Change, McpServerRecord, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import { SearchIndex, type SearchDocument } from './search-index.js';
import { compareNames, SortedNames, strictlyAscending } from './sorted-names.js';
import type { Steps } from './steps.js';

/** One live tool (or a tombstone's entry): its normalised form, its record and its discovery entry. */
export class CatalogTool {
  readonly tool: Tool;
  readonly record: ToolRecord;
  /** The discovery entry, built once per write of this tool. */
  readonly view: PublicTool;
  #bytes: Buffer | undefined;
  #etag: string | undefined;

  constructor(tool: Tool, record: ToolRecord, view: PublicTool, bytes?: Buffer) {
    this.tool = tool;
    this.record = record;
    this.view = view;
    this.#bytes = bytes;
  }

  /** The discovery entry as JSON bytes, serialised once per write of the tool, when first needed. */
  get bytes(): Buffer {
    this.#bytes ??= Buffer.from(JSON.stringify(this.view));
    return this.#bytes;
  }

  /** A strong ETag over `bytes`. */
  get etag(): string {
    this.#etag ??= `"${createHash('sha256').update(this.bytes).digest('base64url').slice(0, 27)}"`;
    return this.#etag;
  }
}

/**
 * Entry bytes for big writes, carved from shared slabs. Node's Buffer.from takes each entry from
 * an 8 KiB pool of its own, so 100,000 entries made ~9,000 ArrayBuffers, and while the import
 * prepared them V8 stopped in ArrayBuffer allocation (its sweeper of ArrayBuffers) for 30-50 ms
 * at a time. A slab is freed when the last entry in it is.
 */
class ByteArena {
  readonly #slabBytes: number;
  #slab = Buffer.alloc(0);
  #used = 0;

  constructor(slabBytes: number) {
    this.#slabBytes = slabBytes;
  }

  bytesOf(text: string): Buffer {
    const length = Buffer.byteLength(text);
    if (length > this.#slabBytes / 16) return Buffer.from(text);
    if (this.#used + length > this.#slab.length) {
      this.#slab = Buffer.allocUnsafeSlow(this.#slabBytes);
      this.#used = 0;
    }
    const at = this.#used;
    this.#used += this.#slab.write(text, at, length);
    return this.#slab.subarray(at, this.#used);
  }
}

/** A write of at most this many tools is indexed for search at once; a bigger one in slices. */
const SEARCH_AT_ONCE = 2000;
/**
 * Time spent indexing for search per turn of the event loop after a big write. A count (2,000
 * tools a turn) held the loop for 30-70 ms under load; documents go in 64 at a time until this
 * much time has passed.
 */
const SEARCH_SLICE_MS = 5;
const SEARCH_CHUNK = 64;
/** Tools, marks or names handled per step of a prepared write (well under a millisecond). */
const PREPARE_STEP = 1024;

/** What search sees of a tool: its name, description, title hint, and parameter names. */
function searchDocument(entry: CatalogTool): SearchDocument {
  const title = entry.tool.title ?? entry.tool.hints['title'];
  return {
    name: entry.tool.name,
    ...(typeof title === 'string' && { title }),
    description: entry.tool.description,
    keywords: Object.keys(entry.tool.parameters),
  };
}

/** A tool's change, in the order of changes (for `updated_since`). */
interface ChangeMark {
  name: string;
  index: number;
  updatedAt: string;
  /** The latest `updatedAt` of this mark and every mark before it: what a binary search needs. */
  latestUpdatedAt: string;
}

/** A tombstone's deletion, in the order of deletions (for pinned walks). */
interface DeletionMark {
  name: string;
  index: number;
}

/** A tool change as the store's change log has it (lives of names deleted and registered again). */
export interface ToolLifeEvent {
  name: string;
  index: number;
  op: 'upsert' | 'delete';
}

export interface SnapshotData {
  index: number;
  services: ServiceRecord[];
  mcpServers?: McpServerRecord[];
  tools: ToolRecord[];
  tombstones?: ToolRecord[];
  /** Every change of the names that were ever deleted, in order: a name's lives before this one. */
  toolHistory?: ToolLifeEvent[];
}

/** What one committed write stored, as records. */
export interface CatalogWrite {
  services?: readonly ServiceRecord[];
  mcpServers?: readonly McpServerRecord[];
  tools?: readonly ToolRecord[];
}

/** Names joining or leaving name indexes in one write: a SortedNames, or a scope's by its name. */
type IndexChanges = Map<SortedNames | string, string[]>;

/** A span of registry indexes during which a name was live: [from, until). */
type Life = [from: number, until: number];

/**
 * A big write (an import) prepared beside the live catalogue (CatalogSnapshot.prepareWrite):
 * every index it changes is built anew in slices while reads go on against the old ones, so
 * that applying it (applyPrepared) is a swap of references, whatever its size.
 */
export interface PreparedWrite {
  readonly index: number;
  readonly change: CatalogWrite;
  readonly entries: ReadonlyMap<string, CatalogTool> | undefined;
  /** The live tools after it, in name order: what tools() will return. */
  readonly sorted: readonly CatalogTool[];
  /** The catalogue's version it was prepared on: applied onto any other, it is applied afresh. */
  readonly base: number;
  readonly tools: Map<string, CatalogTool>;
  readonly all: SortedNames;
  readonly public: SortedNames;
  readonly byScope: Map<string, SortedNames>;
  readonly byService: Map<string, Set<string>>;
  readonly byMcpServer: Map<string, Set<string>>;
  /** Tombstoned names it registers again. */
  readonly revived: { name: string; tombstone: ToolRecord; createIndex: number }[];
  readonly changeMarks: ChangeMark[];
  readonly changes: Change[];
  readonly scopeSetChanged: boolean;
  /** Its tools, to be indexed for search after the swap. */
  readonly searchNames: readonly string[];
}

export class CatalogSnapshot {
  readonly #publicUrl: URL;
  #tools = new Map<string, CatalogTool>();
  readonly #services = new Map<string, ServiceRecord>();
  readonly #mcpServers = new Map<string, McpServerRecord>();
  #index = 0;
  /** Live tools in name order: every tool, those needing no scope, those needing each scope. */
  #all = new SortedNames();
  #public = new SortedNames();
  #byScope = new Map<string, SortedNames>();
  #byService = new Map<string, Set<string>>();
  /** Live mcp tools by MCP server id (ids of services and of MCP servers are apart). */
  #byMcpServer = new Map<string, Set<string>>();
  /** Bumped by every change of the state above: a prepared write checks it has not moved. */
  #version = 0;
  /** Live tools in name order, as entries; rebuilt lazily (in O(n), from #all) after a write. */
  #sorted: readonly CatalogTool[] | null = null;
  /** The same, sorted; rebuilt lazily after a write. */
  #scopeUsage: Map<string, number> | null = null;
  /**
   * The index at which the set of known scopes last changed. Token views are keyed by the
   * scopes some tool needs, so when that set changes a token may move to another key.
   */
  #scopeSetChangedAt = 0;
  readonly #tombstones = new Map<string, ToolRecord>();
  #deletions: DeletionMark[] = [];
  #changeMarks: ChangeMark[] = [];
  /** Marks superseded by a later change of the same name (compacted when they dominate). */
  #staleMarks = 0;
  /** The lives of names that were deleted and registered again, oldest first. */
  readonly #lives = new Map<string, Life[]>();
  /** Full-text search over live tools (src/catalog/search-index.ts). */
  #search = new SearchIndex();
  /**
   * Names written but not yet (re)indexed for search: a big write (an import) is indexed in
   * slices after it is applied, so that it does not hold the event loop; small ones at once.
   */
  #searchBacklog = new Set<string>();
  /** Names of big writes to index after the backlog (some may have changed or gone since). */
  #searchBulk: { names: readonly string[]; next: number }[] = [];
  #searchScheduled = false;
  /** Searches waiting for the backlog to be indexed (searchable()). */
  #searchWaiters: (() => void)[] = [];
  /** Where prepare() puts entries' bytes. */
  readonly #arena = new ByteArena(256 * 1024);

  constructor(publicUrl: URL) {
    this.#publicUrl = publicUrl;
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

  /** Written tools not yet searchable: indexed in slices after a big write (see #indexForSearch). */
  get searchBacklog(): number {
    return this.#searchPending();
  }

  get toolCount(): number {
    return this.#tools.size;
  }

  load(data: SnapshotData): void {
    this.#tools.clear();
    this.#services.clear();
    this.#tombstones.clear();
    this.#byScope.clear();
    this.#byService.clear();
    this.#byMcpServer.clear();
    this.#mcpServers.clear();
    this.#lives.clear();
    for (const s of data.services) this.#services.set(s.id, s);
    for (const m of data.mcpServers ?? []) this.#mcpServers.set(m.id, m);
    const publicNames: string[] = [];
    const scopeNames = new Map<string, string[]>();
    for (const t of data.tools) {
      const entry = this.#entry(t);
      this.#tools.set(t.name, entry);
      if (entry.tool.scopes.length === 0) publicNames.push(t.name);
      for (const scope of new Set(entry.tool.scopes)) {
        const names = scopeNames.get(scope);
        if (names) names.push(t.name);
        else scopeNames.set(scope, [t.name]);
      }
      this.#indexService(entry, 'in');
    }
    // Rows come in name order, so the name indexes are usually taken as they are.
    this.#all = new SortedNames(this.#tools.keys());
    this.#public = new SortedNames(publicNames);
    for (const [scope, names] of scopeNames) this.#byScope.set(scope, new SortedNames(names));
    for (const t of data.tombstones ?? []) this.#tombstones.set(t.name, t);
    this.#deletions = [...this.#tombstones.values()].map((t) => ({ name: t.name, index: t.index })).sort((a, b) => a.index - b.index);
    this.#rebuildChangeMarks();
    this.#loadLives(data.toolHistory ?? []);
    // Indexed for search at once. In slices after the load (as a big write is) the registry was
    // ready 1.5 s sooner at 100,000 tools, but the heap then grew in small steps and V8 ran
    // 26-35 ms mark-compacts every few seconds for a while after (none this way).
    this.#search = new SearchIndex();
    this.#searchBacklog.clear();
    this.#searchBulk = [];
    this.#search.upsertMany([...this.#tools.values()].map(searchDocument));
    this.#settleSearchWaiters();
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
   * Applies stored records (upserts or tombstones) from one committed write; `prepared` holds
   * entries built by prepare() for some of them (any whose record differs is built again).
   */
  apply(index: number, change: CatalogWrite, prepared?: ReadonlyMap<string, CatalogTool>): Change[] {
    const changes: Change[] = [];
    let scopeSetChanged = false;
    // MCP servers are admin configuration, not in the change log: their tools' changes are.
    for (const m of change.mcpServers ?? []) {
      if (m.status === 'deleted') this.#mcpServers.delete(m.id);
      else this.#mcpServers.set(m.id, m);
    }
    for (const s of change.services ?? []) {
      const before = this.#services.has(s.id) ? [] : null;
      if (s.status === 'deleted') this.#services.delete(s.id);
      else this.#services.set(s.id, s);
      changes.push({
        kind: 'tool-service',
        name: s.id,
        op: s.status === 'deleted' ? 'delete' : 'upsert',
        scopesBefore: before,
        scopesAfter: s.status === 'deleted' ? null : [],
      });
    }
    const tools = change.tools ?? [];
    // Name-order index updates are gathered, so that a big write (an import) merges once.
    const added: IndexChanges = new Map();
    const removed: IndexChanges = new Map();
    const ordered =
      tools.length > 1 && !strictlyAscending(tools.map((t) => t.name)) ? [...tools].sort((a, b) => compareNames(a.name, b.name)) : tools;
    for (const t of ordered) {
      const previous = this.#tools.get(t.name);
      const known = previous !== undefined || this.#tombstones.has(t.name);
      const before = previous?.tool.scopes ?? null;
      let after: readonly string[] | null = null;
      if (previous) this.#noteIndexes(previous, removed, 'out');
      if (t.status === 'deleted') {
        this.#tools.delete(t.name);
        this.#search.remove(t.name);
        this.#searchBacklog.delete(t.name);
        if (previous) this.#endLife(t.name, previous.record.createIndex, t.index);
        this.#tombstones.set(t.name, t);
        this.#deletions.push({ name: t.name, index: t.index });
      } else {
        const ready = prepared?.get(t.name);
        const entry = ready && ready.record === t ? ready : this.#entry(t);
        this.#tools.set(t.name, entry);
        const tombstone = this.#tombstones.get(t.name);
        if (tombstone) {
          this.#startLife(t.name, tombstone, t.createIndex);
          this.#tombstones.delete(t.name);
        }
        this.#noteIndexes(entry, added, 'in');
        this.#searchBacklog.add(t.name);
        after = entry.tool.scopes;
      }
      this.#mark(t, known);
      changes.push({
        kind: 'tool',
        name: t.name,
        op: t.status === 'deleted' ? 'delete' : 'upsert',
        scopesBefore: before,
        scopesAfter: after,
      });
    }
    for (const key of new Set([...added.keys(), ...removed.keys()])) {
      if (typeof key !== 'string') {
        key.update(added.get(key) ?? [], removed.get(key) ?? []);
        continue;
      }
      // A scope's index exists while some live tool lists the scope: the set of known scopes
      // changes when one appears or goes (judged over the whole write, so a tool that keeps
      // its scope never looks like the scope leaving and coming back).
      const known = this.#byScope.has(key);
      const names = this.#scopeIndex(key);
      names.update(added.get(key) ?? [], removed.get(key) ?? []);
      if (names.size === 0) this.#byScope.delete(key);
      if (known !== names.size > 0) scopeSetChanged = true;
    }
    if (this.#staleMarks > 1024 && this.#staleMarks > this.#changeMarks.length / 2) this.#rebuildChangeMarks();
    this.#indexForSearch();
    if (scopeSetChanged) this.#scopeSetChangedAt = index;
    this.#changed(index);
    return changes;
  }

  /**
   * Prepares a big write of live tools (an import; it deletes nothing), given in strictly
   * ascending name order, beside the live indexes, in steps: the tools map, the name indexes it
   * touches, the change marks, the service indexes and the tools in name order are all built
   * anew while reads go on against the old ones; `entries` are those built by prepare().
   * applyPrepared() then swaps them in at once. At 100,000 tools applying such a write in place
   * held the event loop for about a second.
   */
  *prepareWrite(index: number, change: CatalogWrite, entries?: ReadonlyMap<string, CatalogTool>): Steps<PreparedWrite> {
    const base = this.#version;
    const ordered = change.tools ?? [];
    const changes: Change[] = [];
    const services = new Map<string, boolean>();
    for (const s of change.services ?? []) {
      const present = services.get(s.id) ?? this.#services.has(s.id);
      services.set(s.id, s.status !== 'deleted');
      changes.push({
        kind: 'tool-service',
        name: s.id,
        op: s.status === 'deleted' ? 'delete' : 'upsert',
        scopesBefore: present ? [] : null,
        scopesAfter: s.status === 'deleted' ? null : [],
      });
    }

    const tools = new Map<string, CatalogTool>();
    let step = 0;
    const due = () => ++step % PREPARE_STEP === 0;
    for (const [name, entry] of this.#tools) {
      tools.set(name, entry);
      if (due()) yield;
    }
    const added: IndexChanges = new Map();
    const removed = new Map<SortedNames | string, Set<string>>();
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
    const revived: PreparedWrite['revived'] = [];
    const marks: ChangeMark[] = [];
    const searchNames: string[] = [];
    let last: string | undefined;
    for (const t of ordered) {
      if (t.status === 'deleted') throw new Error('a prepared write stores tools; it deletes none');
      if (last !== undefined && !(last < t.name)) throw new Error('a prepared write takes its tools in strictly ascending name order');
      last = t.name;
      const previous = this.#tools.get(t.name);
      if (previous) {
        for (const key of this.#indexKeys(previous)) {
          const names = removed.get(key);
          if (names) names.add(t.name);
          else removed.set(key, new Set([t.name]));
        }
        move(previous, 'out');
      }
      const ready = entries?.get(t.name);
      const entry = ready && ready.record === t ? ready : this.#entry(t);
      tools.set(t.name, entry);
      for (const key of this.#indexKeys(entry)) {
        const names = added.get(key);
        if (names) names.push(t.name);
        else added.set(key, [t.name]);
      }
      move(entry, 'in');
      const tombstone = this.#tombstones.get(t.name);
      if (tombstone) revived.push({ name: t.name, tombstone, createIndex: t.createIndex });
      marks.push({ name: t.name, index: t.index, updatedAt: t.updatedAt, latestUpdatedAt: '' });
      searchNames.push(t.name);
      changes.push({
        kind: 'tool',
        name: t.name,
        op: 'upsert',
        scopesBefore: previous?.tool.scopes ?? null,
        scopesAfter: entry.tool.scopes,
      });
      if (due()) yield;
    }

    // The name indexes: each touched one merged anew (removals first: an added name stays).
    const none = new Set<string>();
    let all = this.#all;
    let publicNames = this.#public;
    const byScope = new Map(this.#byScope);
    let scopeSetChanged = false;
    for (const key of new Set([...added.keys(), ...removed.keys()])) {
      const current = typeof key === 'string' ? (this.#byScope.get(key) ?? new SortedNames()) : key;
      const merged = yield* current.mergedSteps(added.get(key) ?? [], removed.get(key) ?? none);
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

    // Change marks, compacted: one per tool and tombstone at its latest change, in order.
    const changeMarks: ChangeMark[] = [];
    let latest = '';
    const keep = (mark: ChangeMark) => {
      if (mark.updatedAt > latest) latest = mark.updatedAt;
      changeMarks.push({ name: mark.name, index: mark.index, updatedAt: mark.updatedAt, latestUpdatedAt: latest });
    };
    for (const mark of this.#changeMarks) {
      const record = tools.get(mark.name)?.record ?? this.#tombstones.get(mark.name);
      if (record?.index === mark.index) keep(mark);
      if (due()) yield;
    }
    for (const mark of marks) {
      keep(mark);
      if (due()) yield;
    }

    const sorted: CatalogTool[] = [];
    for (const name of all.values()) {
      sorted.push(tools.get(name) as CatalogTool);
      if (due()) yield;
    }
    return {
      index,
      change,
      entries,
      sorted,
      base,
      tools,
      all,
      public: publicNames,
      byScope,
      byService,
      byMcpServer,
      revived,
      changeMarks,
      changes,
      scopeSetChanged,
      searchNames,
    };
  }

  /**
   * Applies a prepared write: a swap of references, plus its few services and revived names.
   * On a catalogue that changed since it was prepared (nothing writes during an import, so only
   * after a bug) it is applied afresh, in place. Returns its changes, and whether it swapped.
   */
  applyPrepared(write: PreparedWrite): { changes: Change[]; swapped: boolean } {
    if (write.base !== this.#version) return { changes: this.apply(write.index, write.change, write.entries), swapped: false };
    for (const m of write.change.mcpServers ?? []) {
      if (m.status === 'deleted') this.#mcpServers.delete(m.id);
      else this.#mcpServers.set(m.id, m);
    }
    for (const s of write.change.services ?? []) {
      if (s.status === 'deleted') this.#services.delete(s.id);
      else this.#services.set(s.id, s);
    }
    this.#tools = write.tools;
    this.#all = write.all;
    this.#public = write.public;
    this.#byScope = write.byScope;
    this.#byService = write.byService;
    this.#byMcpServer = write.byMcpServer;
    for (const { name, tombstone, createIndex } of write.revived) {
      this.#startLife(name, tombstone, createIndex);
      this.#tombstones.delete(name);
    }
    this.#changeMarks = write.changeMarks;
    this.#staleMarks = 0;
    if (write.searchNames.length > 0) this.#searchBulk.push({ names: write.searchNames, next: 0 });
    this.#indexForSearch();
    if (write.scopeSetChanged) this.#scopeSetChangedAt = write.index;
    this.#changed(write.index);
    this.#sorted = write.sorted;
    return { changes: write.changes, swapped: true };
  }

  /**
   * Whether a tool by this name was live at `index`: in its current life, or in one before
   * (a name deleted and registered again, any number of times).
   */
  existedAt(name: string, index: number): boolean {
    const lives = this.#lives.get(name);
    if (lives) return lives.some(([from, until]) => from <= index && index < until);
    const live = this.#tools.get(name);
    if (live) return live.record.createIndex <= index;
    const tombstone = this.#tombstones.get(name);
    return tombstone !== undefined && tombstone.createIndex <= index && index < tombstone.index;
  }

  getTombstone(name: string): ToolRecord | undefined {
    return this.#tombstones.get(name);
  }

  /** Tombstones whose deletion came after `index`, oldest deletion first. */
  *deletedAfter(index: number): Generator<ToolRecord> {
    let lo = 0;
    let hi = this.#deletions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#deletions[mid] as DeletionMark).index <= index) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.#deletions.length; i++) {
      const mark = this.#deletions[i] as DeletionMark;
      const tombstone = this.#tombstones.get(mark.name);
      // A name deleted more than once has one mark per deletion: only the current one counts.
      if (tombstone && tombstone.index === mark.index) yield tombstone;
    }
  }

  /**
   * Tools (live, or tombstones) in the order of their latest change, from the first whose
   * change is at or after `since` (an ISO time) or after the `after` position. Each name comes
   * once, at its latest change.
   */
  *changedSince(
    since: string | undefined,
    after: { index: number; name: string } | undefined,
  ): Generator<{ record: ToolRecord; entry: CatalogTool | undefined }> {
    const marks = this.#changeMarks;
    let lo = 0;
    let hi = marks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const mark = marks[mid] as ChangeMark;
      const before =
        after !== undefined
          ? mark.index < after.index || (mark.index === after.index && mark.name <= after.name)
          : mark.latestUpdatedAt < (since ?? '');
      if (before) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < marks.length; i++) {
      const mark = marks[i] as ChangeMark;
      if (since !== undefined && mark.updatedAt < since) continue;
      const entry = this.#tools.get(mark.name);
      const record = entry?.record ?? this.#tombstones.get(mark.name);
      if (record && record.index === mark.index) yield { record, entry };
    }
  }

  /**
   * Live tool names matching `query`, best first (see SearchIndex), at most `limit` of those
   * `accept` takes. A tool written moments ago by a big write may not be found yet (it is
   * indexed within a second or two: wait for searchable() first); a deleted one never is.
   */
  search(query: string, limit: number, accept: (entry: CatalogTool) => boolean): CatalogTool[] {
    const names = this.#search.search(query, {
      limit,
      accept: (name) => {
        const entry = this.#tools.get(name);
        return entry !== undefined && accept(entry);
      },
    });
    return names.map((name) => this.#tools.get(name) as CatalogTool);
  }

  /**
   * Null when every written tool is searchable; else a promise that resolves once they are (the
   * slices after a big write run every turn of the event loop, so it does).
   */
  searchable(): Promise<void> | null {
    if (this.#searchPending() === 0) return null;
    return new Promise((resolve) => this.#searchWaiters.push(resolve));
  }

  /**
   * Indexes written tools for search: at once when few (a small write never waits behind a big
   * one's slices), else in slices between other work.
   */
  #indexForSearch(): void {
    if (this.#searchBacklog.size <= SEARCH_AT_ONCE) this.#drainSearch(Infinity, false);
    if (this.#searchScheduled || this.#searchPending() === 0) return;
    if (this.#searchPending() <= SEARCH_AT_ONCE) {
      this.#drainSearch(Infinity);
      return;
    }
    this.#searchScheduled = true;
    const slice = () => {
      const until = performance.now() + SEARCH_SLICE_MS;
      while (this.#searchPending() > 0 && performance.now() < until) this.#drainSearch(SEARCH_CHUNK);
      if (this.#searchPending() > 0) setImmediate(slice);
      else this.#searchScheduled = false;
    };
    setImmediate(slice);
  }

  #searchPending(): number {
    let pending = this.#searchBacklog.size;
    for (const bulk of this.#searchBulk) pending += bulk.names.length - bulk.next;
    return pending;
  }

  /** Indexes up to `max` written tools: the backlog of small writes first, then big writes'. */
  #drainSearch(max: number, bulk = true): void {
    const docs: SearchDocument[] = [];
    for (const name of this.#searchBacklog) {
      if (docs.length === max) break;
      this.#searchBacklog.delete(name);
      const entry = this.#tools.get(name);
      if (entry) docs.push(searchDocument(entry));
    }
    while (bulk && docs.length < max && this.#searchBulk.length > 0) {
      const bulk = this.#searchBulk[0] as { names: readonly string[]; next: number };
      while (docs.length < max && bulk.next < bulk.names.length) {
        // Gone or written again since (then also in the backlog, or indexed already): at most
        // indexed twice, which only replaces the document with itself.
        const entry = this.#tools.get(bulk.names[bulk.next++] as string);
        if (entry) docs.push(searchDocument(entry));
      }
      if (bulk.next === bulk.names.length) this.#searchBulk.shift();
    }
    this.#search.upsertMany(docs);
    this.#settleSearchWaiters();
  }

  /** Lets the searches waiting in searchable() go once nothing is left to index. */
  #settleSearchWaiters(): void {
    if (this.#searchWaiters.length === 0 || this.#searchPending() > 0) return;
    const waiters = this.#searchWaiters;
    this.#searchWaiters = [];
    for (const resolve of waiters) resolve();
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

  /** Live names in order of the tools that list this scope among theirs (undefined: none). */
  namesWithScope(scope: string): SortedNames | undefined {
    return this.#byScope.get(scope);
  }

  toolsUsingService(id: string): string[] {
    return [...(this.#byService.get(id) ?? [])].sort(compareNames);
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
    const count = (ids: Iterable<string>, index: ReadonlyMap<string, ReadonlySet<string>>) =>
      new Map([...ids].sort(compareNames).map((id) => [id, index.get(id)?.size ?? 0] as const));
    return { services: count(this.#services.keys(), this.#byService), mcpServers: count(this.#mcpServers.keys(), this.#byMcpServer) };
  }

  /** Names of the live tools of an MCP server, in name order. */
  toolsOfMcpServer(id: string): string[] {
    return [...(this.#byMcpServer.get(id) ?? [])].sort(compareNames);
  }

  /**
   * The names of every scope some live tool requires: what the visibility rules list in the
   * challenge under ANONYMOUS_DISCOVERY=none. Bound once, so a request passes it without
   * allocating a closure.
   */
  readonly knownScopeNames = (): Iterable<string> => this.knownScopes().keys();

  /** Every scope any live tool requires, with how many tools require it, in name order. */
  knownScopes(): ReadonlyMap<string, number> {
    this.#scopeUsage ??= new Map(
      [...this.#byScope].map(([scope, names]) => [scope, names.size] as const).sort(([a], [b]) => compareNames(a, b)),
    );
    return this.#scopeUsage;
  }

  #scopeIndex(scope: string): SortedNames {
    let names = this.#byScope.get(scope);
    if (!names) {
      names = new SortedNames();
      this.#byScope.set(scope, names);
    }
    return names;
  }

  /**
   * Notes the name indexes a tool is in (every tool, public, one per scope) as changing for
   * it, to be merged once per write; its service's index changes at once.
   */
  #noteIndexes(entry: CatalogTool, changes: IndexChanges, direction: 'in' | 'out'): void {
    const name = entry.tool.name;
    for (const index of this.#indexKeys(entry)) {
      const names = changes.get(index);
      if (names) names.push(name);
      else changes.set(index, [name]);
    }
    this.#indexService(entry, direction);
  }

  /** The name indexes a tool is in: every tool, public or one per scope (by its name). */
  #indexKeys(entry: CatalogTool): (SortedNames | string)[] {
    const keys: (SortedNames | string)[] = [this.#all];
    if (entry.tool.scopes.length === 0) keys.push(this.#public);
    for (const scope of new Set(entry.tool.scopes)) keys.push(scope);
    return keys;
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

  /** Appends a change's mark; a name's mark before it (if it had a record) is stale from now on. */
  #mark(record: ToolRecord, known: boolean): void {
    const last = this.#changeMarks.at(-1);
    if (known) this.#staleMarks++;
    const latest = last !== undefined && last.latestUpdatedAt > record.updatedAt ? last.latestUpdatedAt : record.updatedAt;
    this.#changeMarks.push({ name: record.name, index: record.index, updatedAt: record.updatedAt, latestUpdatedAt: latest });
  }

  /** One mark per tool and tombstone at its latest change, in order of (index, name). */
  #rebuildChangeMarks(): void {
    const records = [...[...this.#tools.values()].map((e) => e.record), ...this.#tombstones.values()];
    records.sort((a, b) => a.index - b.index || compareNames(a.name, b.name));
    let latest = '';
    this.#changeMarks = records.map((r) => {
      if (r.updatedAt > latest) latest = r.updatedAt;
      return { name: r.name, index: r.index, updatedAt: r.updatedAt, latestUpdatedAt: latest };
    });
    this.#staleMarks = 0;
  }

  #loadLives(history: readonly ToolLifeEvent[]): void {
    const byName = new Map<string, ToolLifeEvent[]>();
    for (const event of history) {
      const events = byName.get(event.name);
      if (events) events.push(event);
      else byName.set(event.name, [event]);
    }
    for (const [name, events] of byName) {
      const lives: Life[] = [];
      let from: number | null = null;
      for (const event of events) {
        if (event.op === 'upsert' && from === null) from = event.index;
        else if (event.op === 'delete') {
          // A deletion with no creation in the log (older than the log): live since the start.
          lives.push([from ?? 0, event.index]);
          from = null;
        }
      }
      if (from !== null) lives.push([from, Infinity]);
      if (lives.length > 1) this.#lives.set(name, lives);
    }
  }

  /** A name deleted: its current life ends (recorded only for names with more than one life). */
  #endLife(name: string, createIndex: number, deletedAt: number): void {
    const lives = this.#lives.get(name);
    const current = lives?.at(-1);
    if (current && current[0] === createIndex) current[1] = deletedAt;
  }

  /** A deleted name registered again: the life before is kept, so pinned walks still see it. */
  #startLife(name: string, tombstone: ToolRecord, createIndex: number): void {
    const lives = this.#lives.get(name) ?? [[tombstone.createIndex, tombstone.index]];
    lives.push([createIndex, Infinity]);
    this.#lives.set(name, lives);
  }

  #entry(record: ToolRecord): CatalogTool {
    const tool = normaliseTool(record.kind, record.descriptor);
    return new CatalogTool(tool, record, publicToolView(tool, record, this.#publicUrl));
  }

  #changed(index: number): void {
    this.#version++;
    this.#index = index;
    this.#sorted = null;
    this.#scopeUsage = null;
  }
}
