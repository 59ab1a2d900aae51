/**
 * Settings come from environment variables, each with a matching CLI flag (`PUBLIC_URL` is
 * `--public-url`); a flag wins over the variable. One zod schema holds every variable with its
 * help, default and check (EnvSchema) and turns them into the nested config (ConfigSchema), so
 * the Config type is what validation returns. A wrong value stops startup with one line naming
 * the variable.
 */
import { createSecretKey, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { z } from 'zod';
import { PulsarQueueSchema, ScopeSchema } from './model/schemas.js';
import { parseOutboundRule, type OutboundRule } from './model/outbound-address.js';
import { DEFAULT_CONFIG_REQUEST_QUEUE, DEFAULT_CONFIG_RESPONSE_QUEUE, DEFAULT_WORKSPACE } from './model/trustgraph-config.js';
import { ANONYMOUS_POLICIES } from './model/visibility.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const JWT_ALGORITHMS = [
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

/** What --help and docs/configuration.md say about a setting; `secret` values are never echoed in errors. */
interface SettingMeta {
  help: string;
  default?: string;
  secret?: true;
}

const SETTING_META = z.registry<SettingMeta>();

/** An empty variable counts as unset (shells and compose files make `X=` easy to write). */
const unsetIfEmpty = (value: unknown) => (value === '' ? undefined : value);

/** A setting with a default: unset means the default, which goes through the same check. */
function setting<Out>(help: string, defaultValue: string, check: z.ZodType<Out, string>) {
  return z.preprocess(unsetIfEmpty, check.prefault(defaultValue)).register(SETTING_META, { help, default: defaultValue });
}

/** A setting that may stay unset. */
function optional<Out>(help: string, check: z.ZodType<Out, string>, meta: { secret?: true } = {}) {
  return z.preprocess(unsetIfEmpty, check.optional()).register(SETTING_META, { help, ...meta });
}

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const BOOLEAN_WORDS = { true: true, false: false, '1': true, '0': false, on: true, off: false, yes: true, no: false } as const;
const boolean = z
  .enum(Object.keys(BOOLEAN_WORDS) as [keyof typeof BOOLEAN_WORDS], { error: 'must be on or off (true/false, yes/no, 1/0)' })
  .transform((word) => BOOLEAN_WORDS[word]);

const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== ''),
);

/** A URL with one of these schemes, and no user name or password in it (they would be logged with it). */
const urlOf = (protocol: RegExp, error: string) =>
  z.url({ protocol, error }).refine((v) => {
    // Zod runs this after a failed URL check too, which has said what is wrong.
    const url = URL.parse(v);
    return url === null || (url.username === '' && url.password === '');
  }, 'must not carry a user name or password; give credentials in their own settings');
const httpUrl = urlOf(/^https?$/, 'must be an http:// or https:// URL');

const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/**
 * An address to listen on: an IP address, or a host name the resolver looks up. Checked here, so
 * that a value such as 256.1.1.1 or "a b" stops startup in words naming the setting, not later
 * as "Invalid URL" from the URL the registry builds of it. A name whose last label is a number
 * is an IPv4 address to a URL (and 256.1.1.1 a wrong one), so it is not taken as a name.
 */
const listenHost = z.string().refine((v) => {
  if (isIP(v) !== 0) return true;
  const last = v.replace(/\.$/, '').split('.').at(-1) ?? '';
  return HOST_NAME.test(v) && !/^(\d+|0x[0-9a-f]*)$/i.test(last);
}, 'must be an IP address (IPv6 without brackets) or a host name (letters, digits, dots, dashes and underscores)');

const pemKey = z
  .string()
  .min(1)
  .transform((v, ctx) => {
    if (v.includes('-----BEGIN')) return v;
    try {
      return readFileSync(v, 'utf8');
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is neither a PEM key nor a readable PEM file' });
      return z.NEVER;
    }
  });

/**
 * REPLICATION_SECRET_FILE: a file of 32 bytes, as 44 characters of base64 (what `tool-registry
 * replication-key` and `openssl rand -base64 32` write), 64 hex digits, or the raw bytes; a
 * trailing newline is fine. Refused when group or others may read or write it (as the dev secret
 * and ssh keys are): a key others can read lets them read every MCP credential on the topic.
 * A KeyObject, so that neither a log line nor JSON of the config can show the key.
 */
const replicationKeyFile = z
  .string()
  .min(1)
  .transform((path, ctx): KeyObject => {
    let bytes: Buffer;
    try {
      const mode = statSync(path).mode & 0o777;
      if (process.platform !== 'win32' && (mode & 0o077) !== 0) {
        ctx.addIssue({
          code: 'custom',
          message: `is open to other users (mode ${mode.toString(8).padStart(3, '0')}); run chmod 600 on it`,
        });
        return z.NEVER;
      }
      bytes = readFileSync(path);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` });
      return z.NEVER;
    }
    const key = replicationKeyBytes(bytes);
    if (key === undefined) {
      ctx.addIssue({
        code: 'custom',
        message:
          'must hold a 32-byte key: 44 characters of base64 (tool-registry replication-key writes one), 64 hex digits or 32 raw bytes',
      });
      return z.NEVER;
    }
    return createSecretKey(key);
  });

/**
 * REPLICATION_ACCEPT_UNSIGNED: which messages without a MAC a replica still applies, as the
 * highest registry index: 0 (`off`) none, Infinity (`on`) all, or a whole number N: those at
 * index N or before (the topic's history from before its replicas signed).
 */
const unsignedThrough = z.string().transform((v, ctx): number => {
  const word = v.trim().toLowerCase();
  if (word === 'off') return 0;
  if (word === 'on') return Infinity;
  if (/^\d{1,16}$/.test(word) && Number.isSafeInteger(Number(word))) return Number(word);
  ctx.addIssue({
    code: 'custom',
    message: 'must be off, on, or the registry index of the last message that may carry no MAC (a whole number)',
  });
  return z.NEVER;
});

/** The 32 key bytes a key file holds, or undefined. */
function replicationKeyBytes(file: Buffer): Buffer | undefined {
  if (file.length === 32) return file;
  const text = file.toString('latin1').trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) return Buffer.from(text, 'base64');
  return undefined;
}

/** OUTBOUND_ALLOW, OUTBOUND_DENY: comma-separated CIDRs, addresses and host names (src/model/outbound-address.ts). */
const outboundRules = list.transform((entries, ctx): OutboundRule[] => {
  const rules: OutboundRule[] = [];
  for (const entry of entries) {
    const rule = parseOutboundRule(entry);
    if (typeof rule === 'string')
      ctx.addIssue({
        code: 'custom',
        message: `${rule}; give CIDRs (10.20.0.0/16), addresses or host names (*.corp.example), comma-separated`,
      });
    else rules.push(rule);
  }
  return rules;
});

const roleScopes = z.string().transform((v, ctx) => {
  try {
    return z.record(z.string(), z.string()).parse(JSON.parse(v));
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object of role to space-separated scopes' });
    return z.NEVER;
  }
});

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
  ANNOUNCE_SCOPE: setting("the scope a tool service's announcement token must hold", 'registry:announce', z.string().min(1).max(200)),
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
  MCP_ALLOWED_ORIGINS: optional(
    'browser origins allowed to call /mcp, comma-separated (default: the origin of PUBLIC_URL); requests with another Origin get 403',
    list,
  ),
  ANONYMOUS_MAX_AGE_S: setting(
    'seconds shared caches may keep the anonymous discovery view (0: always revalidate)',
    '0',
    integer(0, 86_400),
  ),
  VIEW_CACHE_BYTES: setting('bytes of serialised discovery views kept in memory', String(64 * 1024 * 1024), integer(0, 16 * 1024 ** 3)),
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

/** Where bearer-token keys come from; decided here once, read by auth and the CLI. */
export type KeyMode = 'secret' | 'public-key' | 'jwks' | 'dev';

const KEY_SETTINGS = ['JWT_SECRET', 'JWT_PUBLIC_KEY', 'JWKS_URL'] as const;

function keyModeOf(env: Env): KeyMode {
  if (env.JWKS_URL !== undefined) return 'jwks';
  if (env.JWT_PUBLIC_KEY !== undefined) return 'public-key';
  if (env.JWT_SECRET !== undefined) return 'secret';
  // An issuer alone: its metadata names the JWKS.
  return env.JWT_ISSUER !== undefined ? 'jwks' : 'dev';
}

/** The settings as the code reads them. */
export const ConfigSchema = EnvSchema.transform((env, ctx) => {
  const keySettings = KEY_SETTINGS.filter((name) => env[name] !== undefined);
  if (keySettings.length > 1) {
    ctx.addIssue({
      code: 'custom',
      path: [keySettings[1] ?? 'JWKS_URL'],
      message: `set only one of JWT_SECRET, JWT_PUBLIC_KEY and JWKS_URL (got ${keySettings.join(' and ')})`,
      params: { echo: false },
    });
    return z.NEVER;
  }
  const trustGraphBus = (['TRUSTGRAPH_CONFIG_SYNC', 'TRUSTGRAPH_CONFIG_ADOPT'] as const).find((name) => env[name]);
  if (trustGraphBus !== undefined && env.PULSAR_WS_URL === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: [trustGraphBus],
      message: "needs PULSAR_WS_URL: TrustGraph's config service is reached over the bus",
    });
    return z.NEVER;
  }
  if (env.ANNOUNCE_TOPIC !== undefined && env.PULSAR_WS_URL === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['ANNOUNCE_TOPIC'],
      message: 'needs PULSAR_WS_URL: tool services announce themselves on the broker',
    });
    return z.NEVER;
  }
  if (env.REPLICATION_TOPIC !== undefined && env.PULSAR_WS_URL === undefined) {
    ctx.addIssue({ code: 'custom', path: ['REPLICATION_TOPIC'], message: 'needs PULSAR_WS_URL: replicas meet on the broker' });
    return z.NEVER;
  }
  if (env.REPLICATION_SECRET_FILE !== undefined && env.REPLICATION_TOPIC === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['REPLICATION_SECRET_FILE'],
      message: 'needs REPLICATION_TOPIC: the key encrypts what travels the replication topic',
    });
    return z.NEVER;
  }
  if (env.REPLICATION_ACCEPTED_SECRET_FILES !== undefined && env.REPLICATION_TOPIC === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['REPLICATION_ACCEPTED_SECRET_FILES'],
      message: 'needs REPLICATION_TOPIC: the keys authenticate what travels the replication topic',
    });
    return z.NEVER;
  }
  if (env.REPLICATION_TOPIC !== undefined && env.REPLICATION_SECRET_FILE === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['REPLICATION_SECRET_FILE'],
      message:
        'is required in replicated mode (REPLICATION_TOPIC): every message on the topic is signed with the key every replica shares; `tool-registry replication-key <file>` writes one',
    });
    return z.NEVER;
  }
  if (
    keyModeOf(env) === 'jwks' &&
    env.JWKS_URL === undefined &&
    env.JWT_ISSUER !== undefined &&
    !/^https?:$/.test(URL.parse(env.JWT_ISSUER)?.protocol ?? '')
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['JWT_ISSUER'],
      message: 'must be an http:// or https:// URL to find its JWKS from (or set JWKS_URL, JWT_SECRET or JWT_PUBLIC_KEY)',
    });
    return z.NEVER;
  }
  if (env.METRICS_PORT !== undefined && env.METRICS_PORT !== 0 && env.METRICS_PORT === env.PORT) {
    ctx.addIssue({ code: 'custom', path: ['METRICS_PORT'], message: 'must differ from PORT (unset it to serve /metrics on PORT)' });
    return z.NEVER;
  }
  const host = env.HOST;
  // A wildcard address is not one to reach the registry at; an IPv6 literal needs brackets.
  const publicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  // URL.parse, not new URL: whatever the checks above let through, a URL that cannot be made
  // is a problem of HOST, in one line, not a TypeError naming nothing.
  const publicUrl = env.PUBLIC_URL ?? URL.parse(`http://${publicHost}:${env.PORT}`);
  if (publicUrl === null) {
    ctx.addIssue({
      code: 'custom',
      path: ['HOST'],
      message: 'cannot be named in a URL, which the registry gives out (http://HOST:PORT); set PUBLIC_URL',
    });
    return z.NEVER;
  }
  const resource = env.RESOURCE_URL ?? publicUrl.href.replace(/\/$/, '');
  return {
    port: env.PORT,
    host,
    portFile: env.PORT_FILE,
    databasePath: env.DATABASE_PATH,
    publicUrl,
    anonymousDiscovery: env.ANONYMOUS_DISCOVERY,
    adminScope: env.ADMIN_SCOPE,
    /** Who sees what (src/model/visibility.ts). */
    visibility: { anonymous: env.ANONYMOUS_DISCOVERY, adminScope: env.ADMIN_SCOPE, readScope: env.STATS_READ_SCOPE },
    logLevel: env.LOG_LEVEL,
    jwt: {
      keyMode: keyModeOf(env),
      secret: env.JWT_SECRET,
      publicKey: env.JWT_PUBLIC_KEY,
      issuer: env.JWT_ISSUER,
      audience: env.JWT_AUDIENCE,
      algorithms: env.JWT_ALGORITHMS,
      clockToleranceS: env.JWT_CLOCK_TOLERANCE_S,
      jwksUrl: env.JWKS_URL,
      jwksCooldownS: env.JWKS_COOLDOWN_S,
      jwksTimeoutMs: env.JWKS_TIMEOUT_MS,
      acceptedTyp: env.JWT_TYP,
      roleScopes: env.ROLE_SCOPES,
    },
    /** This API's resource identifier (RFC 8707, RFC 9728). */
    resource,
    authorizationServers: env.AUTHORIZATION_SERVERS ?? (env.JWT_ISSUER === undefined ? [] : [env.JWT_ISSUER]),
    /** Self-announcing tool services (src/announce/), or undefined when not read. */
    announce: env.ANNOUNCE_TOPIC === undefined ? undefined : { topic: env.ANNOUNCE_TOPIC, scope: env.ANNOUNCE_SCOPE },
    /** Replicated mode (src/replication/), or undefined for one process. */
    replication:
      env.REPLICATION_TOPIC === undefined || env.PULSAR_WS_URL === undefined || env.REPLICATION_SECRET_FILE === undefined
        ? undefined
        : {
            topic: env.REPLICATION_TOPIC,
            replicaId: env.REPLICA_ID ?? `${hostname()}-${env.PORT}`,
            url: env.PULSAR_WS_URL,
            adminUrl: env.PULSAR_ADMIN_URL,
            applyTimeoutMs: env.REPLICATION_APPLY_TIMEOUT_MS,
            /** The key every message is signed with (a MAC key derived from it) and MCP servers' credentials are encrypted with. */
            secretKey: env.REPLICATION_SECRET_FILE,
            /** Further keys whose messages and credentials are accepted (rotation). */
            acceptedKeys: env.REPLICATION_ACCEPTED_SECRET_FILES ?? [],
            /** Messages without a MAC at or before this registry index are applied anyway (0: none). */
            acceptUnsignedThrough: env.REPLICATION_ACCEPT_UNSIGNED,
          },
    /** The outbound address policy's rules beyond its defaults (src/bridge/outbound-policy.ts). */
    outbound: { allow: env.OUTBOUND_ALLOW ?? [], deny: env.OUTBOUND_DENY ?? [] },
    bridge: {
      pulsarWsUrl: env.PULSAR_WS_URL,
      pulsarToken: env.PULSAR_TOKEN,
      callTimeoutMs: env.TOOL_CALL_TIMEOUT_MS,
      maxInflight: env.MAX_INFLIGHT_CALLS,
      maxInflightPerCaller: env.MAX_INFLIGHT_CALLS_PER_CALLER,
      connectTimeoutMs: env.BUS_CONNECT_TIMEOUT_MS,
      /** The frame limit a call's message must fit, base64 inside (src/bridge/pulsar-ws.ts). */
      maxFrameBytes: env.PULSAR_WS_MAX_FRAME_BYTES,
    },
    /** TrustGraph's config service (src/trustgraph/): live sync and adoption over the bus. */
    trustgraph: {
      sync: env.TRUSTGRAPH_CONFIG_SYNC,
      adopt: env.TRUSTGRAPH_CONFIG_ADOPT,
      workspace: env.TRUSTGRAPH_WORKSPACE,
      requestQueue: env.TRUSTGRAPH_CONFIG_REQUEST_QUEUE,
      responseQueue: env.TRUSTGRAPH_CONFIG_RESPONSE_QUEUE,
      timeoutMs: env.TRUSTGRAPH_CONFIG_TIMEOUT_MS,
    },
    rateLimit: { max: env.RATE_LIMIT_MAX, writeMax: env.RATE_LIMIT_WRITE_MAX, windowS: env.RATE_LIMIT_WINDOW_S },
    auditRetentionDays: env.AUDIT_RETENTION_DAYS,
    usageRetentionDays: env.USAGE_RETENTION_DAYS,
    bodyLimit: env.BODY_LIMIT,
    importBodyLimit: env.IMPORT_BODY_LIMIT,
    maxHeaderSize: env.MAX_HEADER_SIZE,
    jsonMaxDepth: env.JSON_MAX_DEPTH,
    maxConnections: env.MAX_CONNECTIONS,
    connections: {
      maxPerAddress: env.MAX_CONNECTIONS_PER_ADDRESS ?? Math.max(1, Math.floor(env.MAX_CONNECTIONS / 10)),
      probeHeadroom: env.PROBE_CONNECTIONS,
      headersTimeoutMs: env.HEADERS_TIMEOUT_MS,
      requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: env.KEEP_ALIVE_TIMEOUT_MS,
      idleTimeoutMs: env.IDLE_TIMEOUT_MS,
      shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
    },
    viewCacheBytes: env.VIEW_CACHE_BYTES,
    /** Registered upstream MCP servers (src/registry/mcp-sync.ts). */
    mcpUpstream: {
      refreshS: env.MCP_UPSTREAM_REFRESH_S,
      maxTools: env.MCP_UPSTREAM_MAX_TOOLS,
      maxListBytes: env.MCP_UPSTREAM_MAX_LIST_BYTES,
      writeIntervalMs: env.MCP_UPSTREAM_WRITE_INTERVAL_MS,
      maxWriteIntervalMs: Math.max(env.MCP_UPSTREAM_WRITE_INTERVAL_MS, env.MCP_UPSTREAM_MAX_WRITE_INTERVAL_MS),
    },
    maxWaiters: env.MAX_WAITERS,
    maxWaitersPerCaller: env.MAX_WAITERS_PER_CALLER,
    changeStreamBufferBytes: env.CHANGE_STREAM_BUFFER_BYTES,
    anonymousMaxAgeS: env.ANONYMOUS_MAX_AGE_S,
    readyMinFreeBytes: env.READY_MIN_FREE_BYTES,
    /** Prometheus metrics (src/http/plugins/metrics.ts). */
    metrics: {
      /** A listener of its own, open; undefined: /metrics on the main port for operators. */
      port: env.METRICS_PORT,
      host: env.METRICS_HOST ?? host,
      maxToolLabels: env.METRICS_MAX_TOOL_LABELS,
      subjectLabels: env.METRICS_SUBJECT_LABELS,
    },
    /** The /dashboard page (src/http/routes/dashboard.ts). */
    dashboard: { enabled: env.DASHBOARD },
    mcp: {
      /** The MCP endpoint's own resource identifier (RFC 8707): what MCP clients ask tokens for. */
      resource: `${resource.replace(/\/+$/, '')}/mcp`,
      allowAnonymous: env.MCP_ALLOW_ANONYMOUS,
      maxSessions: env.MCP_MAX_SESSIONS,
      sessionsPerCaller: env.MCP_SESSIONS_PER_CALLER,
      sessionIdleMs: env.MCP_SESSION_IDLE_S * 1000,
      pageSize: env.MCP_PAGE_SIZE,
      forwardAuthorization: env.MCP_FORWARD_AUTHORIZATION,
      allowedOrigins: env.MCP_ALLOWED_ORIGINS ?? [publicUrl.origin],
    },
  };
});
export type Config = z.infer<typeof ConfigSchema>;

export type SettingName = keyof typeof EnvSchema.shape;
/** Setting values as text, as flags and the environment give them. */
export type Settings = Partial<Record<SettingName, string>>;

export const SETTING_NAMES: readonly SettingName[] = EnvSchema.keyof().options;

export interface SettingInfo {
  help: string;
  /** The default as a user would write it; undefined when the setting may stay unset. */
  default: string | undefined;
  /** Never echoed in error messages. */
  secret: boolean;
}

function settingInfo(name: SettingName): SettingInfo {
  const meta = SETTING_META.get(EnvSchema.shape[name]);
  if (meta === undefined) throw new Error(`setting ${name} has no help`);
  return { help: meta.help, default: meta.default, secret: meta.secret === true };
}

/** Every setting's help, default and secrecy, read from EnvSchema (for --help and docs/configuration.md). */
export const SETTINGS = Object.fromEntries(SETTING_NAMES.map((name) => [name, settingInfo(name)])) as Readonly<
  Record<SettingName, SettingInfo>
>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `PUBLIC_URL` -> `--public-url`. */
export function flagOf(name: SettingName): string {
  return `--${name.toLowerCase().replaceAll('_', '-')}`;
}

const isSettingName = (key: PropertyKey | undefined): key is SettingName => typeof key === 'string' && Object.hasOwn(EnvSchema.shape, key);

/** Builds the config from the environment and flags; throws a ConfigError naming the setting. */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Settings = {}): Config {
  const input: Settings = {};
  for (const name of SETTING_NAMES) {
    const value = flags[name] ?? env[name];
    if (value !== undefined) input[name] = value;
  }
  const result = ConfigSchema.safeParse(input);
  if (result.success) return result.data;
  // Only the first problem: one line that names the variable, as an operator reads it.
  const issue = result.error.issues[0];
  const name = issue?.path[0];
  // Every issue names its setting; should one not, it is still one line.
  if (issue === undefined || !isSettingName(name)) throw new ConfigError(`settings: ${issue?.message ?? 'not valid'}`);
  const value = input[name];
  // Secrets are never echoed, nor is the value when the problem is another setting beside it.
  const echoed = value !== undefined && !SETTINGS[name].secret && !(issue.code === 'custom' && issue.params?.['echo'] === false);
  const safe = value === undefined ? undefined : withoutUserinfo(value);
  const shown = echoed && safe !== undefined ? ` (got ${JSON.stringify(safe.length > 80 ? `${safe.slice(0, 80)}...` : safe)})` : '';
  throw new ConfigError(`${name}: ${issue.message}${shown}`);
}

/** Where a listener binds, and the settings that say so. */
interface ListenAddress {
  port: number;
  host: string;
  portSetting: SettingName;
  hostSetting: SettingName;
}

/** One line naming the setting to change when an address cannot be listened on; undefined for other failures. */
export function listenProblem(err: unknown, { port, host, portSetting, hostSetting }: ListenAddress): ConfigError | undefined {
  switch ((err as NodeJS.ErrnoException | null)?.code) {
    case 'EADDRINUSE':
      return new ConfigError(`${portSetting}: ${port} is already in use on ${host}`);
    case 'EACCES':
      return new ConfigError(`${portSetting}: ${port} may not be listened on by this user on ${host}`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return new ConfigError(`${hostSetting}: ${host} is not an address of this machine`);
    default:
      return undefined;
  }
}

/** A setting's value as an error may echo it: a URL's user name and password become `***`. */
export function withoutUserinfo(value: string): string {
  return value.replace(/\/\/[^/?#@]*@/, '//***@');
}

/** A config for tests and embedding: defaults, with overrides. */
export function defaultConfig(overrides: Settings = {}): Config {
  return loadConfig({}, overrides);
}
