-- Reviewed re-reads of OpenAPI sources (issue 30). A source read from its documentUrl is read
-- again on demand (POST /openapi-sources/{id}/refresh) and on an interval; under the source's
-- policy `review` (the default) an operation whose tool would be new or differ from the tool
-- agents are served waits here, one row per tool name, until an operator accepts or rejects it,
-- as upstream MCP servers' tools wait in mcp_pending (migration 013). A tool the document no
-- longer has leaves at once. Written in the transactions of the refreshes, accepts and rejects.
CREATE TABLE openapi_pending (
  source_id TEXT NOT NULL,
  -- The tool's name (the source's prefix and the operation's name).
  name TEXT NOT NULL,
  -- SHA-256 of the canonical JSON of the whole pending tool (where calls go and its scopes
  -- included: a re-read that moves a call elsewhere or opens a tool is a change to review).
  digest TEXT NOT NULL,
  -- JSON of {"pointer", "deprecated", "body"}: the operation's JSON pointer in the document, its
  -- `deprecated` mark, and the HTTP tool body it becomes.
  descriptor TEXT NOT NULL,
  -- The digest of the tool agents are served now; NULL for a tool not served yet.
  accepted_digest TEXT,
  seen_at TEXT NOT NULL,
  -- Set when an operator rejected this version: it is not pending again until it changes.
  rejected_at TEXT,
  PRIMARY KEY (source_id, name)
) WITHOUT ROWID;
