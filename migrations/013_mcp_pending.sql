-- Pinned upstream tools (issue 29). What agents are served of an upstream MCP server's tool is
-- the version an operator accepted (the stored tool); a listing that differs from it (a new
-- tool, a changed text or schema) is kept here, one row per served name, until an operator
-- accepts or rejects it. Written in the same transactions as the sync that found it, so every
-- replica holds the same rows.
CREATE TABLE mcp_pending (
  server_id TEXT NOT NULL,
  -- The served name (the server's prefix and the upstream's name).
  name TEXT NOT NULL,
  -- The digest (src/registry/tool-digest.ts) of the pending version.
  digest TEXT NOT NULL,
  -- The pending version as the registry would store it (JSON of an McpTool).
  descriptor TEXT NOT NULL,
  -- The digest of the version agents are served now; NULL for a tool not served yet.
  accepted_digest TEXT,
  -- When this version was first listed.
  seen_at TEXT NOT NULL,
  -- Set when an operator rejected this version: it is not listed again until it changes.
  rejected_at TEXT,
  PRIMARY KEY (server_id, name)
) WITHOUT ROWID;

-- Servers registered before the policy existed had their tools served at once: they keep that.
-- New servers are `review` unless an operator says otherwise.
UPDATE mcp_servers SET descriptor = json_set(descriptor, '$.policy', 'auto')
  WHERE json_extract(descriptor, '$.policy') IS NULL;
