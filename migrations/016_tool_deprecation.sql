-- Issue 34: a tool's deprecation, set by PUT /tools/{name}/deprecation and lifted by DELETE.
-- JSON of a ToolDeprecation (src/model/deprecation.ts: since, and optionally sunset in UTC,
-- replacement, reason), or NULL for none. Re-registering a live tool keeps it (an operator's new
-- version of a deprecated tool is still deprecated); a tool created anew after a delete, or
-- after its sunset, starts without one.
ALTER TABLE tools ADD COLUMN deprecation TEXT;
