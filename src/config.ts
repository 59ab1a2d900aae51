/**
 * Settings come from environment variables, each with a matching CLI flag (`PUBLIC_URL` is
 * `--public-url`); a flag wins over the variable. A wrong value stops startup with one line
 * naming the variable.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ScopeSchema } from './model/schemas.js';
import { ANONYMOUS_POLICIES, type AnonymousPolicy } from './model/visibility.js';


const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const list = z
  .string()
  .transform((v) => v.split(',').map((s) => s.trim()).filter((s) => s !== ''));

/** Every setting: its variable name, its meaning (for --help and the README), and its check. */
export const SETTINGS = {
  PORT: { help: 'TCP port to listen on', default: '8006', schema: integer(0, 65535) },
  HOST: { help: 'address to listen on (0.0.0.0 for every interface)', default: '127.0.0.1', schema: z.string().min(1) },
  DATABASE_PATH: { help: 'SQLite database file (":memory:" for a throwaway one)', default: './data/registry.db', schema: z.string().min(1) },
  PUBLIC_URL: {
    help: 'base URL agents reach this registry at (default http://HOST:PORT); message-bus tools point at its invoke route',
    default: undefined,
    schema: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).transform((v) => new URL(v)),
  },
  ANONYMOUS_DISCOVERY: {
    help: 'what callers without a token see: full (every tool), public (tools needing no scope) or none (401)',
    default: 'full',
    schema: z.enum(ANONYMOUS_POLICIES, { error: `must be one of ${ANONYMOUS_POLICIES.join(', ')}` }),
  },
  ADMIN_SCOPE: { help: 'scope a token needs for every write', default: 'registry:write', schema: ScopeSchema },
  LOG_LEVEL: {
    help: 'pino log level',
    default: 'info',
    schema: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }),
  },
  JWT_SECRET: {
    help: 'shared secret for HS256 bearer tokens (at least 32 characters; HS384/HS512 with JWT_ALGORITHMS)',
    default: undefined,
    schema: z.string().min(32, 'must be at least 32 characters (256 bits) for HS256'),
  },
  JWT_PUBLIC_KEY: {
    help: 'PEM public key (RSA, EC or Ed25519; RS256, ES256/384/512 or EdDSA), or the path of a PEM file',
    default: undefined,
    schema: z.string().min(1).transform((v, ctx) => {
      if (v.includes('-----BEGIN')) return v;
      try {
        return readFileSync(v, 'utf8');
      } catch {
        ctx.addIssue({ code: 'custom', message: 'is neither a PEM key nor a readable PEM file' });
        return z.NEVER;
      }
    }),
  },
  JWT_ISSUER: {
    help: 'required token issuer (iss); without a secret or key, its metadata names the JWKS',
    default: undefined,
    schema: z.url({ error: 'must be the issuer URL' }),
  },
  JWT_AUDIENCE: {
    help: 'accepted token audiences (aud), comma-separated (default with a JWKS: RESOURCE_URL)',
    default: undefined,
    schema: list,
  },
  JWKS_URL: { help: 'URL of the authorization server\'s JWKS (instead of discovery from JWT_ISSUER)', default: undefined, schema: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }) },
  JWKS_COOLDOWN_S: { help: 'least seconds between JWKS fetches caused by unknown key ids', default: '30', schema: integer(0, 86_400) },
  JWKS_TIMEOUT_MS: { help: 'longest a JWKS or metadata fetch may take', default: '3000', schema: integer(100, 60_000) },
  JWT_TYP: {
    help: 'accepted token typ headers, comma-separated: at+jwt (RFC 9068), add JWT for older servers',
    default: 'at+jwt',
    schema: list.pipe(z.array(z.string().min(1)).min(1)),
  },
  ROLE_SCOPES: {
    help: 'JSON map of roles or groups claim values to scopes, e.g. {"registry-admin":"registry:write"}',
    default: undefined,
    schema: z.string().transform((v, ctx) => {
      try {
        return z.record(z.string(), z.string()).parse(JSON.parse(v));
      } catch {
        ctx.addIssue({ code: 'custom', message: 'must be a JSON object of role to space-separated scopes' });
        return z.NEVER;
      }
    }),
  },
  RESOURCE_URL: { help: 'this API\'s resource identifier (RFC 8707/9728; default PUBLIC_URL)', default: undefined, schema: z.url({ error: 'must be a URL' }) },
  AUTHORIZATION_SERVERS: { help: 'issuer URLs advertised in protected-resource metadata, comma-separated (default JWT_ISSUER)', default: undefined, schema: list },
  JWT_ALGORITHMS: {
    help: 'allowed token algorithms, comma-separated (default from the key: HS256, RS256 or ES256)',
    default: undefined,
    schema: list.pipe(
      z.array(z.enum(['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'], { error: 'is not a supported algorithm' })).min(1),
    ),
  },
  JWT_CLOCK_TOLERANCE_S: { help: 'seconds of clock skew allowed on exp and nbf', default: '30', schema: integer(0, 600) },
  BODY_LIMIT: { help: 'largest request body in bytes', default: String(1024 * 1024), schema: integer(1024, 512 * 1024 * 1024) },
  MAX_HEADER_SIZE: { help: 'largest request header block in bytes', default: String(16 * 1024), schema: integer(1024, 1024 * 1024) },
  MAX_CONNECTIONS: { help: 'most concurrent connections; further ones are refused', default: '10000', schema: integer(1, 1_000_000) },
  PULSAR_WS_URL: {
    help: 'Pulsar WebSocket API base URL for message-bus calls, e.g. ws://127.0.0.1:8080 (unset: such calls answer 503)',
    default: undefined,
    schema: z.url({ protocol: /^wss?$/, error: 'must be a ws:// or wss:// URL' }),
  },
  PULSAR_TOKEN: { help: 'token for the Pulsar WebSocket API (sent as a Bearer header, never logged)', default: undefined, schema: z.string().min(1) },
  TOOL_CALL_TIMEOUT_MS: { help: 'how long a call waits for its answer unless the tool sets timeoutMs', default: '30000', schema: integer(1, 600_000) },
  MAX_INFLIGHT_CALLS: { help: 'calls carried at once; past it calls get 503 with Retry-After', default: '1000', schema: integer(1, 1_000_000) },
  BUS_CONNECT_TIMEOUT_MS: { help: 'how long opening a bus producer or subscription may take', default: '3000', schema: integer(100, 60_000) },
  RATE_LIMIT_MAX: { help: 'requests per window per caller (token sub, or client address); 0 turns limits off', default: '1200', schema: integer(0, 10_000_000) },
  RATE_LIMIT_WRITE_MAX: { help: 'writes per window per caller', default: '300', schema: integer(0, 10_000_000) },
  RATE_LIMIT_WINDOW_S: { help: 'rate-limit window in seconds', default: '60', schema: integer(1, 86_400) },
  AUDIT_RETENTION_DAYS: { help: 'days audit entries are kept', default: '90', schema: integer(1, 36_500) },
  USAGE_RETENTION_DAYS: { help: 'days tool-call records (behind /stats usage) are kept', default: '90', schema: integer(1, 36_500) },
  MAX_WAITERS: { help: 'blocking queries and change streams held at once; past it 503 with Retry-After', default: '20000', schema: integer(1, 10_000_000) },
  ANONYMOUS_MAX_AGE_S: { help: 'seconds shared caches may keep the anonymous discovery view (0: always revalidate)', default: '0', schema: integer(0, 86_400) },
  VIEW_CACHE_BYTES: { help: 'bytes of serialised discovery views kept in memory', default: String(64 * 1024 * 1024), schema: integer(0, 16 * 1024 ** 3) },
} as const;

export type SettingName = keyof typeof SETTINGS;

export interface Config {
  port: number;
  host: string;
  databasePath: string;
  publicUrl: URL;
  anonymousDiscovery: AnonymousPolicy;
  adminScope: string;
  logLevel: (typeof LOG_LEVELS)[number];
  jwt: {
    secret: string | undefined;
    publicKey: string | undefined;
    issuer: string | undefined;
    audience: string[] | undefined;
    algorithms: string[] | undefined;
    clockToleranceS: number;
    jwksUrl: URL | undefined;
    jwksCooldownS: number;
    jwksTimeoutMs: number;
    acceptedTyp: string[];
    roleScopes: Record<string, string> | undefined;
  };
  /** This API's resource identifier (RFC 8707, RFC 9728). */
  resource: string;
  authorizationServers: string[];
  bridge: {
    pulsarWsUrl: string | undefined;
    pulsarToken: string | undefined;
    callTimeoutMs: number;
    maxInflight: number;
    connectTimeoutMs: number;
  };
  rateLimit: { max: number; writeMax: number; windowS: number };
  auditRetentionDays: number;
  usageRetentionDays: number;
  bodyLimit: number;
  maxHeaderSize: number;
  maxConnections: number;
  viewCacheBytes: number;
  maxWaiters: number;
  anonymousMaxAgeS: number;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `PUBLIC_URL` -> `--public-url`. */
export function flagOf(name: SettingName): string {
  return `--${name.toLowerCase().replaceAll('_', '-')}`;
}

const FLAG_TO_SETTING = new Map<string, SettingName>(
  (Object.keys(SETTINGS) as SettingName[]).map((name) => [flagOf(name), name]),
);

/**
 * Reads `--flag value` and `--flag=value` pairs for settings out of argv; returns the settings
 * and the arguments left over.
 */
export function settingsFromArgv(argv: readonly string[]): { values: Partial<Record<SettingName, string>>; rest: string[] } {
  const values: Partial<Record<SettingName, string>> = {};
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const eq = arg.indexOf('=');
    const flag = eq === -1 ? arg : arg.slice(0, eq);
    const name = FLAG_TO_SETTING.get(flag);
    if (!name) {
      rest.push(arg);
      continue;
    }
    const value = eq === -1 ? argv[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new ConfigError(`${flag} needs a value`);
    values[name] = value;
  }
  return { values, rest };
}

/** Builds the config from the environment and flags; throws a ConfigError naming the setting. */
export function loadConfig(env: NodeJS.ProcessEnv, flags: Partial<Record<SettingName, string>> = {}): Config {
  const raw = (name: SettingName): string | undefined => {
    const value = flags[name] ?? env[name];
    return value === undefined || value === '' ? SETTINGS[name].default : value;
  };
  const parsed: Partial<Record<SettingName, unknown>> = {};
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const value = raw(name);
    if (value === undefined) continue;
    const result = (SETTINGS[name].schema as z.ZodType).safeParse(value);
    if (!result.success) {
      const shown = name === 'JWT_SECRET' || name === 'PULSAR_TOKEN' ? '' : ` (got ${JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value)})`;
      throw new ConfigError(`${name}: ${result.error.issues[0]?.message ?? 'invalid value'}${shown}`);
    }
    parsed[name] = result.data;
  }
  const get = <T>(name: SettingName) => parsed[name] as T;
  const keySettings = (['JWT_SECRET', 'JWT_PUBLIC_KEY', 'JWKS_URL'] as const).filter((n) => parsed[n] !== undefined);
  if (keySettings.length > 1) {
    throw new ConfigError(`${keySettings[1] ?? ''}: set only one of JWT_SECRET, JWT_PUBLIC_KEY and JWKS_URL (got ${keySettings.join(' and ')})`);
  }
  const issuer = get<string | undefined>('JWT_ISSUER');
  const port = get<number>('PORT');
  const host = get<string>('HOST');
  const publicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  const publicUrl = get<URL | undefined>('PUBLIC_URL') ?? new URL(`http://${publicHost}:${port}`);
  return {
    port,
    host,
    databasePath: get<string>('DATABASE_PATH'),
    publicUrl,
    anonymousDiscovery: get<AnonymousPolicy>('ANONYMOUS_DISCOVERY'),
    adminScope: get<string>('ADMIN_SCOPE'),
    logLevel: get<Config['logLevel']>('LOG_LEVEL'),
    jwt: {
      secret: get<string | undefined>('JWT_SECRET'),
      publicKey: get<string | undefined>('JWT_PUBLIC_KEY'),
      issuer,
      audience: get<string[] | undefined>('JWT_AUDIENCE'),
      algorithms: get<string[] | undefined>('JWT_ALGORITHMS'),
      clockToleranceS: get<number>('JWT_CLOCK_TOLERANCE_S'),
      jwksUrl: get<string | undefined>('JWKS_URL') === undefined ? undefined : new URL(get<string>('JWKS_URL')),
      jwksCooldownS: get<number>('JWKS_COOLDOWN_S'),
      jwksTimeoutMs: get<number>('JWKS_TIMEOUT_MS'),
      acceptedTyp: get<string[]>('JWT_TYP').map((t) => t.toLowerCase().replace(/^application\//, '')),
      roleScopes: get<Record<string, string> | undefined>('ROLE_SCOPES'),
    },
    resource: get<string | undefined>('RESOURCE_URL') ?? publicUrl.href.replace(/\/$/, ''),
    authorizationServers: get<string[] | undefined>('AUTHORIZATION_SERVERS') ?? (issuer === undefined ? [] : [issuer]),
    bridge: {
      pulsarWsUrl: get<string | undefined>('PULSAR_WS_URL'),
      pulsarToken: get<string | undefined>('PULSAR_TOKEN'),
      callTimeoutMs: get<number>('TOOL_CALL_TIMEOUT_MS'),
      maxInflight: get<number>('MAX_INFLIGHT_CALLS'),
      connectTimeoutMs: get<number>('BUS_CONNECT_TIMEOUT_MS'),
    },
    rateLimit: { max: get<number>('RATE_LIMIT_MAX'), writeMax: get<number>('RATE_LIMIT_WRITE_MAX'), windowS: get<number>('RATE_LIMIT_WINDOW_S') },
    auditRetentionDays: get<number>('AUDIT_RETENTION_DAYS'),
    usageRetentionDays: get<number>('USAGE_RETENTION_DAYS'),
    bodyLimit: get<number>('BODY_LIMIT'),
    maxHeaderSize: get<number>('MAX_HEADER_SIZE'),
    maxConnections: get<number>('MAX_CONNECTIONS'),
    viewCacheBytes: get<number>('VIEW_CACHE_BYTES'),
    maxWaiters: get<number>('MAX_WAITERS'),
    anonymousMaxAgeS: get<number>('ANONYMOUS_MAX_AGE_S'),
  };
}

/** A config for tests and embedding: defaults, with overrides. */
export function defaultConfig(overrides: Partial<Record<SettingName, string>> = {}): Config {
  return loadConfig({}, overrides);
}
