-- Usage over time (issue 34): per minute and per tool, calls by outcome and a latency histogram,
-- for GET /stats?window=1h|24h. The registry writes each minute once it has closed, all its
-- tools in one transaction, and deletes minutes older than a day; at startup it loads the last
-- day. `minute` counts minutes since 1970-01-01T00:00Z. The outcome columns follow CallOutcome.
-- `latency` is JSON, [[bucket, calls], ...] for the buckets with calls, bucket bounds as in
-- src/usage/latency-histogram.ts; `min_ms` and `max_ms` are null when every call was denied.
CREATE TABLE usage_minutes (
  minute INTEGER NOT NULL,
  tool TEXT NOT NULL,
  ok INTEGER NOT NULL,
  service_error INTEGER NOT NULL,
  timeout INTEGER NOT NULL,
  unavailable INTEGER NOT NULL,
  denied INTEGER NOT NULL,
  cancelled INTEGER NOT NULL,
  latency TEXT NOT NULL,
  min_ms REAL,
  max_ms REAL,
  PRIMARY KEY (minute, tool)
) STRICT, WITHOUT ROWID;
