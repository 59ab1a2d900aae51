-- Who did what, when, and how it ended: every registry write (in the write's own transaction)
-- and every refused write or call (batched). Bounded by a retention setting.
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  sub TEXT,
  iss TEXT,
  client TEXT,
  action TEXT NOT NULL,
  target TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'denied', 'invalid', 'error')),
  status INTEGER NOT NULL,
  detail TEXT,
  registry_index INTEGER,
  request_id TEXT
) STRICT;
CREATE INDEX audit_log_by_at ON audit_log (at);
CREATE INDEX audit_log_by_sub ON audit_log (sub, id);
CREATE INDEX audit_log_by_action ON audit_log (action, id);
