/**
 * Long work done a few milliseconds at a time: `turn()` gives the event loop back once the
 * current slice has run for `sliceMs`, so that requests keep being answered meanwhile. Work
 * written as steps (src/catalog/steps.ts: a generator that yields wherever it may stop) runs
 * with `run()`.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Steps } from '../catalog/steps.js';

export class TimeSlices {
  readonly #sliceMs: number;
  #started = performance.now();
  /** How many times the event loop was given back (for tests). */
  #yields = 0;

  constructor(sliceMs = 8) {
    this.#sliceMs = sliceMs;
  }

  get yields(): number {
    return this.#yields;
  }

  /** Resolves at once while the slice has time left; after the next turn of the loop otherwise. */
  async turn(): Promise<void> {
    if (performance.now() - this.#started < this.#sliceMs) return;
    this.#yields++;
    await nextTurn();
    this.#started = performance.now();
  }

  /** Runs `steps` to its end, giving the loop back at its yields whenever the slice is used up. */
  async run<T>(steps: Steps<T>): Promise<T> {
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      await this.turn();
    }
  }
}

/** Items per merge step of sortInSlices (a few hundred microseconds of work). */
const SORT_RUN = 1024;

/**
 * A stable sort of a copy of `items` that yields every few thousand comparisons: runs of 1,024
 * sorted natively, then merged pairwise. A native sort of 100,000 tools by name held the event
 * loop for 0.27 s in the import's profile.
 */
export function* sortInSlices<T>(items: readonly T[], compare: (a: T, b: T) => number): Steps<T[]> {
  let from = items.slice();
  for (let start = 0; start < from.length; start += SORT_RUN) {
    const run = from.slice(start, start + SORT_RUN).sort(compare);
    for (let k = 0; k < run.length; k++) from[start + k] = run[k] as T;
    yield;
  }
  let to: T[] = new Array<T>(from.length);
  for (let width = SORT_RUN; width < from.length; width *= 2) {
    let steps = 0;
    for (let lo = 0; lo < from.length; lo += 2 * width) {
      const mid = Math.min(lo + width, from.length);
      const hi = Math.min(lo + 2 * width, from.length);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid || j < hi) {
        // Ties take the left run first: stable.
        if (j >= hi || (i < mid && compare(from[i] as T, from[j] as T) <= 0)) to[k++] = from[i++] as T;
        else to[k++] = from[j++] as T;
        if (++steps === SORT_RUN * 4) {
          steps = 0;
          yield;
        }
      }
    }
    [from, to] = [to, from];
  }
  return from;
}
