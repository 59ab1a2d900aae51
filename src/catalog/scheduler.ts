/**
 * The one scheduler of background work (issue 32): an import's steps (and the sliced parse of
 * its body), change-stream replays, the checks of an upstream MCP server's listing, the cutting
 * of a replicated import into parts and the search feeder's backlog share the event loop through
 * one instance per app, rather than each giving it back on a clock of its own. It lives in
 * catalog/ because the catalogue (the search feeder) and the rooms above it that use it
 * (registry, http) may import it; replication/, which may not, takes it by its shape.
 *
 * A task that has used up the current slice queues, and each later turn of the event loop
 * resumes one queued task. Owners take turns round-robin, and each owner's tasks in the order
 * they queued, so that a caller with a hundred streams replaying gets no more turns than one
 * with a single stream, and a big import no more than the search backlog. However many tasks
 * there are, one turn of the loop runs one slice of them (plus one step of any task resumed by
 * I/O), so requests keep their latency: with a private clock each, 20 tasks resumed in the
 * same turn would hold the loop for 20 slices.
 */
import type { Steps } from './steps.js';

export class Scheduler {
  readonly #sliceMs: number;
  /** Waiting tasks by owner; the Map's order is the round-robin order. */
  readonly #owners = new Map<string, (() => void)[]>();
  #sliceStarted = Number.NEGATIVE_INFINITY;
  #scheduled = false;
  #turns = 0;

  constructor(sliceMs = 5) {
    this.#sliceMs = sliceMs;
  }

  /** Tasks waiting for a turn (for tests and metrics). */
  get waiting(): number {
    let n = 0;
    for (const tasks of this.#owners.values()) n += tasks.length;
    return n;
  }

  /** Turns of the event loop in which a queued task was resumed (for tests). */
  get turns(): number {
    return this.#turns;
  }

  /** Resolves at once while the running slice has time left; at `owner`'s turn otherwise. */
  async turn(owner = ''): Promise<void> {
    if (performance.now() - this.#sliceStarted < this.#sliceMs) return;
    await new Promise<void>((resolve) => {
      const tasks = this.#owners.get(owner);
      if (tasks) tasks.push(resolve);
      else this.#owners.set(owner, [resolve]);
      this.#schedule();
    });
  }

  /** Runs `steps` to its end as `owner`, taking a turn at its yields whenever the slice is used up. */
  async run<T>(steps: Steps<T>, owner = ''): Promise<T> {
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
      await this.turn(owner);
    }
  }

  #schedule(): void {
    if (this.#scheduled || this.#owners.size === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#sliceStarted = performance.now();
      const next = this.#owners.entries().next();
      if (!next.done) {
        const [owner, tasks] = next.value;
        const resume = tasks.shift();
        // The owner goes to the back of the round.
        this.#owners.delete(owner);
        if (tasks.length > 0) this.#owners.set(owner, tasks);
        this.#turns++;
        resume?.();
      }
      // Queued during the check phase, so the next task runs in the next turn of the loop.
      this.#schedule();
    });
  }
}
