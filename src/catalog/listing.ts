/**
 * Discovery beyond the full list: pages in name order with cursors pinned to the registry index
 * of page one, changes since a time in the order they were made, full-text search, and filters
 * by scope. Every page walks the catalogue's indexes from where the last one stopped, so its
 * cost is what the page holds (plus the writes made since its walk began), never the catalogue.
 */
import type { LRUCache } from 'lru-cache';
import { normaliseTool } from '../model/normalise.js';
import { RegistryError } from '../model/errors.js';
import type { ToolRecord } from '../model/records.js';
import { namesToken } from '../model/scope-rule.js';
import { viewKeyString, visibleScopes, type ViewKey } from '../model/visibility.js';
import type { Catalog } from './catalog.js';
import { lruByteCache } from './lru-byte-cache.js';
import { discoveryBody } from './views.js';
import { publicToolView, type PublicTool } from '../model/public-view.js';
import { CatalogTool } from './catalog-tool.js';
import { walkView } from './walk.js';
import type { ServiceHealth } from './service-health.js';

export interface ListingQuery {
  limit?: number | undefined;
  cursor?: string | undefined;
  q?: string | undefined;
  scope?: string | undefined;
  updatedSince?: string | undefined;
  /** Leave out the tools of announced tool services whose heartbeats stopped. */
  passing?: boolean | undefined;
}

export interface Listing {
  tools: PublicTool[];
  /** The same tools' discovery entries as JSON bytes, for fronts that send bytes. */
  parts: Buffer[];
  /** The same tools as the catalogue holds them (tombstones for tools deleted during a pinned walk), for fronts with their own shapes. */
  entries: readonly CatalogTool[];
  nextCursor: string | null;
  index: number;
}

/** A walk in name order: pinned to a registry index, resumed after the last name served. */
interface NameCursor {
  /** The registry index the walk is pinned to. */
  s: number;
  /** The last name served. */
  a: string;
}

/** A walk through changes (`updated_since`): resumed after the last change served. */
interface ChangeCursor {
  /** The registry index of the last change served. */
  u: number;
  /** Its name (one write can change many tools; they come in name order). */
  a: string;
}

type Cursor = NameCursor | ChangeCursor;

const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeCursor(text: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as { s?: unknown; u?: unknown; a?: unknown };
    const index = value.s ?? value.u;
    if (
      Number.isSafeInteger(index) &&
      (index as number) >= 0 &&
      typeof value.a === 'string' &&
      (value.s === undefined) !== (value.u === undefined)
    )
      return value as Cursor;
  } catch {
    // fall through
  }
  throw new RegistryError('TR_ERR_BAD_REQUEST', 'the cursor is not one this registry gave out', {
    fieldErrors: [{ path: 'cursor', message: 'not a cursor from a previous page' }],
  });
}

/** What a kept page body weighs: its bytes, its key, and about what its object takes besides. */
const bodyBytes = (made: ListingBody, key: string): number => made.body.length + key.length + 64;

/** A listing's plain answer (`DiscoveryPage`) as the bytes sent. */
export interface ListingBody {
  body: Buffer;
  /** The registry index the listing was made at. */
  index: number;
}

export class CatalogListing {
  readonly #catalog: Catalog;
  readonly #publicUrl: URL;
  readonly #health: ServiceHealth | undefined;
  /**
   * Plain answers of pages and filters, valid for one catalogue version. The first page is what
   * most agents ask for; walking it and copying its entries into one body cost ~25% of a page
   * request's CPU at 10,000 tools (profile of `GET /?limit=100` under npm run bench's load).
   */
  #bodies: LRUCache<string, ListingBody> | undefined;
  readonly #cacheBytes: number;
  #bodiesVersion = -1;

  /** `cacheBytes`: the most bytes of page bodies kept between writes (0: none). */
  constructor(catalog: Catalog, publicUrl: URL, health?: ServiceHealth, cacheBytes = 0) {
    this.#catalog = catalog;
    this.#publicUrl = publicUrl;
    this.#health = health;
    this.#cacheBytes = cacheBytes;
    this.#bodies = lruByteCache(cacheBytes, bodyBytes);
  }

  /**
   * The plain answer of list(): the entries' bytes as they were serialised once per write, and
   * `nextCursor`. Pages, `updated_since` and `scope` answers depend on the catalogue alone, so
   * they are kept until the next write; searches (indexed in slices after big writes) and
   * `passing` (heartbeats) are built each time.
   */
  body(key: ViewKey, query: ListingQuery): ListingBody {
    const cacheable = query.q === undefined && query.passing !== true;
    if (!cacheable) return this.#render(this.list(key, query));
    const version = this.#catalog.version;
    if (version !== this.#bodiesVersion) {
      // A new cache (O(1)) rather than clear(), which walks every entry.
      this.#bodies = lruByteCache(this.#cacheBytes, bodyBytes);
      this.#bodiesVersion = version;
    }
    const limit = Math.min(query.limit ?? DEFAULT_PAGE, MAX_PAGE);
    const cacheKey = `${viewKeyString(key)}\u0000${limit}\u0000${query.cursor ?? ''}\u0000${query.scope ?? '\u0000'}\u0000${query.updatedSince ?? ''}`;
    const cached = this.#bodies?.get(cacheKey);
    if (cached) return cached;
    const made = this.#render(this.list(key, query));
    this.#bodies?.set(cacheKey, made);
    return made;
  }

  #render(listing: Listing): ListingBody {
    return {
      body: discoveryBody(this.#catalog.serviceName, listing.parts, `,"nextCursor":${JSON.stringify(listing.nextCursor)}`),
      index: listing.index,
    };
  }

  list(key: ViewKey, query: ListingQuery): Listing {
    const limit = Math.min(query.limit ?? DEFAULT_PAGE, MAX_PAGE);
    const index = this.#catalog.index;
    const scope = query.scope;
    const health = query.passing ? this.#health : undefined;
    // Only a live tool of a service that stopped its heartbeats fails: tombstones pass as they are.
    const failing = (entry: CatalogTool) =>
      health !== undefined &&
      entry.record.status !== 'deleted' &&
      entry.record.kind === 'tool-service' &&
      entry.record.serviceId !== null &&
      !health.available(entry.record.serviceId);
    const inView = (scopes: readonly string[], entry?: CatalogTool) =>
      visibleScopes(scopes, key) && (scope === undefined || namesToken(scopes, scope)) && (entry === undefined || !failing(entry));

    if (query.q !== undefined) {
      // Ranked by relevance among the tools of the view (and filters): no cursor, the first `limit`.
      const since = query.updatedSince;
      const found = this.#catalog.search(
        query.q,
        limit,
        (entry) => inView(entry.tool.scopes, entry) && (since === undefined || entry.record.updatedAt >= since),
      );
      return listing(found, null, index);
    }

    const cursor = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined;
    if (query.updatedSince !== undefined) return this.#changes(query.updatedSince, cursor, limit, inView, index);
    if (cursor !== undefined && !('s' in cursor))
      throw badCursor('this cursor continues a walk with updated_since; pass updated_since again');
    return this.#pinnedWalk(key, scope, cursor, limit, inView, index);
  }

  /**
   * Name order, pinned: tools that existed at the pinned index, as they are now (tombstones for
   * those deleted since), and none created since. Live tools come from the view's name indexes;
   * tombstones from the deletions made after the pin (few), merged in name order.
   */
  #pinnedWalk(
    key: ViewKey,
    scope: string | undefined,
    cursor: NameCursor | undefined,
    limit: number,
    inView: (scopes: readonly string[], entry?: CatalogTool) => boolean,
    index: number,
  ): Listing {
    const pinned = cursor?.s ?? index;
    if (pinned > index) throw badCursor('the cursor is from a registry index ahead of this one; start the walk again');
    const after = cursor?.a;
    const catalog = this.#catalog;
    const tombstones: CatalogTool[] = [];
    for (const record of catalog.deletedAfter(pinned)) {
      if ((after !== undefined && record.name <= after) || !catalog.existedAt(record.name, pinned)) continue;
      const entry = this.#tombstoneEntry(record);
      if (inView(entry.tool.scopes)) tombstones.push(entry);
    }
    tombstones.sort((a, b) => (a.view.name < b.view.name ? -1 : 1));
    const page: CatalogTool[] = [];
    let t = 0;
    let more = false;
    const take = (entry: CatalogTool): boolean => {
      if (page.length === limit) {
        more = true;
        return false;
      }
      page.push(entry);
      return true;
    };
    for (const entry of walkView(catalog, key, { after, scope })) {
      if (!catalog.existedAt(entry.tool.name, pinned) || !inView(entry.tool.scopes, entry)) continue;
      while (t < tombstones.length && (tombstones[t] as CatalogTool).view.name < entry.tool.name) {
        if (!take(tombstones[t++] as CatalogTool)) break;
      }
      if (more || !take(entry)) break;
    }
    while (!more && t < tombstones.length) take(tombstones[t++] as CatalogTool);
    const last = page.at(-1)?.view.name;
    return listing(page, more && last !== undefined ? encodeCursor({ s: pinned, a: last }) : null, index);
  }

  /**
   * Changes since a time, in the order they were made (by registry index, then name): each
   * tool (or tombstone) once, as it is now, at its latest change. The walk follows writes made
   * during it: a tool changed again after it was served comes again, later, as changed.
   */
  #changes(
    since: string,
    cursor: Cursor | undefined,
    limit: number,
    inView: (scopes: readonly string[], entry?: CatalogTool) => boolean,
    index: number,
  ): Listing {
    if (cursor !== undefined && !('u' in cursor))
      throw badCursor('this cursor continues a walk in name order; leave updated_since out, or start again');
    const page: CatalogTool[] = [];
    let more = false;
    for (const { record, entry } of this.#catalog.changedSince(since, cursor && { index: cursor.u, name: cursor.a })) {
      const listed = entry ?? this.#tombstoneEntry(record);
      if (!inView(listed.tool.scopes, listed)) continue;
      if (page.length === limit) {
        more = true;
        break;
      }
      page.push(listed);
    }
    const last = page.at(-1)?.view;
    return listing(page, more && last !== undefined ? encodeCursor({ u: last.index, a: last.name }) : null, index);
  }

  #tombstoneEntry(record: ToolRecord): CatalogTool {
    const tool = normaliseTool(record.kind, record.descriptor);
    return new CatalogTool(tool, record, publicToolView(tool, record, this.#publicUrl));
  }
}

function listing(tools: readonly CatalogTool[], nextCursor: string | null, index: number): Listing {
  return { tools: tools.map((t) => t.view), parts: tools.map((t) => t.bytes), entries: tools, nextCursor, index };
}

function badCursor(message: string): RegistryError {
  return new RegistryError('TR_ERR_BAD_REQUEST', message, { fieldErrors: [{ path: 'cursor', message }] });
}
