/**
 * Settings come from environment variables, each with a matching CLI flag (`PUBLIC_URL` is
 * `--public-url`); a flag wins over the variable. One zod schema holds every variable with its
 * help, default and check (EnvSchema, in src/config/env.ts, of the checks in src/config/checks.ts)
 * and turns them into the nested config (ConfigSchema, here), so the Config type is what
 * validation returns. A wrong value stops startup with one line naming the variable
 * (src/config/errors.ts); src/config/settings.ts names the settings for --help and the flags.
 */
import { hostname } from 'node:os';
import { z } from 'zod';
import { ConfigError, withoutUserinfo } from './config/errors.js';
import { EnvSchema, type Env } from './config/env.js';
import { isSettingName, SETTING_NAMES, SETTINGS, type Settings } from './config/settings.js';

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
  if (env.ANNOUNCE_TOPIC !== undefined && env.ANNOUNCER_KEYS_FILE === undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['ANNOUNCE_TOPIC'],
      message: 'needs ANNOUNCER_KEYS_FILE: announcements are taken only signed by a key an operator bound to what it may announce',
    });
    return z.NEVER;
  }
  if (env.ANNOUNCER_KEYS_FILE !== undefined && env.ANNOUNCE_TOPIC === undefined) {
    ctx.addIssue({ code: 'custom', path: ['ANNOUNCER_KEYS_FILE'], message: 'needs ANNOUNCE_TOPIC: it says who may announce there' });
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
    /** The key file sealing outbound credentials at rest; undefined: beside the database (src/store/credential-box.ts). */
    credentialsKeyFile: env.CREDENTIALS_KEY_FILE,
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
    announce:
      env.ANNOUNCE_TOPIC === undefined || env.ANNOUNCER_KEYS_FILE === undefined
        ? undefined
        : { topic: env.ANNOUNCE_TOPIC, announcers: env.ANNOUNCER_KEYS_FILE, maxSkewS: env.ANNOUNCE_MAX_SKEW_S },
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
    /**
     * The outbound address policy's rules beyond its defaults (src/bridge/outbound-policy.ts),
     * and CA certificates trusted for HTTPS targets beside Node's roots (PEM texts).
     */
    outbound: { allow: env.OUTBOUND_ALLOW ?? [], deny: env.OUTBOUND_DENY ?? [], ca: env.OUTBOUND_CA_FILE ?? [] },
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
    /** The largest OpenAPI document a source may have (issue 30). */
    openApiMaxDocumentBytes: env.OPENAPI_MAX_DOCUMENT_BYTES,
    openApiRefreshS: env.OPENAPI_REFRESH_S,
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
      scopeChallenge: env.MCP_SCOPE_CHALLENGE,
      /** Last-Event-ID replay per session (src/http/mcp/event-store.ts); `maxEvents` 0 turns it off. */
      replay: { maxEvents: env.MCP_REPLAY_EVENTS, maxAgeMs: env.MCP_REPLAY_S * 1000, maxBytes: env.MCP_REPLAY_BYTES },
      /** An upstream's progress relayed to a client, bounded per call (src/http/mcp/progress.ts). */
      progress: { minIntervalMs: env.MCP_PROGRESS_INTERVAL_MS, max: env.MCP_PROGRESS_MAX },
      allowedOrigins: env.MCP_ALLOWED_ORIGINS ?? [publicUrl.origin],
    },
  };
});
export type Config = z.infer<typeof ConfigSchema>;

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

/** A config for tests and embedding: defaults, with overrides. */
export function defaultConfig(overrides: Settings = {}): Config {
  return loadConfig({}, overrides);
}
