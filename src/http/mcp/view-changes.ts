/**
 * Whether a committed write changes a view's tool list, asked by every MCP front that tells
 * clients `notifications/tools/list_changed` (sessions' streams, 2026-07-28 listeners): each
 * distinct view is checked once per write, stopping at the first change it sees.
 */
import type { Change } from '../../model/records.js';
import { changeInView, viewKeyString, type ViewKey } from '../../model/visibility.js';

/** For one write: a test of a view, memoised by view. Tool services are not tools: they change no MCP list. */
export function toolListChangedBy(index: number, changes: readonly Change[]): (view: ViewKey) => boolean {
  const seen = new Map<string, boolean>();
  return (view) => {
    const key = viewKeyString(view);
    let affected = seen.get(key);
    if (affected === undefined) {
      affected = changes.some((change) => change.kind === 'tool' && changeInView(change, index, view, false) !== null);
      seen.set(key, affected);
    }
    return affected;
  };
}
