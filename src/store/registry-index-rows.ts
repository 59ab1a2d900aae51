/**
 * The registry index (registry_state): the number of writes ever committed, or, in replicated
 * mode, the topic position of the last message applied. Every write takes one index, once, in
 * its own transaction.
 */
import type { SqliteDatabase } from './database.js';

export class RegistryIndexRows {
  readonly #stmts;
  /** The index the next write takes instead of the next number (replicated mode), or null. */
  #pinned: number | null = null;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      current: db.prepare('SELECT registry_index AS value FROM registry_state WHERE id = 1').pluck(),
      bump: db.prepare('UPDATE registry_state SET registry_index = registry_index + 1 WHERE id = 1 RETURNING registry_index').pluck(),
      // Replicated mode: the index comes from the topic's position and must pass the last one.
      set: db.prepare('UPDATE registry_state SET registry_index = ? WHERE id = 1 AND registry_index < ? RETURNING registry_index').pluck(),
    };
  }

  current(): number {
    return this.#stmts.current.get() as number;
  }

  /** Pins the index the writes of `fn` take (see RegistryStore.withIndex). */
  withIndex<T>(index: number, fn: () => T): T {
    this.#pinned = index;
    try {
      return fn();
    } finally {
      this.#pinned = null;
    }
  }

  /** The index a write takes: the pinned one in replicated mode, else the next number. */
  next(): number {
    const pinned = this.#pinned;
    if (pinned === null) return this.#stmts.bump.get() as number;
    const index = this.#stmts.set.get(pinned, pinned) as number | undefined;
    if (index === undefined) throw new Error(`replicated index ${pinned} is not past the registry's index ${this.current()}`);
    return index;
  }
}
