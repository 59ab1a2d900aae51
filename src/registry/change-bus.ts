/**
 * Who hears of a write, and when: every front (waiters, the change feed, MCP sessions, the
 * dashboard) subscribes here. A write is published only after its commit, and a write whose
 * commit fails is never published: `afterCommit` holds everything published while it runs and
 * releases it when the commit returns, or drops it when the commit throws. The hold/release
 * protocol lives here so that no write path has to remember it.
 */
import type { Change, ChangeListener } from '../model/records.js';

export class ChangeBus {
  readonly #listeners = new Set<ChangeListener>();
  readonly #onListenerError: (err: unknown) => void;
  /** While a commit runs: what was published, held until it has committed. */
  #held: [number, readonly Change[]][] | null = null;

  /** A listener that throws is reported here; the others still hear of the write. */
  constructor(onListenerError: (err: unknown) => void = () => undefined) {
    this.#onListenerError = onListenerError;
  }

  /** Calls `listener` after every committed write; returns the unsubscribe. */
  subscribe(listener: ChangeListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }

  /** Tells every listener of a write (at once, or when the running commit has returned). */
  publish(index: number, changes: readonly Change[]): void {
    if (this.#held) this.#held.push([index, changes]);
    else this.#notify(index, changes);
  }

  /**
   * Runs `commit`, holding every publication made meanwhile; releases them if it returns and
   * drops them (then rethrows) if it throws.
   */
  afterCommit<T>(commit: () => T): T {
    if (this.#held) return commit(); // nested: the outer commit decides
    this.#held = [];
    let held: [number, readonly Change[]][];
    try {
      const result = commit();
      held = this.#held;
      this.#held = null;
      for (const [index, changes] of held) this.#notify(index, changes);
      return result;
    } finally {
      this.#held = null;
    }
  }

  #notify(index: number, changes: readonly Change[]): void {
    for (const listener of this.#listeners) {
      try {
        listener(index, changes);
      } catch (err) {
        this.#onListenerError(err);
      }
    }
  }
}
