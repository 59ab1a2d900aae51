-- The change log: one row per descriptor a write touched, with the scopes before and after,
-- so a change feed can tell each caller whether a tool entered, changed in, or left its view,
-- and resume from any index (Last-Event-ID). Written in the write's own transaction.
CREATE TABLE changes (
  seq INTEGER PRIMARY KEY,
  registry_index INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('tool', 'tool-service')),
  name TEXT NOT NULL,
  op TEXT NOT NULL CHECK (op IN ('upsert', 'delete')),
  -- JSON arrays of the OAuth scopes that grant the tool; NULL where it did not exist (or is deleted).
  scopes_before TEXT,
  scopes_after TEXT
) STRICT;
CREATE INDEX changes_by_index ON changes (registry_index, seq);

-- Full-text search over tool names and descriptions, kept in step with the tools table.
CREATE VIRTUAL TABLE tools_fts USING fts5(name, description, tokenize = 'unicode61 remove_diacritics 2');
INSERT INTO tools_fts (rowid, name, description)
  SELECT rowid, name, COALESCE(json_extract(descriptor, '$.description'), '') FROM tools;
CREATE TRIGGER tools_fts_insert AFTER INSERT ON tools BEGIN
  INSERT INTO tools_fts (rowid, name, description) VALUES (new.rowid, new.name, COALESCE(json_extract(new.descriptor, '$.description'), ''));
END;
CREATE TRIGGER tools_fts_update AFTER UPDATE OF descriptor, name ON tools BEGIN
  DELETE FROM tools_fts WHERE rowid = old.rowid;
  INSERT INTO tools_fts (rowid, name, description) VALUES (new.rowid, new.name, COALESCE(json_extract(new.descriptor, '$.description'), ''));
END;
CREATE TRIGGER tools_fts_delete AFTER DELETE ON tools BEGIN
  DELETE FROM tools_fts WHERE rowid = old.rowid;
END;
