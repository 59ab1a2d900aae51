/**
 * Names in code-unit order (the order `<` gives, the same everywhere: not locale-dependent),
 * kept sorted write by write, so that a page starts with a binary search instead of a sort of
 * the catalogue. One write moves part of one array (a memmove); a bulk write merges.
 */
import type { Steps } from './steps.js';

export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function strictlyAscending(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i++) if (!((names[i - 1] as string) < (names[i] as string))) return false;
  return true;
}

/** Above this share of the array, a bulk change is merged in one pass instead of spliced. */
const MERGE_SHARE = 1 / 64;

/** Names merged per step of mergedSteps (well under a millisecond). */
const MERGE_STEP = 8192;

export class SortedNames {
  #names: string[];

  constructor(names: Iterable<string> = []) {
    this.#names = [...new Set(names)].sort(compareNames);
  }

  /** Names already strictly ascending (not checked): taken as they are, without a sort. */
  static ofAscending(names: string[]): SortedNames {
    const sorted = new SortedNames();
    sorted.#names = names;
    return sorted;
  }

  get size(): number {
    return this.#names.length;
  }

  at(position: number): string | undefined {
    return this.#names[position];
  }

  /** The position of the first name after `after` (every name when it is undefined). */
  firstAfter(after: string | undefined): number {
    if (after === undefined) return 0;
    let lo = 0;
    let hi = this.#names.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#names[mid] as string) <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  has(name: string): boolean {
    const at = this.firstAfter(name) - 1;
    return at >= 0 && this.#names[at] === name;
  }

  add(name: string): void {
    const at = this.firstAfter(name);
    if (at > 0 && this.#names[at - 1] === name) return;
    this.#names.splice(at, 0, name);
  }

  delete(name: string): void {
    const at = this.firstAfter(name) - 1;
    if (at >= 0 && this.#names[at] === name) this.#names.splice(at, 1);
  }

  /** Adds and removes many names at once: one merge when the change is large. */
  update(added: readonly string[], removed: readonly string[]): void {
    if (added.length + removed.length <= Math.max(8, this.#names.length * MERGE_SHARE)) {
      // A replaced tool leaves and rejoins the same indexes: its name stays where it is, where
      // a delete and an add would each move the rest of the array (twice 100,000 names a write).
      const rejoining = added.length > 0 && removed.length > 0 ? new Set(added) : undefined;
      for (const name of removed) if (!rejoining?.has(name)) this.delete(name);
      for (const name of added) this.add(name);
      return;
    }
    const gone = new Set(removed);
    // Writes come in name order (the catalogue sorts a write's tools once): no sort then.
    const incoming = strictlyAscending(added) ? added : [...new Set(added)].sort(compareNames);
    const merged: string[] = [];
    let i = 0;
    let j = 0;
    const current = this.#names;
    while (i < current.length || j < incoming.length) {
      const a = current[i];
      const b = incoming[j];
      if (b === undefined || (a !== undefined && a < b)) {
        // Only in the array: kept unless removed.
        if (!gone.has(a as string)) merged.push(a as string);
        i++;
      } else {
        // Added (removals come first, so an added name stays), whether or not already there.
        merged.push(b);
        if (a === b) i++;
        j++;
      }
    }
    this.#names = merged;
  }

  values(): readonly string[] {
    return this.#names;
  }

  /**
   * A new index: these names with `added` (strictly ascending) merged in and `removed` taken
   * out (an added name stays), built beside this one a few thousand names per step, so that a
   * big write (an import) never holds the event loop for the whole array.
   */
  *mergedSteps(added: readonly string[], removed: ReadonlySet<string>): Steps<SortedNames> {
    const current = this.#names;
    const merged: string[] = [];
    let i = 0;
    let j = 0;
    let steps = 0;
    while (i < current.length || j < added.length) {
      const a = current[i];
      const b = added[j];
      if (b === undefined || (a !== undefined && a < b)) {
        if (!removed.has(a as string)) merged.push(a as string);
        i++;
      } else {
        merged.push(b);
        if (a === b) i++;
        j++;
      }
      if (++steps === MERGE_STEP) {
        steps = 0;
        yield;
      }
    }
    return SortedNames.ofAscending(merged);
  }
}
