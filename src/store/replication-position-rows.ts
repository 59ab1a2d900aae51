/**
 * Where a replica is in the replication topic (replication_state, one row), saved in the
 * transaction of the writes it applied so that a restart resumes after exactly those.
 */
import type { SqliteDatabase } from './database.js';

/** Where a replica is in the replication topic (src/replication/), saved with what it applied. */
export interface ReplicationPosition {
  topic: string;
  messageId: string;
  /** The message's registry index (src/replication/message-id.ts). */
  index: number;
  /** The last write time given out. */
  lastAt: string;
}

export class ReplicationPositionRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      get: db.prepare(
        'SELECT topic, message_id AS messageId, message_index AS "index", last_at AS lastAt FROM replication_state WHERE id = 1',
      ),
      save: db.prepare(`
        INSERT INTO replication_state (id, topic, message_id, message_index, last_at) VALUES (1, @topic, @messageId, @index, @lastAt)
        ON CONFLICT (id) DO UPDATE SET topic = excluded.topic, message_id = excluded.message_id, message_index = excluded.message_index, last_at = excluded.last_at`),
    };
  }

  /** Undefined before the replica's first message. */
  get(): ReplicationPosition | undefined {
    return this.#stmts.get.get() as ReplicationPosition | undefined;
  }

  save(position: ReplicationPosition): void {
    this.#stmts.save.run(position);
  }
}
