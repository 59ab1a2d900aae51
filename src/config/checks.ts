/**
 * The checks settings are made of: setting() and optional() register a variable's help and
 * default (SETTING_META, which --help and docs/configuration.md read), and each check below turns
 * a variable's text into its value or into the one-line problem that stops startup.
 */
import { createPublicKey, createSecretKey, X509Certificate, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { totalmem } from 'node:os';
import { z } from 'zod';
import { AnnouncerBindingsFileSchema, type AnnouncerBinding, type AnnouncerJwk } from '../model/announcer-bindings.js';
import { parseOutboundRule, type OutboundRule } from '../model/outbound-address.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const JWT_ALGORITHMS = [
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
export interface SettingMeta {
  help: string;
  default?: string;
  secret?: true;
}

export const SETTING_META = z.registry<SettingMeta>();

/** An empty variable counts as unset (shells and compose files make `X=` easy to write). */
const unsetIfEmpty = (value: unknown) => (value === '' ? undefined : value);

/** A setting with a default: unset means the default, which goes through the same check. */
export function setting<Out>(help: string, defaultValue: string, check: z.ZodType<Out, string>) {
  return z.preprocess(unsetIfEmpty, check.prefault(defaultValue)).register(SETTING_META, { help, default: defaultValue });
}

/** A setting that may stay unset. */
export function optional<Out>(help: string, check: z.ZodType<Out, string>, meta: { secret?: true } = {}) {
  return z.preprocess(unsetIfEmpty, check.optional()).register(SETTING_META, { help, ...meta });
}

export const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be a whole number from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

/**
 * The memory this process may use: its cgroup's limit where one is set (containers), the
 * machine's otherwise. Node reports no limit as 0, or as 2^64 on cgroups without one.
 */
export function usableMemoryBytes(): number {
  const total = totalmem();
  const limit = process.constrainedMemory();
  return limit !== undefined && limit > 0 && limit < total ? limit : total;
}

/** `auto` (a value made from the machine) or a whole number of bytes from `min` to `max`. */
export const bytesOrAuto = (min: number, max: number, auto: () => number) =>
  z.string().transform((text, ctx) => {
    if (text === 'auto') return auto();
    const value = /^\d+$/.test(text) ? Number(text) : Number.NaN;
    if (Number.isInteger(value) && value >= min && value <= max) return value;
    ctx.addIssue({ code: 'custom', message: `must be auto or a whole number of bytes from ${min} to ${max}` });
    return z.NEVER;
  });

const BOOLEAN_WORDS = { true: true, false: false, '1': true, '0': false, on: true, off: false, yes: true, no: false } as const;
export const boolean = z
  .enum(Object.keys(BOOLEAN_WORDS) as [keyof typeof BOOLEAN_WORDS], { error: 'must be on or off (true/false, yes/no, 1/0)' })
  .transform((word) => BOOLEAN_WORDS[word]);

export const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== ''),
);

/** A URL with one of these schemes, and no user name or password in it (they would be logged with it). */
export const urlOf = (protocol: RegExp, error: string) =>
  z.url({ protocol, error }).refine((v) => {
    // Zod runs this after a failed URL check too, which has said what is wrong.
    const url = URL.parse(v);
    return url === null || (url.username === '' && url.password === '');
  }, 'must not carry a user name or password; give credentials in their own settings');
export const httpUrl = urlOf(/^https?$/, 'must be an http:// or https:// URL');

const HOST_NAME =
  /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/**
 * An address to listen on: an IP address, or a host name the resolver looks up. Checked here, so
 * that a value such as 256.1.1.1 or "a b" stops startup in words naming the setting, not later
 * as "Invalid URL" from the URL the registry builds of it. A name whose last label is a number
 * is an IPv4 address to a URL (and 256.1.1.1 a wrong one), so it is not taken as a name.
 */
export const listenHost = z.string().refine((v) => {
  if (isIP(v) !== 0) return true;
  const last = v.replace(/\.$/, '').split('.').at(-1) ?? '';
  return HOST_NAME.test(v) && !/^(\d+|0x[0-9a-f]*)$/i.test(last);
}, 'must be an IP address (IPv6 without brackets) or a host name (letters, digits, dots, dashes and underscores)');

export const pemKey = z
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
export const replicationKeyFile = z
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
export const unsignedThrough = z.string().transform((v, ctx): number => {
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
export const outboundRules = list.transform((entries, ctx): OutboundRule[] => {
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

export const roleScopes = z.string().transform((v, ctx) => {
  try {
    return z.record(z.string(), z.string()).parse(JSON.parse(v));
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be a JSON object of role to space-separated scopes' });
    return z.NEVER;
  }
});

/** An announcer's key as the listener uses it (src/announce/): its binding, and the algorithm it verifies. */
export interface TrustedAnnouncerKey {
  binding: AnnouncerBinding;
  key: KeyObject;
  alg: string;
}

/** The default algorithm of a key type: what an announcer signs with unless the JWK says otherwise. */
function defaultAlgorithm(jwk: AnnouncerJwk): string {
  if (jwk.kty === 'OKP') return 'EdDSA';
  if (jwk.kty === 'RSA') return 'RS256';
  return ({ 'P-384': 'ES384', 'P-521': 'ES512' } as Record<string, string>)[String(jwk['crv'])] ?? 'ES256';
}

/**
 * ANNOUNCER_KEYS_FILE (issue 29): the operator's bindings of announcers (src/model/announcer-bindings.ts),
 * each key checked to be a usable public key here, so that a bad one stops startup naming its
 * place in the file. Keyed by `kid`, which every announcement's header names.
 */
export const announcerKeysFile = z
  .string()
  .min(1)
  .transform((path, ctx): ReadonlyMap<string, TrustedAnnouncerKey> => {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      ctx.addIssue({ code: 'custom', message: code === undefined ? 'is not JSON' : `cannot be read (${code})` });
      return z.NEVER;
    }
    const parsed = AnnouncerBindingsFileSchema.safeParse(value);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(the file)'} ${issue.message}`);
      ctx.addIssue({ code: 'custom', message: `is not a file of announcer bindings: ${problems.join('; ')}` });
      return z.NEVER;
    }
    const keys = new Map<string, TrustedAnnouncerKey>();
    parsed.data.announcers.forEach((binding, i) => {
      binding.keys.forEach((jwk, j) => {
        try {
          const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
          keys.set(jwk.kid, { binding, key, alg: jwk.alg ?? defaultAlgorithm(jwk) });
        } catch {
          ctx.addIssue({ code: 'custom', message: `announcers.${i}.keys.${j} is not a usable public key` });
        }
      });
    });
    return keys;
  });

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/**
 * OUTBOUND_CA_FILE: a PEM file of one or more CA certificates, each parsed here so that a file
 * that is not one stops startup instead of failing every HTTPS call later. The PEM texts, for
 * the outbound connector's `ca` beside Node's own roots.
 */
export const caCertificatesFile = z
  .string()
  .min(1)
  .transform((path, ctx): string[] => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})` });
      return z.NEVER;
    }
    const certificates = text.match(PEM_CERTIFICATE) ?? [];
    if (certificates.length === 0) {
      ctx.addIssue({ code: 'custom', message: 'holds no PEM certificate (-----BEGIN CERTIFICATE-----)' });
      return z.NEVER;
    }
    for (const [i, pem] of certificates.entries()) {
      try {
        new X509Certificate(pem);
      } catch {
        ctx.addIssue({ code: 'custom', message: `certificate ${i + 1} of ${certificates.length} is not a valid X.509 certificate` });
        return z.NEVER;
      }
    }
    return certificates;
  });
