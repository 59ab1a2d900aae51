/**
 * Work that can stop part-way: a generator that `yield`s wherever it may be interrupted (every
 * one to eight thousand items) and returns its result at its end. The catalogue has no clock of
 * its own: what a write costs in proportion to its size or to the catalogue's is written this
 * way (its plan, write-plan.ts; an import's new indexes and change marks, indexes.ts and
 * history.ts; a full view's bytes, views.ts). The registry runs an import's steps with
 * TimeSlices (src/registry/time-slices.ts), which gives the event loop back between them once
 * its slice is used up; a small write (CatalogSnapshot.apply) and tests run them to their end at
 * once with `finish`.
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to its end without stopping. */
export function finish<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
