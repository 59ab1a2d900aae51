-- Replicated mode (src/replication/import-parts.ts): the parts of an import too big for one
-- message, staged until its last part arrives, which applies the whole import and deletes them
-- in its own transaction. A part is staged in the transaction that saves the replica's position,
-- so that after a crash none is lost or staged twice. Parts whose import never finished (its
-- writer died mid-publish) are deleted once a message stamped long enough after them is applied.
CREATE TABLE replication_import_parts (
  -- The import's write id (every part of it has the same).
  write_id TEXT NOT NULL,
  -- The part's number, from 0.
  part INTEGER NOT NULL,
  -- How many parts the import has.
  parts INTEGER NOT NULL,
  -- The part's slice of the import's JSON text.
  chunk TEXT NOT NULL,
  -- Its length in bytes (UTF-8), for the limits on what is staged.
  bytes INTEGER NOT NULL,
  -- The stamp of the message that staged it, in milliseconds since 1970 (the writer's clock,
  -- never before the last stamp given out): the same on every replica.
  staged_at INTEGER NOT NULL,
  PRIMARY KEY (write_id, part)
) STRICT;
CREATE INDEX replication_import_parts_by_staged_at ON replication_import_parts (staged_at);
