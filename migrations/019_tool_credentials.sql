-- The registry's own credential of a single HTTP tool (issue 30): `PUT /tools/{name}/credential`.
-- Sealed at rest as OpenAPI sources' are (AES-256-GCM under the credentials key, bound to
-- `tool:<name>`), never in the tool's descriptor, so that discovery, exports and the change feed
-- never carry it. It goes only to the origin it was set for: a tool moved to another host keeps
-- no credential for it (checked at each call).
CREATE TABLE tool_credentials (
  name TEXT PRIMARY KEY,
  -- Sealed JSON of the OutboundCredential (src/model/outbound-credential.ts).
  sealed TEXT NOT NULL,
  -- JSON of what reads show of it (maskCredential): no secret.
  shown TEXT NOT NULL,
  -- The scheme, host and port its calls went to when it was set (`https://api.example.com`).
  origin TEXT NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- A deleted tool's credential goes with it, whichever write deletes it: a later tool of the
-- same name starts without one.
CREATE TRIGGER tool_credentials_of_deleted_tools AFTER UPDATE OF status ON tools
  WHEN NEW.status = 'deleted'
  BEGIN DELETE FROM tool_credentials WHERE name = NEW.name; END;
CREATE TRIGGER tool_credentials_of_purged_tools AFTER DELETE ON tools
  BEGIN DELETE FROM tool_credentials WHERE name = OLD.name; END;
