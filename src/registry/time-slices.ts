/**
 * Long work done a few milliseconds at a time: `turn()` gives the event loop back once the
 * current slice has run for `sliceMs`, so that requests keep being answered meanwhile.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

export class TimeSlices {
  readonly #sliceMs: number;
  #started = performance.now();

  constructor(sliceMs = 8) {
    this.#sliceMs = sliceMs;
  }

  /** Resolves at once while the slice has time left; after the next turn of the loop otherwise. */
  async turn(): Promise<void> {
    if (performance.now() - this.#started < this.#sliceMs) return;
    await nextTurn();
    this.#started = performance.now();
  }
}
