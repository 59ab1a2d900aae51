-- One row per call through the bridge, written in batches. /stats aggregates them in memory at
-- startup and keeps the aggregates current as calls happen.
CREATE TABLE tool_calls (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  tool TEXT NOT NULL,
  sub TEXT,
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'service-error', 'timeout', 'unavailable', 'denied')),
  duration_ms REAL NOT NULL
) STRICT;
CREATE INDEX tool_calls_by_tool ON tool_calls (tool, id);
