/**
 * The last sequence number taken from each announcer's process (announcer_sequences, migration
 * 014), so that a replayed or older announcement is refused, restarts included (issue 29).
 *
 * Written outside the group commit, one autocommit statement a heartbeat (a heartbeat every 10 s
 * per announcer process is far below what one connection takes). While a sliced import holds its
 * transaction open across turns of the event loop, the statement runs inside it: should the
 * import roll back, so does the number, and a message of that process signed since the last
 * number that stuck could be taken once more, within ANNOUNCE_MAX_SKEW_S of its signing.
 */
import type { SqliteDatabase } from './database.js';
import { translate } from './transactions.js';

export class AnnouncerSequenceRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      // One statement, so the check and the update cannot be split by another message's.
      advance: db.prepare(`
        INSERT INTO announcer_sequences (subject, instance, seq, iat) VALUES (@subject, @instance, @seq, @iat)
        ON CONFLICT (subject, instance) DO UPDATE SET seq = excluded.seq, iat = excluded.iat
        WHERE excluded.seq > announcer_sequences.seq`),
      prune: db.prepare('DELETE FROM announcer_sequences WHERE iat < ?'),
      last: db.prepare('SELECT seq FROM announcer_sequences WHERE subject = ? AND instance = ?').pluck(),
    };
  }

  /**
   * Takes `seq` for the announcer's process if it is higher than every one taken before; false
   * (and nothing changes) for a replay or an older one.
   */
  advance(subject: string, instance: string, seq: number, iat: number): boolean {
    return translate(() => this.#stmts.advance.run({ subject, instance, seq, iat }).changes === 1);
  }

  /** The highest sequence number taken, or undefined for a process never heard. */
  last(subject: string, instance: string): number | undefined {
    return this.#stmts.last.get(subject, instance) as number | undefined;
  }

  /** Forgets processes last heard before `iat` (seconds); returns how many. */
  prune(iat: number): number {
    return translate(() => this.#stmts.prune.run(iat).changes);
  }
}
