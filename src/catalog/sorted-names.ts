/**
 * Names in code-unit order (the order `<` gives, the same everywhere: not locale-dependent),
 * kept sorted write by write, so that a page starts with a binary search instead of a sort of
 * the catalogue. The names sit in blocks of at most a few hundred, so that one write moves part
 * of one block, not of the whole index: a single array of 100,000 names made every new tool a
 * 400 KB memmove per index it joined (the whole catalogue's, and its scopes'). A bulk write
 * merges.
 */
import { finish, type Steps } from './steps.js';

export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function strictlyAscending(names: readonly string[]): boolean {
  for (let i = 1; i < names.length; i++) if (!((names[i - 1] as string) < (names[i] as string))) return false;
  return true;
}

/** `names` in order, each once: as they are when they already are (a load's rows, a write's tools), else deduplicated and sorted. */
function inOrder(names: readonly string[]): readonly string[] {
  return strictlyAscending(names) ? names : [...new Set(names)].sort(compareNames);
}

/** Above this share of the index, a bulk change is merged in one pass instead of inserted name by name. */
const MERGE_SHARE = 1 / 64;

/** Names merged per step of mergedSteps (well under a millisecond). */
const MERGE_STEP = 8192;

/** Names per block when blocks are cut from a sorted array; a block that grows to twice this splits. */
const DEFAULT_BLOCK = 256;

/** Blocks of `size` names (the last may be shorter), copied out of `names`. */
function blocksOf(names: readonly string[], size: number): string[][] {
  const blocks: string[][] = [];
  for (let i = 0; i < names.length; i += size) blocks.push(names.slice(i, i + size));
  return blocks;
}

/** The first position in sorted `names` whose name comes after `after`. */
function upperBound(names: readonly string[], after: string): number {
  let lo = 0;
  let hi = names.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((names[mid] as string) <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SortedNames {
  #blocks: string[][] = [];
  #size = 0;
  readonly #blockSize: number;
  /** Where each block starts in the whole order; rebuilt after a change, on the next read by position. */
  #starts: number[] = [];
  #startsValid = true;
  /** The block the last `at` read from: a walk reads positions in order. */
  #hint = 0;

  /**
   * Names in any order (ones already strictly ascending are not sorted again). `blockSize` is
   * for tests, to make blocks split and merge with a handful of names.
   */
  constructor(names: Iterable<string> = [], options: { blockSize?: number } = {}) {
    this.#blockSize = options.blockSize ?? DEFAULT_BLOCK;
    this.#reset(inOrder(Array.isArray(names) ? (names as readonly string[]) : [...names]));
  }

  /** Names already strictly ascending (not checked): taken without a sort. */
  static ofAscending(names: readonly string[], options: { blockSize?: number } = {}): SortedNames {
    const sorted = new SortedNames([], options);
    sorted.#reset(names);
    return sorted;
  }

  #reset(ascending: readonly string[]): void {
    this.#blocks = blocksOf(ascending, this.#blockSize);
    this.#size = ascending.length;
    this.#startsValid = false;
  }

  get size(): number {
    return this.#size;
  }

  #ensureStarts(): number[] {
    if (!this.#startsValid) {
      const starts = new Array<number>(this.#blocks.length);
      let at = 0;
      for (let b = 0; b < this.#blocks.length; b++) {
        starts[b] = at;
        at += (this.#blocks[b] as string[]).length;
      }
      this.#starts = starts;
      this.#startsValid = true;
      this.#hint = 0;
    }
    return this.#starts;
  }

  at(position: number): string | undefined {
    if (position < 0 || position >= this.#size) return undefined;
    const starts = this.#ensureStarts();
    let b = this.#hint;
    let start = starts[b] as number;
    if (position < start || position - start >= (this.#blocks[b] as string[]).length) {
      // The next block (a walk moving on), else a binary search for the last start <= position.
      const next = starts[b + 1];
      if (next !== undefined && position >= next && position - next < (this.#blocks[b + 1] as string[]).length) b++;
      else {
        let lo = 0;
        let hi = starts.length - 1;
        while (lo < hi) {
          const mid = (lo + hi + 1) >>> 1;
          if ((starts[mid] as number) <= position) lo = mid;
          else hi = mid - 1;
        }
        b = lo;
      }
      this.#hint = b;
      start = starts[b] as number;
    }
    return (this.#blocks[b] as string[])[position - start];
  }

  /** The block a name belongs in: the first whose last name is not before it (else the last block). */
  #blockFor(name: string): number {
    const blocks = this.#blocks;
    let lo = 0;
    let hi = blocks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const block = blocks[mid] as string[];
      if ((block[block.length - 1] as string) < name) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The position of the first name after `after` (every name when it is undefined). */
  firstAfter(after: string | undefined): number {
    if (after === undefined || this.#size === 0) return 0;
    const b = this.#blockFor(after);
    return (this.#ensureStarts()[b] as number) + upperBound(this.#blocks[b] as string[], after);
  }

  has(name: string): boolean {
    if (this.#size === 0) return false;
    const block = this.#blocks[this.#blockFor(name)] as string[];
    return block[upperBound(block, name) - 1] === name;
  }

  add(name: string): void {
    if (this.#size === 0) {
      this.#blocks = [[name]];
    } else {
      const b = this.#blockFor(name);
      const block = this.#blocks[b] as string[];
      const at = upperBound(block, name);
      if (block[at - 1] === name) return;
      block.splice(at, 0, name);
      if (block.length >= 2 * this.#blockSize) this.#blocks.splice(b + 1, 0, block.splice(this.#blockSize));
    }
    this.#size++;
    this.#startsValid = false;
  }

  delete(name: string): void {
    if (this.#size === 0) return;
    const b = this.#blockFor(name);
    const block = this.#blocks[b] as string[];
    const at = upperBound(block, name) - 1;
    if (block[at] !== name) return;
    block.splice(at, 1);
    this.#size--;
    this.#startsValid = false;
    if (block.length === 0) {
      this.#blocks.splice(b, 1);
      return;
    }
    // A block whittled down joins its next neighbour when both fit in one.
    const next = this.#blocks[b + 1];
    if (block.length < this.#blockSize / 4 && next && block.length + next.length <= this.#blockSize) {
      block.push(...next);
      this.#blocks.splice(b + 1, 1);
    }
  }

  /** Adds and removes many names at once: one merge when the change is large. */
  update(added: readonly string[], removed: readonly string[]): void {
    if (added.length + removed.length <= Math.max(8, this.#size * MERGE_SHARE)) {
      // A replaced tool leaves and rejoins the same indexes: its name stays where it is.
      const rejoining = added.length > 0 && removed.length > 0 ? new Set(added) : undefined;
      for (const name of removed) if (!rejoining?.has(name)) this.delete(name);
      for (const name of added) this.add(name);
      return;
    }
    // Writes come in name order (the catalogue sorts a write's tools once): no sort then.
    const incoming = inOrder(added);
    this.#reset(finish(this.#merge(incoming, new Set(removed), Infinity)));
  }

  /** Every name, in order. */
  *values(): IterableIterator<string> {
    for (const block of this.#blocks) yield* block;
  }

  /**
   * A new index: these names with `added` (strictly ascending) merged in and `removed` taken
   * out (an added name stays), built beside this one a few thousand names per step, so that a
   * big write (an import) never holds the event loop for the whole array.
   */
  *mergedSteps(added: readonly string[], removed: ReadonlySet<string>): Steps<SortedNames> {
    const merged = yield* this.#merge(added, removed, MERGE_STEP);
    return SortedNames.ofAscending(merged, { blockSize: this.#blockSize });
  }

  /** These names with `added` merged in and `removed` taken out, pausing every `step` names. */
  *#merge(added: readonly string[], removed: ReadonlySet<string>, step: number): Steps<string[]> {
    const merged: string[] = [];
    const blocks = this.#blocks;
    let block = 0;
    let i = 0;
    let j = 0;
    let steps = 0;
    for (;;) {
      const current = blocks[block];
      const a = current?.[i];
      const b = added[j];
      if (a === undefined && b === undefined) return merged;
      if (b === undefined || (a !== undefined && a < b)) {
        // Only in the index: kept unless removed.
        if (!removed.has(a as string)) merged.push(a as string);
      } else {
        // Added (removals come first, so an added name stays), whether or not already there.
        merged.push(b);
        j++;
      }
      if (a !== undefined && (b === undefined || a <= b) && ++i === (current as string[]).length) {
        block++;
        i = 0;
      }
      if (++steps === step) {
        steps = 0;
        yield;
      }
    }
  }
}
