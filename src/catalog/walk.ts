/**
 * Walks a view of the catalogue in name order from any name, merging the name indexes the view
 * is made of (the tools needing no scope, and those needing each scope the caller holds), so
 * that a page costs what the page holds, not what the catalogue holds.
 */
import { visibleScopes, type ViewKey } from '../model/visibility.js';
import type { CatalogTool } from './catalog-tool.js';
import type { LiveIndexes } from './indexes.js';
import type { SortedNames } from './sorted-names.js';

/** What a walk reads: the live indexes, or the catalogue that serves them. */
type Walkable = Pick<LiveIndexes, 'names' | 'namesWithScope' | 'getTool'>;

/** The name indexes whose union (filtered by the view) holds the view's tools with this scope. */
function sources(live: Walkable, key: ViewKey, scope: string | undefined): SortedNames[] {
  if (scope !== undefined) {
    // Tools listing `scope`; under a token that lacks it, only those another scope of it grants.
    if (key.kind === 'public') return [];
    const names = live.namesWithScope(scope);
    return names ? [names] : [];
  }
  if (key.kind !== 'scopes') return [live.names(key.kind)];
  const indexes = [live.names('public')];
  for (const held of key.scopes) {
    const names = live.namesWithScope(held);
    if (names) indexes.push(names);
  }
  return indexes;
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
    // The smallest head among the indexes (few of them: one per scope the caller holds).
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
    if (check && !(visibleScopes(entry.tool.scopes, key) && (options.scope === undefined || entry.tool.scopes.includes(options.scope))))
      continue;
    yield entry;
  }
}
