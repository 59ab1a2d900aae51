/**
 * Discovery views: the exact bytes of `GET /` per view key, with a strong ETag, computed once
 * per catalogue version and kept in a byte-bounded cache; and the index at which each view last
 * changed, for blocking queries. A view's bytes are its tools' entries, each serialised once
 * per write of that tool, joined; its ETag is a hash of what determines those bytes.
 */
import { createHash } from 'node:crypto';
import { viewKeyString, type ViewKey } from '../model/visibility.js';
import { LruByteCache } from './lru-byte-cache.js';
import type { CatalogSnapshot, CatalogTool } from './snapshot.js';
import { walkView } from './walk.js';

/**
 * Bumped whenever the serialisation of an entry changes, so that an ETag from an older version
 * never matches bytes built by this one (the ETag hashes what the bytes are made from).
 */
const ENTRY_FORMAT = 2;
const COMMA = Buffer.from(',');

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

export interface CatalogView {
  /** The exact response bytes of `GET /` for this view. */
  body: Buffer;
  /** Strong ETag over the body. */
  etag: string;
  /** Registry index the view was built at. */
  index: number;
  tools: readonly CatalogTool[];
  /** Live tools the caller cannot see. */
  hidden: number;
}

/** Change marks kept for view keys; the oldest go first (a missing key only means an early answer). */
const MAX_CHANGE_MARKS = 100_000;

export class CatalogViews {
  readonly #snapshot: CatalogSnapshot;
  readonly #serviceName: string;
  readonly #cache: LruByteCache<CatalogView>;
  /** The whole catalogue is the hottest view (anonymous rediscovery): one field, no key. */
  #allView: CatalogView | null = null;
  /** Per view key: the ETag last seen and the index at which it last changed (bounded). */
  readonly #changes = new Map<string, { etag: string; changedAt: number }>();

  constructor(snapshot: CatalogSnapshot, options: { serviceName: string; cacheBytes: number }) {
    this.#snapshot = snapshot;
    this.#serviceName = options.serviceName;
    this.#cache = new LruByteCache(options.cacheBytes);
  }

  /** Views are per catalogue version: a write drops them all at once (O(1)). */
  invalidate(): void {
    this.#cache.clear();
    this.#allView = null;
  }

  view(key: ViewKey): CatalogView {
    if (key.kind === 'all' && this.#allView) return this.#allView;
    const normalised = this.#normalise(key);
    const keyString = viewKeyString(normalised);
    // The cache is emptied on every write, so the key needs no index.
    const cached = this.#cache.get(keyString);
    if (cached) return cached;
    const tools = normalised.kind === 'all' ? this.#snapshot.tools() : [...walkView(this.#snapshot, normalised)];
    const { body, etag } = this.#serialise(tools);
    const view: CatalogView = { body, etag, index: this.#snapshot.index, tools, hidden: this.#snapshot.toolCount - tools.length };
    this.#cache.set(keyString, view, body.length + 256);
    if (normalised.kind === 'all') this.#allView = view;
    this.#recordChange(keyString, view);
    return view;
  }

  /**
   * The registry index at which this view last changed. Views are compared by ETag when
   * computed, so a write that leaves a view's bytes alone does not count for it. A key not seen
   * before counts as changed now, which at worst answers a blocking query early, never late.
   * When the set of known scopes changes, a token may move to another key: every scope-keyed
   * view counts as changed then.
   */
  changedAt(key: ViewKey): number {
    const view = this.view(key);
    const recorded = this.#changes.get(viewKeyString(this.#normalise(key)))?.changedAt ?? view.index;
    return key.kind === 'scopes' ? Math.max(recorded, this.#snapshot.scopeSetChangedAt) : recorded;
  }

  /**
   * The article's document: the entries' bytes joined (a copy, no serialisation but of entries
   * written since they were last served). The strong ETag hashes the service name, the format,
   * and each tool's name, index and update time: equal hashes mean equal bytes, and hashing
   * those is far cheaper than hashing the body (tens of MiB at 100,000 tools).
   */
  #serialise(tools: readonly CatalogTool[]): { body: Buffer; etag: string } {
    const identity: string[] = [`${ENTRY_FORMAT}\u0000${this.#serviceName}\u0000${this.#snapshot.publicUrl.href}`];
    for (const t of tools) identity.push(`${t.record.name}\u0000${t.record.index}\u0000${t.record.updatedAt}`);
    const body = discoveryBody(this.#serviceName, tools.map((t) => t.bytes));
    identity.push(String(body.length));
    return { body, etag: `"${createHash('sha256').update(identity.join('\n')).digest('base64url').slice(0, 32)}"` };
  }

  /**
   * Only scopes some tool requires can change a view, so tokens that differ in other scopes
   * share one cached view.
   */
  #normalise(key: ViewKey): ViewKey {
    if (key.kind !== 'scopes') return key;
    const known = this.#snapshot.knownScopes();
    return { kind: 'scopes', scopes: new Set([...key.scopes].filter((s) => known.has(s))) };
  }

  #recordChange(keyString: string, view: CatalogView): void {
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
