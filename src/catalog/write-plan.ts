/**
 * What one committed write changes, resolved once against the catalogue as it stands: each tool
 * in name order with the entry it replaces and the entry (or tombstone) it leaves, and the
 * changes the write reports. The snapshot (snapshot.ts) applies a plan in place (a small write)
 * or builds new indexes from it beside the live ones and swaps them in (a big one, an import):
 * either way, what a write does is decided here alone.
 */
import type { Change, McpServerRecord, ServiceRecord, ToolRecord } from '../model/records.js';
import type { CatalogTool } from './catalog-tool.js';
import { compareNames, strictlyAscending } from './sorted-names.js';
import type { Steps } from './steps.js';

/** What one committed write stored, as records. */
export interface CatalogWrite {
  services?: readonly ServiceRecord[];
  mcpServers?: readonly McpServerRecord[];
  tools?: readonly ToolRecord[];
}

/** One tool of a write, resolved against the catalogue as it stood just before it. */
export interface ToolStep {
  readonly record: ToolRecord;
  /** The live entry it replaces. */
  readonly previous: CatalogTool | undefined;
  /** Its live entry after the write; undefined for a deletion. */
  readonly entry: CatalogTool | undefined;
  /** The name's tombstone before it: replaced by a deletion, or ended by registering the name again. */
  readonly tombstone: ToolRecord | undefined;
}

export interface WritePlan {
  readonly index: number;
  readonly change: CatalogWrite;
  /** Entries built ahead of the write (CatalogSnapshot.prepare), for planning it afresh. */
  readonly entries: ReadonlyMap<string, CatalogTool> | undefined;
  /** The catalogue's version it was planned on: applied onto any other, it is planned afresh. */
  readonly base: number;
  /** The write's tools in name order. */
  readonly steps: readonly ToolStep[];
  readonly changes: Change[];
}

/** What planning reads of the catalogue. */
export interface PlanSource {
  getTool(name: string): CatalogTool | undefined;
  getTombstone(name: string): ToolRecord | undefined;
  hasService(id: string): boolean;
  /** A stored record's live entry, built anew. */
  entryOf(record: ToolRecord): CatalogTool;
}

/** Tools handled per step of a plan (well under a millisecond). */
export const PLAN_STEP = 1024;

/**
 * Plans a write, in steps, on the catalogue's version `base`. `entries` are entries built ahead (any whose record differs is built
 * again). A `bulk` write (an import, built beside the live indexes) stores tools and deletes
 * none, given in strictly ascending name order; any other is sorted here, and a name written
 * twice in it is resolved against its own earlier step.
 */
export function* planWrite(
  source: PlanSource,
  index: number,
  change: CatalogWrite,
  options: { base: number; entries?: ReadonlyMap<string, CatalogTool> | undefined; bulk?: boolean },
): Steps<WritePlan> {
  const { base, entries, bulk = false } = options;
  const changes: Change[] = [];
  // A service written twice in one write: the second sees what the first leaves.
  const present = new Map<string, boolean>();
  for (const s of change.services ?? []) {
    const before = present.get(s.id) ?? source.hasService(s.id);
    present.set(s.id, s.status !== 'deleted');
    changes.push({
      kind: 'tool-service',
      name: s.id,
      op: s.status === 'deleted' ? 'delete' : 'upsert',
      scopesBefore: before ? [] : null,
      scopesAfter: s.status === 'deleted' ? null : [],
    });
  }

  const tools = change.tools ?? [];
  // Name order: what the name indexes merge in (once per write), and the order of the changes.
  const ordered =
    !bulk && tools.length > 1 && !strictlyAscending(tools.map((t) => t.name))
      ? [...tools].sort((a, b) => compareNames(a.name, b.name))
      : tools;
  const steps: ToolStep[] = [];
  let last: ToolStep | undefined;
  for (const record of ordered) {
    if (bulk) {
      if (record.status === 'deleted') throw new Error('a prepared write stores tools; it deletes none');
      if (last !== undefined && !(last.record.name < record.name))
        throw new Error('a prepared write takes its tools in strictly ascending name order');
    }
    // The sort is stable, so a name's steps sit together, in the order they were written.
    const again = last !== undefined && last.record.name === record.name ? last : undefined;
    const previous = again ? again.entry : source.getTool(record.name);
    const tombstone = again ? (again.entry === undefined ? again.record : undefined) : source.getTombstone(record.name);
    let entry: CatalogTool | undefined;
    if (record.status !== 'deleted') {
      const ready = entries?.get(record.name);
      entry = ready && ready.record === record ? ready : source.entryOf(record);
    }
    last = { record, previous, entry, tombstone };
    steps.push(last);
    changes.push({
      kind: 'tool',
      name: record.name,
      op: entry === undefined ? 'delete' : 'upsert',
      scopesBefore: previous?.tool.scopes ?? null,
      scopesAfter: entry?.tool.scopes ?? null,
    });
    if (steps.length % PLAN_STEP === 0) yield;
  }
  return { index, change, entries, base, steps, changes };
}
