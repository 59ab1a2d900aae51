/**
 * Work that can stop part-way: a generator that `yield`s wherever it may be interrupted (every
 * one to eight thousand items) and returns its result at its end. Steps keep no clock: what a
 * write costs in proportion to its size or to the catalogue's is written this way (its plan,
 * write-plan.ts; an import's new indexes and change marks, indexes.ts and history.ts; a full
 * view's bytes, views.ts), and whoever runs them decides when to stop. The registry runs an
 * import's steps with the app's one Scheduler (scheduler.ts), which gives the event loop back
 * between them once its slice is used up, in turns with the other owners of background work; a
 * small write (CatalogSnapshot.apply) and tests run them to their end at once with `finish`.
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to its end without stopping. */
export function finish<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
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
