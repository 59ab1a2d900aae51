/**
 * Every setting as its environment variable: its help, its default and its check, in one zod
 * object whose order is the order --help and docs/configuration.md list them in.
 */
import { z } from 'zod';
import { PulsarQueueSchema, ScopeSchema } from '../model/schemas.js';
import { DEFAULT_CONFIG_REQUEST_QUEUE, DEFAULT_CONFIG_RESPONSE_QUEUE, DEFAULT_WORKSPACE } from '../model/trustgraph-config.js';
import { ANONYMOUS_POLICIES } from '../model/visibility.js';
import {
  announcerKeysFile,
  boolean,
  bytesOrAuto,
  caCertificatesFile,
  httpUrl,
  integer,
  JWT_ALGORITHMS,
  list,
  listenHost,
  LOG_LEVELS,
  optional,
  outboundRules,
  pemKey,
  replicationKeyFile,
  roleScopes,
  setting,
  unsignedThrough,
  urlOf,
  usableMemoryBytes,
} from './checks.js';

const MiB = 1024 * 1024;

/**
 * VIEW_CACHE_BYTES's `auto`: an eighth of the memory the process may use, from 64 MiB to 4 GiB.
 * A view's body is served from memory only while it is kept (src/catalog/views.ts); 64 MiB, the
 * fixed default before, kept five of the fifty 12 MiB token views of a 100,000-tool catalogue,
 * so most bearer requests copied their view (issue 33: 22 requests/s against the ceiling's
 * 209-254). On a 2 GiB container this gives 256 MiB; on a 24 GiB machine, 3 GiB.
 */
export function autoViewCacheBytes(memory = usableMemoryBytes()): number {
  return Math.min(4096 * MiB, Math.max(64 * MiB, Math.floor(memory / 8)));
}

/** Every setting, in the order --help and docs/configuration.md list them. */
export const EnvSchema = z.object({
  PORT: setting(
    'TCP port to listen on (0: a free one, which the URLs the registry gives out then name, unless PUBLIC_URL is set)',
    '8006',
    integer(0, 65535),
  ),
  HOST: setting('address to listen on (0.0.0.0 for every interface)', '127.0.0.1', listenHost),
  PORT_FILE: optional(
    'once listening, write the bound port to this file (with PORT=0, how a supervisor, a script or a test learns which port was chosen)',
    z.string().min(1),
  ),
  DATABASE_PATH: setting('SQLite database file (":memory:" for a throwaway one)', './data/registry.db', z.string().min(1)),
  CREDENTIALS_KEY_FILE: optional(
    "a file with the 32-byte key (base64 or hex, mode 0600) that seals the registry's own outbound credentials in the database (OpenAPI sources' API keys and client secrets); unset: DATABASE_PATH + '.credentials-key', made on first start (none for :memory:, whose key lives and dies with the process)",
    z.string().min(1),
  ),
  PUBLIC_URL: optional(
    'base URL agents reach this registry at (default http://HOST:PORT); message-bus tools point at its invoke route',
    httpUrl.transform((v) => new URL(v)),
  ),
  ANONYMOUS_DISCOVERY: setting(
    'what callers without a token see: full (every tool), public (tools needing no scope) or none (401)',
    'full',
    z.enum(ANONYMOUS_POLICIES, { error: `must be one of ${ANONYMOUS_POLICIES.join(', ')}` }),
  ),
  ADMIN_SCOPE: setting('scope a token needs for every write', 'registry:write', ScopeSchema),
  STATS_READ_SCOPE: optional(
    'read-only scope for dashboards: the whole catalogue in GET /, /stats and /changes, and per-agent usage in /stats (the admin scope has these too)',
    ScopeSchema,
  ),
  LOG_LEVEL: setting('pino log level', 'info', z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` })),
  JWT_SECRET: optional(
    'shared secret for HS256 bearer tokens (at least 32 characters; HS384/HS512 with JWT_ALGORITHMS)',
    z.string().min(32, 'must be at least 32 characters (256 bits) for HS256'),
    { secret: true },
  ),
  JWT_PUBLIC_KEY: optional('PEM public key (RSA, EC or Ed25519; RS256, ES256/384/512 or EdDSA), or the path of a PEM file', pemKey),
  JWT_ISSUER: optional(
    'required token issuer (iss); without a secret or key, its metadata names the JWKS',
    urlOf(/^[a-z][a-z0-9+.-]*$/, 'must be the issuer URL'),
  ),
  JWT_AUDIENCE: optional(
    "accepted token audiences (aud), comma-separated (default with a JWKS: RESOURCE_URL and RESOURCE_URL/mcp, the MCP endpoint's own identifier)",
    list,
  ),
  JWKS_URL: optional(
    "URL of the authorization server's JWKS (instead of discovery from JWT_ISSUER)",
    httpUrl.transform((v) => new URL(v)),
  ),
  JWKS_COOLDOWN_S: setting(
    'least seconds between JWKS fetches caused by tokens: an unknown key id, or a signature that fails under a known one (a key replaced under the same kid)',
    '30',
    integer(0, 86_400),
  ),
  JWKS_TIMEOUT_MS: setting('longest a JWKS or metadata fetch may take', '3000', integer(100, 60_000)),
  JWT_TYP: setting(
    'accepted token typ headers, comma-separated: at+jwt (RFC 9068), add JWT for older servers',
    'at+jwt',
    list
      .pipe(z.array(z.string().min(1)).min(1, 'must name at least one type'))
      .transform((types) => types.map((t) => t.toLowerCase().replace(/^application\//, ''))),
  ),
  ROLE_SCOPES: optional('JSON map of roles or groups claim values to scopes, e.g. {"registry-admin":"registry:write"}', roleScopes),
  RESOURCE_URL: optional("this API's resource identifier (RFC 8707/9728; default PUBLIC_URL)", httpUrl),
  AUTHORIZATION_SERVERS: optional(
    'issuer URLs advertised in protected-resource metadata, comma-separated (default JWT_ISSUER)',
    list.pipe(z.array(httpUrl)),
  ),
  JWT_ALGORITHMS: optional(
    'allowed token algorithms, comma-separated (default from the key: HS256, RS256 or ES256)',
    list.pipe(z.array(z.enum(JWT_ALGORITHMS, { error: 'is not a supported algorithm' })).min(1)),
  ),
  JWT_CLOCK_TOLERANCE_S: setting('seconds of clock skew allowed on exp and nbf', '30', integer(0, 600)),
  BODY_LIMIT: setting('largest request body in bytes', String(1024 * 1024), integer(1024, 512 * 1024 * 1024)),
  IMPORT_BODY_LIMIT: setting(
    'largest POST /import body in bytes (admin only; parsed in slices, so reads keep answering)',
    String(64 * 1024 * 1024),
    integer(1024, 2 * 1024 * 1024 * 1024),
  ),
  OPENAPI_MAX_DOCUMENT_BYTES: setting(
    'largest OpenAPI document (JSON or YAML text) PUT /openapi-sources/{id} takes inline or reads from documentUrl; larger is a 400 naming it (the request body may be twice this, JSON escaping included)',
    String(8 * 1024 * 1024),
    integer(1024, 64 * 1024 * 1024),
  ),
  OPENAPI_REFRESH_S: setting(
    "seconds between reads of an OpenAPI source's documentUrl, unless the source sets refreshIntervalS; what a read finds new or changed waits for review under the source's policy `review`; 0: read only on demand (POST /openapi-sources/{id}/refresh)",
    '3600',
    integer(0, 604_800),
  ),
  MAX_HEADER_SIZE: setting('largest request header block in bytes', String(16 * 1024), integer(1024, 1024 * 1024)),
  JSON_MAX_DEPTH: setting('deepest nesting of objects and arrays a JSON request body may have; deeper is a 400', '64', integer(2, 1000)),
  MAX_CONNECTIONS: setting('most concurrent connections; further ones are refused', '10000', integer(1, 1_000_000)),
  MAX_CONNECTIONS_PER_ADDRESS: optional(
    "connections one client address may hold (default a tenth of MAX_CONNECTIONS); past it only health probes are answered. Behind a reverse proxy every client has the proxy's address: raise it",
    integer(1, 1_000_000),
  ),
  PROBE_CONNECTIONS: setting(
    "connections kept beyond MAX_CONNECTIONS and each address's share for /healthz and /readyz only",
    '16',
    integer(0, 10_000),
  ),
  HEADERS_TIMEOUT_MS: setting(
    'longest a connection may take to send complete request headers (then 408 and closed), idle new connections included',
    '10000',
    integer(100, 3_600_000),
  ),
  REQUEST_TIMEOUT_MS: setting('longest a client may take to send a whole request, body included', '60000', integer(1000, 3_600_000)),
  KEEP_ALIVE_TIMEOUT_MS: setting('how long an idle keep-alive connection stays open between requests', '72000', integer(100, 3_600_000)),
  IDLE_TIMEOUT_MS: setting(
    'longest a connection may stay silent with a request in flight (0: off, the default: a per-socket timer cost the hot 304 path about 8%); when set, keep it above the longest tool call (blocking queries and change streams are exempt)',
    '0',
    integer(0, 86_400_000),
  ),
  SHUTDOWN_TIMEOUT_MS: setting(
    "longest a SIGTERM or SIGINT waits for requests in flight (tool calls included) before the process exits anyway, with 1; under Docker's 10 s stop grace by default (0: wait for them all)",
    '8000',
    integer(0, 3_600_000),
  ),
  PULSAR_WS_URL: optional(
    'Pulsar WebSocket API base URL for message-bus calls, e.g. ws://127.0.0.1:8080 (unset: such calls answer 503)',
    urlOf(/^wss?$/, 'must be a ws:// or wss:// URL'),
  ),
  PULSAR_TOKEN: optional('token for the Pulsar WebSocket API (sent as a Bearer header, never logged)', z.string().min(1), { secret: true }),
  PULSAR_WS_MAX_FRAME_BYTES: setting(
    "largest WebSocket text frame the broker takes (its webSocketMaxTextFrameSize): a call's JSON travels base64-encoded in one frame, so at most about three quarters of it (786 KB at the default); a broker that says it takes less wins (read at startup from its admin API); a larger call gets 413",
    String(1024 * 1024),
    integer(16 * 1024, 1024 ** 3),
  ),
  PULSAR_ADMIN_URL: optional(
    "Pulsar's admin REST API, where replicated mode creates its topic and sets its retention (unset: the host and port of PULSAR_WS_URL)",
    httpUrl,
  ),
  REPLICATION_TOPIC: optional(
    'replicated mode: a persistent Pulsar topic (e.g. persistent://tg/registry/descriptors) that carries every write; each replica applies it in order to its own DATABASE_PATH (needs PULSAR_WS_URL)',
    z
      .string()
      .regex(/^persistent:\/\/[^/\s]+\/[^/\s]+\/[^\s]+$/, 'must be a persistent:// topic name: persistent://tenant/namespace/topic'),
  ),
  REPLICA_ID: optional(
    "replicated mode: this replica's name, stable across restarts (default: the host name and PORT)",
    z.string().regex(/^[A-Za-z0-9._:-]{1,200}$/, 'must be 1 to 200 letters, digits, dots, dashes, underscores or colons'),
  ),
  REPLICATION_APPLY_TIMEOUT_MS: setting(
    'replicated mode: how long a write waits to be applied on the replica that took it, after the broker persisted it (then 503; the write still takes effect)',
    '10000',
    integer(100, 600_000),
  ),
  REPLICATION_SECRET_FILE: optional(
    "replicated mode (required): a file with the 32-byte key every replica shares (base64, as `tool-registry replication-key` writes it, or hex), mode 0600; every message on the topic carries an HMAC-SHA256 under a key derived from it, and MCP servers' credentials travel the topic encrypted with it (AES-256-GCM)",
    replicationKeyFile,
  ),
  REPLICATION_ACCEPTED_SECRET_FILES: optional(
    'replicated mode: more key files, comma-separated, whose messages and credentials are accepted too (REPLICATION_SECRET_FILE alone signs and seals): for rotating the key (docs/replicas.md: Rotating the key)',
    list.pipe(z.array(replicationKeyFile)),
  ),
  REPLICATION_ACCEPT_UNSIGNED: setting(
    "replicated mode: which messages without a MAC are applied all the same: off (none), on (all: only while replicas of a version that does not sign still write, during an upgrade) or a registry index N (those at N or before: the topic's history from before the upgrade); give every replica the same value",
    'off',
    unsignedThrough,
  ),
  ANNOUNCE_TOPIC: optional(
    'a Pulsar topic where tool services announce themselves and send heartbeats (e.g. non-persistent://tg/registry/announcements); unset: announcements are not read (needs PULSAR_WS_URL)',
    z
      .string()
      .regex(/^(persistent|non-persistent):\/\/[^/\s]+\/[^/\s]+\/[^\s]+$/, 'must be a topic name: non-persistent://tenant/namespace/topic'),
  ),
  ANNOUNCER_KEYS_FILE: optional(
    'with ANNOUNCE_TOPIC (required): a JSON file binding each announcer to its public keys (JWK), the queues its services may use and the scopes its tools may require (docs/operators.md: Tool services that announce themselves); announcements are JWS signed with those keys',
    announcerKeysFile,
  ),
  ANNOUNCE_MAX_SKEW_S: setting(
    "how far an announcement's issued-at (iat) may be from this registry's clock, in seconds, before it is refused as too old or from the future",
    '120',
    integer(1, 3600),
  ),
  TOOL_CALL_TIMEOUT_MS: setting('how long a call waits for its answer unless the tool sets timeoutMs', '30000', integer(1, 600_000)),
  MAX_INFLIGHT_CALLS: setting('calls carried at once; past it calls get 503 with Retry-After', '1000', integer(1, 1_000_000)),
  MAX_INFLIGHT_CALLS_PER_CALLER: setting(
    'calls one caller (token issuer and subject, or client address) may have in flight at once; past it 503 with Retry-After',
    '100',
    integer(1, 1_000_000),
  ),
  OUTBOUND_ALLOW: optional(
    'CIDRs, addresses and host names the registry may connect to (tool hosts, MCP servers) though the outbound address policy refuses them by default, comma-separated, e.g. 169.254.170.2/32; the most specific rule wins (docs/security.md: Outbound address policy)',
    outboundRules,
  ),
  OUTBOUND_DENY: optional(
    "CIDRs, addresses and host names the registry must not connect to, comma-separated (0.0.0.0/0,::/0 with OUTBOUND_ALLOW=10.20.0.0/16: only that network); a deny beats an allow of the same specificity. The registry's own address and port are always refused",
    outboundRules,
  ),
  OUTBOUND_CA_FILE: optional(
    "PEM file of CA certificates the registry trusts for HTTPS targets (tool hosts, MCP servers) beside Node's own roots, e.g. a private CA; certificates are always verified",
    caCertificatesFile,
  ),
  BUS_CONNECT_TIMEOUT_MS: setting('how long opening a bus producer or subscription may take', '3000', integer(100, 60_000)),
  TRUSTGRAPH_CONFIG_SYNC: setting(
    "write every message-bus tool and tool service the registry stores or deletes to TrustGraph's config service over the bus, after the commit, retried with backoff (needs PULSAR_WS_URL)",
    'off',
    boolean,
  ),
  TRUSTGRAPH_CONFIG_ADOPT: setting(
    "at startup, import the tool-service items and tool-service tools TrustGraph's config holds that the registry lacks (needs PULSAR_WS_URL)",
    'off',
    boolean,
  ),
  TRUSTGRAPH_WORKSPACE: setting(
    'the TrustGraph workspace whose config is synced, adopted and exported',
    DEFAULT_WORKSPACE,
    z.string().min(1).max(200),
  ),
  TRUSTGRAPH_CONFIG_REQUEST_QUEUE: setting(
    "TrustGraph's config request queue: a queue id or a Pulsar topic",
    DEFAULT_CONFIG_REQUEST_QUEUE,
    PulsarQueueSchema,
  ),
  TRUSTGRAPH_CONFIG_RESPONSE_QUEUE: setting(
    "TrustGraph's config response queue: a queue id or a Pulsar topic",
    DEFAULT_CONFIG_RESPONSE_QUEUE,
    PulsarQueueSchema,
  ),
  TRUSTGRAPH_CONFIG_TIMEOUT_MS: setting(
    "how long a request to TrustGraph's config service waits for its answer",
    '10000',
    integer(100, 600_000),
  ),
  MCP_UPSTREAM_REFRESH_S: setting(
    "seconds between full refreshes of a registered MCP server's tool list, unless the server sets refreshIntervalS (list_changed notifications refresh it at once)",
    '300',
    integer(5, 86_400),
  ),
  MCP_UPSTREAM_WRITE_INTERVAL_MS: setting(
    "least milliseconds between two writes caused by one registered MCP server's syncs; doubles while it keeps changing (up to MCP_UPSTREAM_MAX_WRITE_INTERVAL_MS), back to this once a listing finds no change; 0 turns the bound off",
    '5000',
    integer(0, 3_600_000),
  ),
  MCP_UPSTREAM_MAX_WRITE_INTERVAL_MS: setting(
    "most milliseconds the interval between one MCP server's writes backs off to while it keeps changing",
    '300000',
    integer(0, 86_400_000),
  ),
  MCP_UPSTREAM_MAX_TOOLS: setting(
    'most tools one registered MCP server may list; a longer list is refused whole and what is stored stays',
    '10000',
    integer(1, 100_000),
  ),
  MCP_UPSTREAM_MAX_LIST_BYTES: setting(
    "most bytes of JSON a registered MCP server's tool list may take",
    String(16 * 1024 * 1024),
    integer(1024, 1024 ** 3),
  ),
  RATE_LIMIT_MAX: setting(
    'requests per window per caller (token sub, or client address); 0 turns limits off',
    '1200',
    integer(0, 10_000_000),
  ),
  RATE_LIMIT_WRITE_MAX: setting('writes per window per caller', '300', integer(0, 10_000_000)),
  RATE_LIMIT_WINDOW_S: setting('rate-limit window in seconds', '60', integer(1, 86_400)),
  AUDIT_RETENTION_DAYS: setting('days audit entries are kept', '90', integer(1, 36_500)),
  USAGE_RETENTION_DAYS: setting('days tool-call records (behind /stats usage) are kept', '90', integer(1, 36_500)),
  MAX_WAITERS: setting('blocking queries and change streams held at once; past it 503 with Retry-After', '20000', integer(1, 10_000_000)),
  MAX_WAITERS_PER_CALLER: setting(
    'blocking queries and change streams one caller (token iss and sub, or client address) may hold; past it 503',
    '100',
    integer(1, 10_000_000),
  ),
  CHANGE_STREAM_BUFFER_BYTES: setting(
    'bytes a change stream may have waiting for a client that does not read; past it the stream is cut off (the client resumes with Last-Event-ID)',
    String(1024 * 1024),
    integer(16 * 1024, 1024 ** 3),
  ),
  READY_MIN_FREE_BYTES: setting(
    'free room the database needs (on its disk, and under SQLite max_page_count) for /readyz to report it ready; below it writes would soon fail',
    String(16 * 1024 * 1024),
    integer(0, 2 ** 50),
  ),
  MCP_ALLOW_ANONYMOUS: setting(
    'let MCP clients without a token use /mcp, seeing what ANONYMOUS_DISCOVERY shows them (false: 401 with the resource-metadata link, so clients start OAuth)',
    'false',
    boolean,
  ),
  MCP_MAX_SESSIONS: setting('MCP sessions held at once; past it new sessions get 503 with Retry-After', '2000', integer(1, 1_000_000)),
  MCP_SESSIONS_PER_CALLER: setting(
    "MCP sessions one caller (token issuer and subject, or client address) may hold; a new one past it ends that caller's least recently used session",
    '16',
    integer(1, 10_000),
  ),
  MCP_SESSION_IDLE_S: setting('seconds an MCP session without requests or an open stream is kept', '3600', integer(10, 604_800)),
  MCP_PAGE_SIZE: setting('tools per page of MCP tools/list', '500', integer(1, 1000)),
  MCP_FORWARD_AUTHORIZATION: setting(
    "forward the MCP client's own token to HTTP tools that take it (false: a tool host never receives a token from /mcp, as the MCP security best practices require)",
    'false',
    boolean,
  ),
  MCP_SCOPE_CHALLENGE: setting(
    "answer an MCP tools/call outside the token's scopes with the authorization spec's HTTP 403 insufficient_scope challenge, for clients that re-authorise on it (false: a tools/call result with isError and the reason, which every client keeps its session with)",
    'false',
    boolean,
  ),
  MCP_REPLAY_EVENTS: setting(
    'events per MCP session kept for clients that reconnect with Last-Event-ID (0: streams carry no event ids and are not resumable)',
    '256',
    integer(0, 100_000),
  ),
  MCP_REPLAY_S: setting('seconds an MCP stream event stays replayable with Last-Event-ID', '300', integer(1, 86_400)),
  MCP_REPLAY_BYTES: setting(
    'bytes of events per MCP session kept for Last-Event-ID replay (the oldest go first)',
    String(256 * 1024),
    integer(0, 1024 ** 3),
  ),
  MCP_PROGRESS_INTERVAL_MS: setting(
    "milliseconds between an upstream MCP server's progress notifications relayed to a client during one call (the newest held back goes when the interval ends)",
    '100',
    integer(0, 60_000),
  ),
  MCP_PROGRESS_MAX: setting(
    "an upstream MCP server's progress notifications relayed to a client per call, at most",
    '1000',
    integer(0, 1_000_000),
  ),
  MCP_ALLOWED_ORIGINS: optional(
    'browser origins allowed to call /mcp, comma-separated (default: the origin of PUBLIC_URL); requests with another Origin get 403',
    list,
  ),
  ANONYMOUS_MAX_AGE_S: setting(
    'seconds shared caches may keep the anonymous discovery view (0: always revalidate)',
    '0',
    integer(0, 86_400),
  ),
  VIEW_CACHE_BYTES: setting(
    "bytes of serialised discovery views, pages and MCP lists kept in memory; auto: an eighth of the memory the process may use (its cgroup limit, or the machine's), from 64 MiB to 4 GiB",
    'auto',
    bytesOrAuto(0, 16 * 1024 ** 3, autoViewCacheBytes),
  ),
  METRICS_PORT: optional(
    'serve the Prometheus /metrics on this port instead, open to anyone who reaches it (for scrapers on a private network; 0 picks a free port); unset: /metrics on PORT, for tokens with the admin scope or STATS_READ_SCOPE',
    integer(0, 65535),
  ),
  METRICS_HOST: optional('address the METRICS_PORT listener binds (default HOST)', listenHost),
  METRICS_MAX_TOOL_LABELS: setting(
    'distinct tool names (and token subjects) the call metrics label apart; calls of further ones count under "(other)", so that series stay bounded',
    '1000',
    integer(1, 100_000),
  ),
  METRICS_SUBJECT_LABELS: setting(
    'also count calls per token subject (tool_registry_tool_calls_by_subject_total{sub}): subjects identify people or agents, so off unless an operator turns it on',
    'false',
    boolean,
  ),
  DASHBOARD: setting(
    'serve the live dashboard page at /dashboard (off: the page and its assets answer 404; the JSON routes it reads stay)',
    'on',
    boolean,
  ),
});
export type Env = z.infer<typeof EnvSchema>;
