/**
 * Discovery beyond the full list: pages with cursors pinned to the registry index of page one,
 * full-text search, and filters by scope and by time of change (tombstones included). The full
 * list stays the precomputed fast path in Catalog.view; these are built per request.
 */
import { normaliseTool } from '../model/normalise.js';
import { RegistryError } from '../model/errors.js';
import type { ToolRecord } from '../model/records.js';
import { visibleScopes, type ViewKey } from '../model/visibility.js';
import type { Catalog } from './catalog.js';
import { publicToolView, type PublicTool } from '../model/public-view.js';

export interface ListingQuery {
  limit?: number | undefined;
  cursor?: string | undefined;
  q?: string | undefined;
  scope?: string | undefined;
  updatedSince?: string | undefined;
}

export interface Listing {
  tools: PublicTool[];
  nextCursor: string | null;
  index: number;
}

interface Cursor {
  /** The registry index the walk is pinned to. */
  s: number;
  /** The last name served. */
  a: string;
}

const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeCursor(text: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<Cursor>;
    if (Number.isSafeInteger(value.s) && (value.s ?? -1) >= 0 && typeof value.a === 'string') return value as Cursor;
  } catch {
    // fall through
  }
  throw new RegistryError('TR_ERR_BAD_REQUEST', 'the cursor is not one this registry gave out', {
    fieldErrors: [{ path: 'cursor', message: 'not a cursor from a previous page' }],
  });
}

/** User words -> an FTS5 query: every word must match, as a prefix, quoted so syntax cannot break it. */
function ftsQuery(q: string): string | null {
  // Control characters (a NUL ends an FTS5 string early) are separators, never query text.
  const words = q
    // eslint-disable-next-line no-control-regex -- matching control characters is the point
    .replace(/[\u0000-\u001f\u007f]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '')
    .slice(0, 16);
  if (words.length === 0) return null;
  return words.map((w) => `"${w.replaceAll('"', '""')}"*`).join(' ');
}

interface Candidate {
  name: string;
  scopes: readonly string[];
  updatedAt: string;
  view: () => PublicTool;
}

export class CatalogListing {
  readonly #catalog: Catalog;
  readonly #search: (match: string, limit: number) => string[];
  readonly #publicUrl: URL;

  constructor(catalog: Catalog, search: (match: string, limit: number) => string[], publicUrl: URL) {
    this.#catalog = catalog;
    this.#search = search;
    this.#publicUrl = publicUrl;
  }

  list(key: ViewKey, query: ListingQuery): Listing {
    const limit = Math.min(query.limit ?? DEFAULT_PAGE, MAX_PAGE);
    const index = this.#catalog.index;
    const keep = (c: Candidate) =>
      visibleScopes(c.scopes, key) &&
      (query.scope === undefined || c.scopes.includes(query.scope)) &&
      (query.updatedSince === undefined || c.updatedAt >= query.updatedSince);

    if (query.q !== undefined) {
      // Ranked by relevance, then filtered by the view: no cursor, the first `limit` results.
      const match = ftsQuery(query.q);
      const names = match === null ? [] : this.#search(match, MAX_PAGE * 4);
      const tools: PublicTool[] = [];
      for (const name of names) {
        const entry = this.#catalog.getTool(name);
        if (!entry) continue;
        const candidate = { name, scopes: entry.tool.scopes, updatedAt: entry.record.updatedAt, view: () => entry.view };
        if (keep(candidate)) tools.push(entry.view);
        if (tools.length >= limit) break;
      }
      return { tools, nextCursor: null, index };
    }

    const cursor = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined;
    const pinned = cursor?.s ?? index;
    if (pinned > index) throw new RegistryError('TR_ERR_BAD_REQUEST', 'the cursor is from a registry index ahead of this one; start the walk again');
    const after = cursor?.a;
    const candidates: Candidate[] = [];
    // Tools that existed at the pinned index: live ones created by then, and ones deleted since
    // (served as tombstones), so a walk during writes neither skips nor repeats.
    for (const entry of this.#catalog.tools()) {
      if (!this.#catalog.existedAt(entry, pinned) || (after !== undefined && entry.tool.name <= after)) continue;
      candidates.push({ name: entry.tool.name, scopes: entry.tool.scopes, updatedAt: entry.record.updatedAt, view: () => entry.view });
    }
    for (const record of this.#catalog.tombstones()) {
      const existedAtPin = record.createIndex <= pinned && record.index > pinned;
      const changedSince = query.updatedSince !== undefined && record.updatedAt >= query.updatedSince;
      if (!(existedAtPin || changedSince) || (after !== undefined && record.name <= after)) continue;
      candidates.push(this.#tombstoneCandidate(record));
    }
    candidates.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const page: PublicTool[] = [];
    let last: string | undefined;
    let more = false;
    for (const c of candidates) {
      if (!keep(c)) continue;
      if (page.length === limit) {
        more = true;
        break;
      }
      page.push(c.view());
      last = c.name;
    }
    return { tools: page, nextCursor: more && last !== undefined ? encodeCursor({ s: pinned, a: last }) : null, index };
  }

  #tombstoneCandidate(record: ToolRecord): Candidate {
    const tool = normaliseTool(record.kind, record.descriptor);
    return { name: record.name, scopes: tool.scopes, updatedAt: record.updatedAt, view: () => publicToolView(tool, record, this.#publicUrl) };
  }
}
