-- A caller that hangs up cancels its call (the bridge aborts it and frees its slot); such calls
-- are recorded with the outcome 'cancelled'. SQLite cannot change a CHECK constraint in place,
-- so the table is rebuilt with its rows and indexes.
CREATE TABLE tool_calls_new (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  tool TEXT NOT NULL,
  sub TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'service-error', 'timeout', 'unavailable', 'denied', 'cancelled')),
  duration_ms REAL NOT NULL
) STRICT;
INSERT INTO tool_calls_new (id, at, tool, sub, outcome, duration_ms)
  SELECT id, at, tool, sub, outcome, duration_ms FROM tool_calls;
DROP TABLE tool_calls;
ALTER TABLE tool_calls_new RENAME TO tool_calls;
CREATE INDEX tool_calls_by_tool ON tool_calls (tool, id);
CREATE INDEX tool_calls_by_at ON tool_calls (at);
