-- Retention (USAGE_RETENTION_DAYS) deletes tool-call records by age.
CREATE INDEX tool_calls_by_at ON tool_calls (at);
