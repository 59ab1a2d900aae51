/**
 * Feeds the full-text index (search-index.ts) with written tools: a small write at once, a big
 * one (an import) in slices after it is applied, so that indexing never holds the event loop;
 * and holds searches that must see every written tool (searchable()) until it has.
 */
import type { CatalogTool } from './catalog-tool.js';
import type { LiveIndexes } from './indexes.js';
import type { Scheduler } from './scheduler.js';
import { SearchIndex, type SearchDocument } from './search-index.js';
import type { ToolStep } from './write-plan.js';

/** A write of at most this many tools is indexed for search at once; a bigger one in slices. */
const SEARCH_AT_ONCE = 2000;
/**
 * Documents indexed per step after a big write; the app's scheduler gives the loop back between
 * steps once its slice (5 ms) is used up. A count (2,000 tools a turn) held the loop for 30-70 ms
 * under load.
 */
const SEARCH_CHUNK = 64;
/** The feeder's name among the scheduler's owners. */
const SEARCH_OWNER = 'search-feeder';

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

export class SearchFeeder {
  readonly #live: LiveIndexes;
  readonly #scheduler: Scheduler;
  #index = new SearchIndex();
  /** Names written but not yet (re)indexed: small writes'. */
  readonly #backlog = new Set<string>();
  /** Names of big writes to index after the backlog (some may have changed or gone since). */
  #bulk: { names: readonly string[]; next: number }[] = [];
  #scheduled = false;
  /** Searches waiting for the backlog to be indexed (searchable()). */
  #waiters: (() => void)[] = [];

  /** `scheduler`: the app's one scheduler of background work, in which the backlog is one owner. */
  constructor(live: LiveIndexes, scheduler: Scheduler) {
    this.#live = live;
    this.#scheduler = scheduler;
  }

  /** Written tools not yet searchable. */
  get pending(): number {
    let pending = this.#backlog.size;
    for (const bulk of this.#bulk) pending += bulk.names.length - bulk.next;
    return pending;
  }

  /**
   * Live tools matching `query`, best first (see SearchIndex), at most `limit` of those
   * `accept` takes. A tool written moments ago by a big write may not be found yet (it is
   * indexed within a second or two: wait for searchable() first); a deleted one never is.
   */
  search(query: string, limit: number, accept: (entry: CatalogTool) => boolean): CatalogTool[] {
    const live = this.#live;
    const names = this.#index.search(query, {
      limit,
      accept: (name) => {
        const entry = live.getTool(name);
        return entry !== undefined && accept(entry);
      },
    });
    return names.map((name) => live.getTool(name) as CatalogTool);
  }

  /**
   * Null when every written tool is searchable; else a promise that resolves once they are (the
   * slices after a big write run every turn of the event loop, so it does).
   */
  searchable(): Promise<void> | null {
    if (this.pending === 0) return null;
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /**
   * Indexes every live tool anew, at once. In slices after the load (as a big write is) the
   * registry was ready 1.5 s sooner at 100,000 tools, but the heap then grew in small steps and
   * V8 ran 26-35 ms mark-compacts every few seconds for a while after (none this way).
   */
  load(): void {
    this.#index = new SearchIndex();
    this.#backlog.clear();
    this.#bulk = [];
    this.#index.upsertMany([...this.#live.entries()].map(searchDocument));
    this.#settleWaiters();
  }

  /** A write's steps, after the live indexes took them. */
  written(steps: readonly ToolStep[]): void {
    for (const { record, entry } of steps) {
      if (entry === undefined) {
        this.#index.remove(record.name);
        this.#backlog.delete(record.name);
      } else this.#backlog.add(record.name);
    }
    this.#feed();
  }

  /** The names a big write stored (it deletes none), after the live indexes took them: indexed in slices. */
  writtenInBulk(names: readonly string[]): void {
    if (names.length > 0) this.#bulk.push({ names, next: 0 });
    this.#feed();
  }

  /**
   * Indexes written tools: at once when few (a small write never waits behind a big one's
   * slices), else in slices between other work.
   */
  #feed(): void {
    if (this.#backlog.size <= SEARCH_AT_ONCE) this.#drain(Infinity, false);
    if (this.#scheduled || this.pending === 0) return;
    if (this.pending <= SEARCH_AT_ONCE) {
      this.#drain(Infinity);
      return;
    }
    this.#scheduled = true;
    void this.#scheduler.run(this.#drainSteps(), SEARCH_OWNER);
  }

  /** Drains the written tools a chunk a step, until none are left (more may come meanwhile). */
  *#drainSteps(): Generator<void, void, void> {
    while (this.pending > 0) {
      yield;
      this.#drain(SEARCH_CHUNK);
    }
    this.#scheduled = false;
  }

  /** Indexes up to `max` written tools: the backlog of small writes first, then big writes'. */
  #drain(max: number, bulk = true): void {
    const docs: SearchDocument[] = [];
    for (const name of this.#backlog) {
      if (docs.length === max) break;
      this.#backlog.delete(name);
      const entry = this.#live.getTool(name);
      if (entry) docs.push(searchDocument(entry));
    }
    while (bulk && docs.length < max && this.#bulk.length > 0) {
      const bulk = this.#bulk[0] as { names: readonly string[]; next: number };
      while (docs.length < max && bulk.next < bulk.names.length) {
        // Gone or written again since (then also in the backlog, or indexed already): at most
        // indexed twice, which only replaces the document with itself.
        const entry = this.#live.getTool(bulk.names[bulk.next++] as string);
        if (entry) docs.push(searchDocument(entry));
      }
      if (bulk.next === bulk.names.length) this.#bulk.shift();
    }
    this.#index.upsertMany(docs);
    this.#settleWaiters();
  }

  /** Lets the searches waiting in searchable() go once nothing is left to index. */
  #settleWaiters(): void {
    if (this.#waiters.length === 0 || this.pending > 0) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve();
  }
}
