-- The registry's truth. Every write bumps registry_state.registry_index once and stamps the rows
-- it touched with that value (modify_index). Deletes keep the row as a tombstone
-- (status 'deleted') so change feeds can tell mirrors what went away.

CREATE TABLE registry_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  registry_index INTEGER NOT NULL CHECK (registry_index >= 0)
) STRICT;
INSERT INTO registry_state (id, registry_index) VALUES (1, 0);

CREATE TABLE tool_services (
  id TEXT PRIMARY KEY,
  descriptor TEXT NOT NULL CHECK (json_valid(descriptor)),
  status TEXT NOT NULL CHECK (status IN ('active', 'deleted')),
  create_index INTEGER NOT NULL,
  modify_index INTEGER NOT NULL,
  updated_at TEXT NOT NULL
) STRICT;
CREATE INDEX tool_services_by_modify_index ON tool_services (modify_index);

CREATE TABLE tools (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('http', 'tool-service')),
  service_id TEXT REFERENCES tool_services (id),
  descriptor TEXT NOT NULL CHECK (json_valid(descriptor)),
  status TEXT NOT NULL CHECK (status IN ('active', 'deprecated', 'deleted')),
  create_index INTEGER NOT NULL,
  modify_index INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((kind = 'tool-service') = (service_id IS NOT NULL))
) STRICT;
CREATE INDEX tools_by_modify_index ON tools (modify_index);
CREATE INDEX tools_by_service ON tools (service_id) WHERE service_id IS NOT NULL;

-- /readyz proves the database takes a write by touching this row.
CREATE TABLE health_probe (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  probed_at TEXT NOT NULL
) STRICT;
