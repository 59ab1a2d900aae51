/**
 * What pinned walks and `updated_since` need of the past: tombstones (deleted tools) in order of
 * deletion, change marks in order of registry index, and the lives of names that were deleted
 * and registered again. Live tools are read from the live indexes (indexes.ts).
 */
import type { ToolRecord } from '../model/records.js';
import type { CatalogTool } from './catalog-tool.js';
import type { LiveIndexes } from './indexes.js';
import { compareNames } from './sorted-names.js';
import type { Steps } from './steps.js';
import { PLAN_STEP, type ToolStep } from './write-plan.js';

/** A tool's change, in the order of changes (for `updated_since`). */
interface ChangeMark {
  name: string;
  index: number;
  updatedAt: string;
  /** The latest `updatedAt` of this mark and every mark before it: what a binary search needs. */
  latestUpdatedAt: string;
}

/** A tombstone's deletion, in the order of deletions (for pinned walks). */
interface DeletionMark {
  name: string;
  index: number;
}

/** A tool change as the store's change log has it (lives of names deleted and registered again). */
export interface ToolLifeEvent {
  name: string;
  index: number;
  op: 'upsert' | 'delete';
}

/** A span of registry indexes during which a name was live: [from, until). */
type Life = [from: number, until: number];

/** The history after a big write, prepared beside the live one (History.prepare). */
export interface PreparedHistory {
  /** Compacted: one per tool and tombstone at its latest change, in order. */
  readonly marks: ChangeMark[];
  /** Its steps that register a tombstoned name again. */
  readonly revived: readonly ToolStep[];
}

export class History {
  readonly #live: LiveIndexes;
  readonly #tombstones = new Map<string, ToolRecord>();
  #deletions: DeletionMark[] = [];
  #changeMarks: ChangeMark[] = [];
  /** Marks superseded by a later change of the same name (compacted when they dominate). */
  #staleMarks = 0;
  /** The lives of names that were deleted and registered again, oldest first. */
  readonly #lives = new Map<string, Life[]>();

  constructor(live: LiveIndexes) {
    this.#live = live;
  }

  getTombstone(name: string): ToolRecord | undefined {
    return this.#tombstones.get(name);
  }

  /**
   * Whether a tool by this name was live at `index`: in its current life, or in one before
   * (a name deleted and registered again, any number of times). Bound once: the catalogue
   * hands it out as its own, and a pinned walk asks it of every entry.
   */
  readonly existedAt = (name: string, index: number): boolean => {
    const lives = this.#lives.get(name);
    if (lives) return lives.some(([from, until]) => from <= index && index < until);
    const live = this.#live.getTool(name);
    if (live) return live.record.createdIndex <= index;
    const tombstone = this.#tombstones.get(name);
    return tombstone !== undefined && tombstone.createdIndex <= index && index < tombstone.index;
  };

  /** Tombstones whose deletion came after `index`, oldest deletion first. */
  *deletedAfter(index: number): Generator<ToolRecord> {
    let lo = 0;
    let hi = this.#deletions.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#deletions[mid] as DeletionMark).index <= index) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.#deletions.length; i++) {
      const mark = this.#deletions[i] as DeletionMark;
      const tombstone = this.#tombstones.get(mark.name);
      // A name deleted more than once has one mark per deletion: only the current one counts.
      if (tombstone && tombstone.index === mark.index) yield tombstone;
    }
  }

  /**
   * Tools (live, or tombstones) in the order of their latest change, from the first whose
   * change is at or after `since` (an ISO time) or after the `after` position. Each name comes
   * once, at its latest change.
   */
  *changedSince(
    since: string | undefined,
    after: { index: number; name: string } | undefined,
  ): Generator<{ record: ToolRecord; entry: CatalogTool | undefined }> {
    const marks = this.#changeMarks;
    let lo = 0;
    let hi = marks.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const mark = marks[mid] as ChangeMark;
      const before =
        after !== undefined
          ? mark.index < after.index || (mark.index === after.index && mark.name <= after.name)
          : mark.latestUpdatedAt < (since ?? '');
      if (before) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < marks.length; i++) {
      const mark = marks[i] as ChangeMark;
      if (since !== undefined && mark.updatedAt < since) continue;
      const entry = this.#live.getTool(mark.name);
      const record = entry?.record ?? this.#tombstones.get(mark.name);
      if (record && record.index === mark.index) yield { record, entry };
    }
  }

  /** Replaces the history with these tombstones and log (after the live indexes are loaded). */
  load(tombstones: readonly ToolRecord[], toolHistory: readonly ToolLifeEvent[]): void {
    this.#tombstones.clear();
    for (const t of tombstones) this.#tombstones.set(t.name, t);
    this.#deletions = [...this.#tombstones.values()].map((t) => ({ name: t.name, index: t.index })).sort((a, b) => a.index - b.index);
    this.#rebuildChangeMarks();
    this.#lives.clear();
    this.#loadLives(toolHistory);
  }

  /**
   * Records a write's steps, after the live indexes took them: in place, or with what prepare()
   * built (then `steps` need only be the revived ones: the marks are replaced).
   */
  commit(steps: readonly ToolStep[], prepared?: PreparedHistory): void {
    for (const { record, previous, entry, tombstone } of steps) {
      if (entry === undefined) {
        if (previous) this.#endLife(record.name, previous.record.createdIndex, record.index);
        this.#tombstones.set(record.name, record);
        this.#deletions.push({ name: record.name, index: record.index });
      } else if (tombstone) {
        this.#startLife(record.name, tombstone, record.createdIndex);
        this.#tombstones.delete(record.name);
      }
      if (!prepared) this.#mark(record, previous !== undefined || tombstone !== undefined);
    }
    if (prepared) {
      this.#changeMarks = prepared.marks;
      this.#staleMarks = 0;
    } else if (this.#staleMarks > 1024 && this.#staleMarks > this.#changeMarks.length / 2) this.#rebuildChangeMarks();
  }

  /**
   * The change marks after a big write (a bulk plan), compacted, built in steps beside these;
   * `tools` are the live tools after it.
   */
  *prepare(steps: readonly ToolStep[], tools: ReadonlyMap<string, CatalogTool>): Steps<PreparedHistory> {
    let step = 0;
    const due = () => ++step % PLAN_STEP === 0;
    const marks: ChangeMark[] = [];
    let latest = '';
    const keep = (name: string, index: number, updatedAt: string) => {
      if (updatedAt > latest) latest = updatedAt;
      marks.push({ name, index, updatedAt, latestUpdatedAt: latest });
    };
    for (const mark of this.#changeMarks) {
      const record = tools.get(mark.name)?.record ?? this.#tombstones.get(mark.name);
      if (record?.index === mark.index) keep(mark.name, mark.index, mark.updatedAt);
      if (due()) yield;
    }
    const revived: ToolStep[] = [];
    for (const s of steps) {
      keep(s.record.name, s.record.index, s.record.updatedAt);
      if (s.tombstone) revived.push(s);
      if (due()) yield;
    }
    return { marks, revived };
  }

  /** Appends a change's mark; a name's mark before it (if it had a record) is stale from now on. */
  #mark(record: ToolRecord, known: boolean): void {
    const last = this.#changeMarks.at(-1);
    if (known) this.#staleMarks++;
    const latest = last !== undefined && last.latestUpdatedAt > record.updatedAt ? last.latestUpdatedAt : record.updatedAt;
    this.#changeMarks.push({ name: record.name, index: record.index, updatedAt: record.updatedAt, latestUpdatedAt: latest });
  }

  /** One mark per tool and tombstone at its latest change, in order of (index, name). */
  #rebuildChangeMarks(): void {
    const records = [...[...this.#live.entries()].map((e) => e.record), ...this.#tombstones.values()];
    records.sort((a, b) => a.index - b.index || compareNames(a.name, b.name));
    let latest = '';
    this.#changeMarks = records.map((r) => {
      if (r.updatedAt > latest) latest = r.updatedAt;
      return { name: r.name, index: r.index, updatedAt: r.updatedAt, latestUpdatedAt: latest };
    });
    this.#staleMarks = 0;
  }

  #loadLives(history: readonly ToolLifeEvent[]): void {
    const byName = new Map<string, ToolLifeEvent[]>();
    for (const event of history) {
      const events = byName.get(event.name);
      if (events) events.push(event);
      else byName.set(event.name, [event]);
    }
    for (const [name, events] of byName) {
      const lives: Life[] = [];
      let from: number | null = null;
      for (const event of events) {
        if (event.op === 'upsert' && from === null) from = event.index;
        else if (event.op === 'delete') {
          // A deletion with no creation in the log (older than the log): live since the start.
          lives.push([from ?? 0, event.index]);
          from = null;
        }
      }
      if (from !== null) lives.push([from, Infinity]);
      if (lives.length > 1) this.#lives.set(name, lives);
    }
  }

  /** A name deleted: its current life ends (recorded only for names with more than one life). */
  #endLife(name: string, createdIndex: number, deletedAt: number): void {
    const lives = this.#lives.get(name);
    const current = lives?.at(-1);
    if (current && current[0] === createdIndex) current[1] = deletedAt;
  }

  /** A deleted name registered again: the life before is kept, so pinned walks still see it. */
  #startLife(name: string, tombstone: ToolRecord, createdIndex: number): void {
    const lives = this.#lives.get(name) ?? [[tombstone.createdIndex, tombstone.index]];
    lives.push([createdIndex, Infinity]);
    this.#lives.set(name, lives);
  }
}
