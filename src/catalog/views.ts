/**
 * Discovery views: the exact bytes of `GET /` per view key, with a strong ETag, computed once
 * per catalogue version and kept in a byte-bounded cache; and the index at which each view last
 * changed, for blocking queries. A view's bytes are its tools' entries, each serialised once
 * per write of that tool, joined; its ETag is a hash of what determines those bytes.
 */
import { createHash } from 'node:crypto';
import { viewKeyString, type ViewKey } from '../model/visibility.js';
import type { LRUCache } from 'lru-cache';
import { lruByteCache } from './lru-byte-cache.js';
import type { CatalogTool } from './catalog-tool.js';
import type { CatalogSnapshot } from './snapshot.js';
import { finish, type Steps } from './steps.js';
import { walkView } from './walk.js';

/**
 * Bumped whenever the serialisation of an entry changes, so that an ETag from an older version
 * never matches bytes built by this one (the ETag hashes what the bytes are made from).
 */
const ENTRY_FORMAT = 2;
const COMMA = Buffer.from(',');
const TAIL = Buffer.from(']}');
/** Entries hashed or copied per step of a view's build (a fraction of a millisecond). */
const VIEW_STEP = 2048;

/**
 * The article's document (and a page of it) from its entries' bytes: no serialisation but of
 * the head, and `after` (a page's extra fields, as JSON text starting with a comma) at the end.
 */
export function discoveryBody(serviceName: string, entries: readonly Buffer[], after = ''): Buffer {
  const parts: Buffer[] = [Buffer.from(`{"service":${JSON.stringify(serviceName)},"protocol":"tool-discovery","tools":[`)];
  entries.forEach((entry, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(entry);
  });
  parts.push(Buffer.from(`]${after}}`));
  return Buffer.concat(parts);
}

/**
 * What a view is made of, without its bytes: its tools in name order, its ETag and what its
 * headers say. Cheap to keep (a reference per tool, against some 780 bytes of body per tool in
 * the bench's token views), so a view whose body the byte budget has pushed out is rebuilt by
 * copying its entries' bytes alone: no walk of the scope indexes and no hash (issue 33).
 */
export interface ViewPlan {
  /** Strong ETag over the body. */
  etag: string;
  /** Registry index the view was built at. */
  index: number;
  tools: readonly CatalogTool[];
  /** Live tools the caller cannot see. */
  hidden: number;
  /** The body's length in bytes. */
  length: number;
}

export interface CatalogView extends ViewPlan {
  /** The exact response bytes of `GET /` for this view. */
  body: Buffer;
  /**
   * The plan the body was copied from: the same object for every body built from it, so what
   * depends on the plan alone (an export, a header block) is keyed on it and outlives a body.
   */
  plan: ViewPlan;
}

/** What a cached view weighs: its body and about what its object and key take besides. */
const viewBytes = (view: CatalogView): number => view.body.length + 256;
/** What a cached plan weighs, in tool references: its tools and about its object and key. */
const planWeight = (plan: ViewPlan): number => plan.tools.length + 32;

/**
 * The share of VIEW_CACHE_BYTES one body may take; a bigger one is copied from its plan for each
 * request and not kept, so that one huge view cannot push every other out. Measured with
 * bench/views-micro.ts at 100,000 tools (50 token views of 10-13 MiB, 64 MiB, round-robin,
 * medians, loaded 2-core machine): keeping every body that fits, each request cost 51-75 ms
 * (10-11 ms of it in GC); keeping none over an eighth (8 MiB), 12-14 ms (5 ms of GC). The price:
 * a single hot token whose view is over an eighth copies it per request (some 4 ms for 12 MiB
 * alone, 12 ms under that load) where it was a hit; a larger VIEW_CACHE_BYTES keeps it.
 */
const MAX_BODY_SHARE = 1 / 8;

/**
 * Tool references the plans may hold per byte of VIEW_CACHE_BYTES: at 8 bytes a reference,
 * plans take at most a quarter of the bodies' memory again (64 MiB: 2,097,152 references, the
 * bench's 50 token views at 100,000 tools hold some 800,000 and the whole catalogue 100,000).
 */
const PLAN_REFERENCES_PER_BYTE = 1 / 32;

/** Change marks kept for view keys; the oldest go first (a missing key only means an early answer). */
const MAX_CHANGE_MARKS = 100_000;

interface ResolvedKey {
  /** The known scope names this was resolved against (null for the keys that need none). */
  known: ReadonlySet<string> | null;
  key: ViewKey;
  keyString: string;
}
const ALL_KEY: ResolvedKey = { known: null, key: { kind: 'all' }, keyString: viewKeyString({ kind: 'all' }) };
const PUBLIC_KEY: ResolvedKey = { known: null, key: { kind: 'public' }, keyString: viewKeyString({ kind: 'public' }) };

export class CatalogViews {
  readonly #snapshot: CatalogSnapshot;
  /** Resolved scope keys by scope set (#resolve); weak, so a caller's set goes with its Caller. */
  readonly #resolved = new WeakMap<ReadonlySet<string>, ResolvedKey>();
  readonly #serviceName: string;
  /** The document's opening, up to the first entry. */
  readonly #head: Buffer;
  readonly #cacheBytes: number;
  readonly #planBudget: number;
  #cache: LRUCache<string, CatalogView> | undefined;
  #plans: LRUCache<string, ViewPlan> | undefined;
  /** The whole catalogue is the hottest view (anonymous rediscovery): one field, no key. */
  #allView: CatalogView | null = null;
  /**
   * Per view key: the ETag last seen and the index at which it last changed, the key last
   * changed longest ago dropped first. Not an lru-cache: a read must not refresh a key (only a
   * change does), and one bounded by count (`max`) allocates all its 100,000 slots up front.
   */
  readonly #changes = new Map<string, { etag: string; changedAt: number }>();

  constructor(snapshot: CatalogSnapshot, options: { serviceName: string; cacheBytes: number }) {
    this.#snapshot = snapshot;
    this.#serviceName = options.serviceName;
    this.#head = Buffer.from(`{"service":${JSON.stringify(options.serviceName)},"protocol":"tool-discovery","tools":[`);
    this.#cacheBytes = options.cacheBytes;
    this.#planBudget = Math.floor(options.cacheBytes * PLAN_REFERENCES_PER_BYTE);
    this.#cache = lruByteCache(options.cacheBytes, viewBytes, options.cacheBytes * MAX_BODY_SHARE);
    this.#plans = lruByteCache(this.#planBudget, planWeight);
  }

  /**
   * Views are per catalogue version: the snapshot's change hook (catalog.ts) drops them all at
   * once after every change, in O(1) (a new cache: the old one's clear() walks every entry).
   */
  invalidate(): void {
    this.#cache = lruByteCache(this.#cacheBytes, viewBytes, this.#cacheBytes * MAX_BODY_SHARE);
    this.#plans = lruByteCache(this.#planBudget, planWeight);
    this.#allView = null;
  }

  view(key: ViewKey): CatalogView {
    if (key.kind === 'all' && this.#allView) return this.#allView;
    const resolved = this.#resolve(key);
    // The cache is emptied on every write, so the key needs no index.
    const cached = this.#cache?.get(resolved.keyString);
    if (cached) return cached;
    const plan = this.#planOf(resolved);
    const view: CatalogView = { ...plan, body: finish(this.#copy(plan)), plan };
    this.#cache?.set(resolved.keyString, view);
    if (resolved.key.kind === 'all') this.#allView = view;
    return view;
  }

  /**
   * The view's plan (its tools, ETag, index and hidden count) without its bytes, for what needs
   * no body: blocking queries' change marks, /stats, the MCP lists, exports.
   */
  plan(key: ViewKey): ViewPlan {
    if (key.kind === 'all' && this.#allView) return this.#allView.plan;
    const resolved = this.#resolve(key);
    // peek: reading a plan is no use of its body, so the body's place in the LRU stays.
    return this.#cache?.peek(resolved.keyString)?.plan ?? this.#planOf(resolved);
  }

  /**
   * A kept plan, or a new one: the walk of the view's scope indexes and the hash of its tools'
   * identities, the part of a view's build that grows with the view but not with its bytes.
   */
  #planOf({ key, keyString }: ResolvedKey): ViewPlan {
    const kept = this.#plans?.get(keyString);
    if (kept) return kept;
    const live = this.#snapshot.live;
    const tools = key.kind === 'all' ? live.tools() : [...walkView(live, key)];
    const plan = finish(this.#plan(tools, this.#snapshot.index, live.size - tools.length));
    this.#plans?.set(keyString, plan);
    this.#recordChange(keyString, plan);
    return plan;
  }

  /**
   * The whole catalogue's view as it will be at `index` with these tools (every live tool, in
   * name order), built in steps ahead of the write that makes it current: a big write (an
   * import) installs it with its swap, so that the first `GET /` after it finds its bytes ready
   * (at 100,000 tools building them took about a second).
   */
  *prepareFullView(tools: readonly CatalogTool[], index: number): Steps<CatalogView> {
    const plan = yield* this.#plan(tools, index, 0);
    return { ...plan, body: yield* this.#copy(plan), plan };
  }

  /** Makes a view from prepareFullView the whole catalogue's current one (after invalidate()). */
  installFullView(view: CatalogView): void {
    const keyString = ALL_KEY.keyString;
    this.#cache?.set(keyString, view);
    this.#plans?.set(keyString, view.plan);
    this.#allView = view;
    this.#recordChange(keyString, view.plan);
  }

  /**
   * The registry index at which this view last changed. Views are compared by ETag when
   * computed, so a write that leaves a view's bytes alone does not count for it. A key not seen
   * before counts as changed now, which at worst answers a blocking query early, never late.
   * When the set of known scopes changes, a token may move to another key: every scope-keyed
   * view counts as changed then.
   */
  changedAt(key: ViewKey): number {
    const plan = this.plan(key);
    const recorded = this.#changes.get(this.#resolve(key).keyString)?.changedAt ?? plan.index;
    return key.kind === 'scopes' ? Math.max(recorded, this.#snapshot.scopeSetChangedAt) : recorded;
  }

  /**
   * A view's plan, in steps. The strong ETag hashes the service name, the format, each tool's
   * name, index and update time, and the body's length: equal hashes mean equal bytes, and
   * hashing those is far cheaper than hashing the body (tens of MiB at 100,000 tools).
   */
  *#plan(tools: readonly CatalogTool[], index: number, hidden: number): Steps<ViewPlan> {
    const hash = createHash('sha256').update(`${ENTRY_FORMAT}\u0000${this.#serviceName}\u0000${this.#snapshot.publicUrl.href}`);
    let length = this.#head.length + TAIL.length + Math.max(0, tools.length - 1);
    for (let from = 0; from < tools.length; from += VIEW_STEP) {
      // The identities joined as they would be in one text, hashed a step at a time.
      let identity = '';
      const to = Math.min(tools.length, from + VIEW_STEP);
      for (let i = from; i < to; i++) {
        const t = tools[i] as CatalogTool;
        identity += t.identity;
        length += t.bytes.length;
      }
      hash.update(identity);
      yield;
    }
    hash.update(`\n${length}`);
    return { etag: `"${hash.digest('base64url').slice(0, 32)}"`, index, tools, hidden, length };
  }

  /**
   * The article's document (discoveryBody's bytes): the plan's entries' bytes copied into one
   * buffer (no serialisation but of entries written since they were last served), in steps.
   */
  *#copy(plan: ViewPlan): Steps<Buffer> {
    const { tools } = plan;
    const body = Buffer.allocUnsafe(plan.length);
    let at = this.#head.copy(body, 0);
    for (let i = 0; i < tools.length; i++) {
      if (i > 0) at += COMMA.copy(body, at);
      at += (tools[i] as CatalogTool).bytes.copy(body, at);
      if ((i + 1) % VIEW_STEP === 0) yield;
    }
    TAIL.copy(body, at);
    return body;
  }

  /**
   * Only tokens some tool's scope entry names can change a view, so tokens that differ in other
   * scopes share one cached view.
   */
  /**
   * A key's scopes narrowed to those some tool names, and its cache key, remembered per scope
   * set while the catalogue's known scope names stay the same set (a write that changes them
   * makes a new one). A token's Caller, and so its scope set, is the same object for every
   * request made with that token (the verified-token cache holds it), so a bearer view is found
   * without copying, filtering, sorting and joining its scopes per request (issue 33: about
   * 1-2 us of a bearer `GET /`).
   */
  #resolve(key: ViewKey): ResolvedKey {
    if (key.kind === 'all') return ALL_KEY;
    if (key.kind === 'public') return PUBLIC_KEY;
    const known = this.#snapshot.live.knownTokens();
    const remembered = this.#resolved.get(key.scopes);
    if (remembered !== undefined && remembered.known === known) return remembered;
    const normalised = this.#normalise(key);
    const made = { known, key: normalised, keyString: viewKeyString(normalised) };
    this.#resolved.set(key.scopes, made);
    return made;
  }

  #normalise(key: ViewKey): ViewKey {
    if (key.kind !== 'scopes') return key;
    const known = this.#snapshot.live.knownTokens();
    return { kind: 'scopes', scopes: new Set([...key.scopes].filter((s) => known.has(s))) };
  }

  #recordChange(keyString: string, view: ViewPlan): void {
    const seen = this.#changes.get(keyString);
    if (seen && seen.etag === view.etag) return;
    this.#changes.delete(keyString);
    this.#changes.set(keyString, { etag: view.etag, changedAt: view.index });
    if (this.#changes.size > MAX_CHANGE_MARKS) {
      const oldest = this.#changes.keys().next().value;
      if (oldest !== undefined) this.#changes.delete(oldest);
    }
  }
}
