-- Upstream MCP servers (issue 11): an operator registers a server's Streamable HTTP URL, and the
-- registry keeps its tools as tools of kind 'mcp'. Deletes leave a tombstone, as for tool
-- services, so that the tombstones of its tools still reference a row.
CREATE TABLE mcp_servers (
  id TEXT PRIMARY KEY,
  -- The descriptor without its credential.
  descriptor TEXT NOT NULL CHECK (json_valid(descriptor)),
  -- The bearer credential the registry sends upstream, apart from the descriptor so that nothing
  -- that reads, serves or exports descriptors can carry it; NULL when none, and once deleted.
  credential TEXT,
  status TEXT NOT NULL CHECK (status IN ('active', 'deleted')),
  create_index INTEGER NOT NULL,
  modify_index INTEGER NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;

-- Tools of kind 'mcp' belong to an MCP server (mcp_server_id) rather than a tool service, each
-- column with its own foreign key. SQLite cannot change a CHECK constraint in place, so the
-- table is rebuilt with its rows and indexes (as 006 rebuilt tool_calls); no table references
-- tools, so the foreign keys that stay on during migrations have nothing to object to.
CREATE TABLE tools_new (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('http', 'tool-service', 'mcp')),
  service_id TEXT REFERENCES tool_services (id),
  mcp_server_id TEXT REFERENCES mcp_servers (id),
  descriptor TEXT NOT NULL CHECK (json_valid(descriptor)),
  status TEXT NOT NULL CHECK (status IN ('active', 'deprecated', 'deleted')),
  create_index INTEGER NOT NULL,
  modify_index INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((kind = 'tool-service') = (service_id IS NOT NULL)),
  CHECK ((kind = 'mcp') = (mcp_server_id IS NOT NULL))
) STRICT;
INSERT INTO tools_new (name, kind, service_id, descriptor, status, create_index, modify_index, updated_at)
  SELECT name, kind, service_id, descriptor, status, create_index, modify_index, updated_at FROM tools;
DROP TABLE tools;
ALTER TABLE tools_new RENAME TO tools;
CREATE INDEX tools_by_modify_index ON tools (modify_index);
CREATE INDEX tools_by_service ON tools (service_id) WHERE service_id IS NOT NULL;
CREATE INDEX tools_by_mcp_server ON tools (mcp_server_id) WHERE mcp_server_id IS NOT NULL;
