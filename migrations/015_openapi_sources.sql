-- OpenAPI sources (issue 30). An operator's OpenAPI document whose kept operations the registry
-- serves as HTTP tools, owned by 'openapi-source:<id>' (tools.owner) so that only writes of the
-- source change them. The document text is kept as given (or as last read from its URL), so a
-- GET shows what the tools came from. The credential is sealed at rest (AES-256-GCM under the
-- credentials key, src/store/credential-box.ts), bound to the source's id: a copy of the database
-- without the key holds no usable secret.
CREATE TABLE openapi_sources (
  id TEXT PRIMARY KEY,
  -- JSON of an OpenApiSource (src/model/openapi-source.ts): no document, no credential.
  descriptor TEXT NOT NULL,
  document TEXT NOT NULL,
  -- The document's info.title and info.version, as read.
  title TEXT NOT NULL,
  version TEXT NOT NULL,
  -- JSON of what the conversion skipped ([{pointer, reason}]).
  skipped TEXT NOT NULL,
  -- Sealed JSON of the outbound credential, or NULL.
  credential TEXT,
  -- JSON of what reads show of it (src/model/outbound-credential.ts maskCredential): no secret.
  credential_shown TEXT,
  create_index INTEGER NOT NULL,
  modify_index INTEGER NOT NULL,
  updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- A source's tools, found by their owner on each write of the source.
CREATE INDEX tools_by_owner ON tools (owner) WHERE owner IS NOT NULL;
