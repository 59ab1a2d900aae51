-- Replicated mode (src/replication/): how far this replica has applied the replication topic.
-- Written in the same transaction as the writes it applied, so that after a crash a replica
-- neither applies a message twice nor skips one.
CREATE TABLE replication_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  topic TEXT NOT NULL,
  -- The last message applied (or refused): the reader resumes after it.
  message_id TEXT NOT NULL,
  -- Its registry index (src/replication/message-id.ts).
  message_index INTEGER NOT NULL,
  -- The last write time given out, so that stamps stay the same on every replica across restarts.
  last_at TEXT NOT NULL
) STRICT;
