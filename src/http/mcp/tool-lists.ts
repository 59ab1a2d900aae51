/**
 * `tools/list` results per view and page (issue 31): which tools a page holds, as the SDK's
 * handler returns them (objects, for batches), and as the bytes of the JSON-RPC `result`,
 * built once per catalogue version and view (or page) and kept in a byte-bounded cache that a
 * write empties, as the discovery views are. The SDK serialised the 353 KiB result of 1,000
 * tools on every request (`JSON.stringify` alone 2.7 ms): 166 requests/s against 1,497 for
 * `GET /` of the same view.
 */
import type { LRUCache } from 'lru-cache';
import type { Catalog, CatalogTool } from '../../catalog/catalog.js';
import type { CatalogListing } from '../../catalog/listing.js';
import { lruByteCache } from '../../catalog/lru-byte-cache.js';
import { mcpToolOf, type McpToolEntry } from '../../model/mcp-tool.js';
import { viewKeyString, type ViewKey } from '../../model/visibility.js';

/** MCP entries are built once per write of a tool, when first listed. */
const entries = new WeakMap<CatalogTool, McpToolEntry>();
/** And serialised once per write of a tool. */
const entryTexts = new WeakMap<CatalogTool, string>();

function entryOf(tool: CatalogTool): McpToolEntry {
  let entry = entries.get(tool);
  if (!entry) entries.set(tool, (entry = mcpToolOf(tool.tool, tool.record.deprecation)));
  return entry;
}

function entryText(tool: CatalogTool): string {
  let text = entryTexts.get(tool);
  if (text === undefined) entryTexts.set(tool, (text = JSON.stringify(entryOf(tool))));
  return text;
}

/** A `tools/list` result as the SDK's handler returns it. */
export interface McpToolPage {
  tools: McpToolEntry[];
  nextCursor?: string;
}

/**
 * What a revision adds to the result beyond `tools` and `nextCursor`, as JSON text starting
 * with a comma ('' for none), keyed by a name of its own so that revisions that add the same
 * share their bytes.
 */
export interface ResultExtras {
  key: string;
  text: string;
}

const NO_EXTRAS: ResultExtras = { key: '', text: '' };

export interface McpToolListsDeps {
  catalog: Catalog;
  listing: CatalogListing;
  pageSize: number;
  /** The most bytes of results kept between writes (0: none, each built per request). */
  cacheBytes: number;
}

interface Selected {
  tools: readonly CatalogTool[];
  nextCursor: string | null;
  /** What identifies this selection within one catalogue version. */
  cacheKey: string;
}

export class McpToolLists {
  readonly #deps: McpToolListsDeps;
  #cache: LRUCache<string, Buffer> | undefined;
  #version = -1;

  constructor(deps: McpToolListsDeps) {
    this.#deps = deps;
  }

  /** The page as the SDK's handler answers it; throws the listing's RegistryError for a bad cursor. */
  page(key: ViewKey, cursor: string | undefined): McpToolPage {
    const { tools, nextCursor } = this.#select(key, cursor);
    const listed = tools.map(entryOf);
    // No `nextCursor: null` on the last page: the SDK's schema refuses it.
    return nextCursor === null ? { tools: listed } : { tools: listed, nextCursor };
  }

  /**
   * The page's JSON-RPC `result` as bytes: `{"tools":[...]}`, `nextCursor` when there is more,
   * then the revision's extras. Throws the listing's RegistryError for a bad cursor.
   */
  resultBytes(key: ViewKey, cursor: string | undefined, extras: ResultExtras = NO_EXTRAS): Buffer {
    const version = this.#deps.catalog.version;
    if (version !== this.#version) {
      // A new cache (O(1)) rather than clear(), which walks every entry.
      this.#cache = lruByteCache(this.#deps.cacheBytes, (bytes, k) => bytes.length + k.length + 64);
      this.#version = version;
    }
    // The key is known before the page is walked, so that a cached page costs no walk: a walk of
    // 1,000 of 10,000 tools took 2.6 ms of CPU per request, against 0.23 ms for a view of 1,000
    // (npm run bench -- --only=mcp). A cursor refused once is never cached, and one accepted stays
    // valid until the next write, which starts a new cache.
    const whole = this.#wholeView(key, cursor);
    const cacheKey = `${extras.key}\u0000${whole?.cacheKey ?? pageCacheKey(key, cursor)}`;
    const cached = this.#cache?.get(cacheKey);
    if (cached) return cached;
    const selected = whole ?? this.#page(key, cursor);
    const tools = selected.tools.map(entryText).join(',');
    const next = selected.nextCursor === null ? '' : `,"nextCursor":${JSON.stringify(selected.nextCursor)}`;
    const bytes = Buffer.from(`{"tools":[${tools}]${next}${extras.text}}`);
    this.#cache?.set(cacheKey, bytes);
    return bytes;
  }

  #select(key: ViewKey, cursor: string | undefined): Selected {
    return this.#wholeView(key, cursor) ?? this.#page(key, cursor);
  }

  /**
   * A view that fits in one page is the catalogue's cached view (built once per write, shared
   * with GET /): no walk. Its ETag names its tools exactly, so tokens of one view share bytes.
   */
  #wholeView(key: ViewKey, cursor: string | undefined): Selected | undefined {
    if (cursor !== undefined) return undefined;
    const view = this.#deps.catalog.plan(key);
    return view.tools.length <= this.#deps.pageSize
      ? { tools: view.tools, nextCursor: null, cacheKey: `view\u0000${view.etag}` }
      : undefined;
  }

  #page(key: ViewKey, cursor: string | undefined): Selected {
    const page = this.#deps.listing.list(key, { limit: this.#deps.pageSize, cursor });
    // A pinned walk also returns tools deleted during it (as tombstones): MCP lists live tools.
    return {
      tools: page.entries.filter((e) => e.record.status !== 'deleted'),
      nextCursor: page.nextCursor,
      cacheKey: pageCacheKey(key, cursor),
    };
  }
}

function pageCacheKey(key: ViewKey, cursor: string | undefined): string {
  return `page\u0000${viewKeyString(key)}\u0000${cursor ?? ''}`;
}
