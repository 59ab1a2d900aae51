/**
 * Work that can stop part-way: a generator that `yield`s wherever it may be interrupted (every
 * few hundred items) and returns its result at its end. The catalogue writes its big steps this
 * way (an import's new indexes, a full view's bytes) without a clock of its own: the registry
 * runs them a few milliseconds per turn of the event loop (src/registry/time-slices.ts), and a
 * small write or a test runs them to their end at once with `finish`.
 */
export type Steps<T> = Generator<void, T, void>;

/** Runs `steps` to its end without stopping. */
export function finish<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
