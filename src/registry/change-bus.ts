/**
 * Who hears of a write: every front (waiters, the change feed, MCP sessions, the dashboard)
 * subscribes here. The registry service publishes a write only once its commit is on disk
 * (src/registry/group-commit.ts stages a batch until its fsync returns), so a write whose
 * commit fails is never published and nobody hears of a write a crash could still lose.
 */
import type { Change, ChangeListener } from '../model/records.js';

export class ChangeBus {
  readonly #listeners = new Set<ChangeListener>();
  readonly #onListenerError: (err: unknown) => void;

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

  /** Tells every listener of a committed write. */
  publish(index: number, changes: readonly Change[]): void {
    this.#notify(index, changes);
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
