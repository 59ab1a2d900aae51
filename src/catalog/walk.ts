/**
 * Walks a view of the catalogue in name order from any name, merging the name indexes the view
 * is made of (the tools needing no scope, and those of each scope entry whose tokens the caller
 * all holds), so that a page costs what the page holds, not what the catalogue holds.
 */
import { entryGranted, namesToken } from '../model/scope-rule.js';
import { visibleScopes, type ViewKey } from '../model/visibility.js';
import type { CatalogTool } from './catalog-tool.js';
import type { LiveIndexes } from './indexes.js';
import type { SortedNames } from './sorted-names.js';

/** What a walk reads: the live indexes, or the catalogue that serves them. */
type Walkable = Pick<LiveIndexes, 'names' | 'scopeIndexes' | 'getTool'>;

/** The name indexes whose union (filtered by the view) holds the view's tools with this scope. */
function sources(live: Walkable, key: ViewKey, scope: string | undefined): SortedNames[] {
  if (scope !== undefined) {
    // Tools an entry of which names the token `scope`; under a token, only those the view grants.
    if (key.kind === 'public') return [];
    return live.scopeIndexes((entry) => namesToken([entry], scope));
  }
  if (key.kind !== 'scopes') return [live.names(key.kind)];
  // One subset check per known entry: its tokens all held.
  return [live.names('public'), ...live.scopeIndexes((entry) => entryGranted(entry, key.scopes))];
}

/**
 * Live tools of the view (and with `scope` among theirs, if given) whose names come after
 * `after`, in name order, each once.
 */
export function* walkView(
  live: Walkable,
  key: ViewKey,
  options: { after?: string | undefined; scope?: string | undefined } = {},
): Generator<CatalogTool> {
  const indexes = sources(live, key, options.scope);
  const positions = indexes.map((names) => names.firstAfter(options.after));
  const check = key.kind === 'scopes' || options.scope !== undefined;
  let last: string | undefined;
  for (;;) {
    // The smallest head among the indexes (few of them: one per entry the caller's scopes grant).
    let smallest: string | undefined;
    let from = -1;
    for (let i = 0; i < indexes.length; i++) {
      const name = (indexes[i] as SortedNames).at(positions[i] as number);
      if (name !== undefined && (smallest === undefined || name < smallest)) {
        smallest = name;
        from = i;
      }
    }
    if (smallest === undefined) return;
    positions[from] = (positions[from] as number) + 1;
    if (smallest === last) continue;
    last = smallest;
    const entry = live.getTool(smallest);
    if (!entry) continue;
    if (check && !(visibleScopes(entry.tool.scopes, key) && (options.scope === undefined || namesToken(entry.tool.scopes, options.scope))))
      continue;
    yield entry;
  }
}
