/**
 * Who may write to a database connection right now. A write that spans many turns of the event
 * loop (an import, written in slices so that reads keep answering) holds the gate for its whole
 * transaction; everything else that writes on the same connection (usage records, refused-write
 * audit entries, pruning, the readiness probe) waits for it instead of slipping into that
 * transaction, where an import that fails would take it down too.
 */
import type { SqliteDatabase } from './database.js';

export class WriteGate {
  #held = false;

  get held(): boolean {
    return this.#held;
  }

  /** Takes the gate; the returned function gives it back (once). */
  hold(): () => void {
    if (this.#held) throw new Error('the write gate is already held');
    this.#held = true;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held = false;
    };
  }
}

const gates = new WeakMap<SqliteDatabase, WriteGate>();

/** The one gate of a connection. */
export function writeGateOf(db: SqliteDatabase): WriteGate {
  let gate = gates.get(db);
  if (!gate) {
    gate = new WriteGate();
    gates.set(db, gate);
  }
  return gate;
}
