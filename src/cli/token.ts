import { createSigner } from 'fast-jwt';
import { existsSync } from 'node:fs';
import { devSecretPathFor, resolveTokenKeys } from '../auth/keys.js';
import { loadConfig, type Config } from '../config.js';
import { parseCommandArgs } from './args.js';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `90`, `30s`, `15m`, `1h`, `7d` -> seconds. */
function parseTtl(text: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(text);
  if (!match) throw new UsageError(`--ttl must look like 30s, 15m, 1h or 7d (got "${text}")`);
  const seconds = Number(match[1]) * (UNITS[match[2] || 's'] ?? 1);
  if (seconds <= 0 || seconds > 366 * 86_400) throw new UsageError('--ttl must be between 1s and 366d');
  return seconds;
}

/**
 * Mints a token signed with the registry's own secret (JWT_SECRET, or the dev-mode secret
 * beside the database), standing in for an authorization server on one machine.
 */
export function mintToken(config: Config, claims: { scopes: string[]; sub: string; ttlS: number }): string {
  // Checked before resolving keys, which in dev mode would create the secret file.
  if (config.jwt.keyMode === 'public-key' || config.jwt.keyMode === 'jwks') {
    throw new UsageError(
      'the registry verifies tokens from an authorization server (JWT_PUBLIC_KEY, JWKS_URL or JWT_ISSUER); get tokens from it',
    );
  }
  const keys = resolveTokenKeys(config);
  const sign = createSigner({
    key: keys.key,
    algorithm: keys.algorithms[0] as 'HS256',
    expiresIn: claims.ttlS * 1000,
    header: { alg: keys.algorithms[0] ?? 'HS256', typ: 'at+jwt' },
    ...(config.jwt.issuer !== undefined && { iss: config.jwt.issuer }),
    ...(config.jwt.audience?.[0] !== undefined && { aud: config.jwt.audience[0] }),
    sub: claims.sub,
  });
  return sign({ scope: claims.scopes.join(' ') });
}

/** `tool-registry token --scope S [--scope S ...] [--sub NAME] [--ttl 1h] [settings]` */
export function runToken(args: readonly string[], io: CliIo): number {
  const { settings, options } = parseCommandArgs('token', args, {
    scope: { type: 'string', multiple: true },
    sub: { type: 'string' },
    ttl: { type: 'string' },
  });
  const config = loadConfig(io.env, settings);
  const scopes = (options.get('scope') ?? []).flatMap((s) => s.split(' ')).filter((s) => s !== '');
  const sub = options.get('sub')?.at(-1) ?? 'cli';
  const ttlS = parseTtl(options.get('ttl')?.at(-1) ?? '1h');
  const secretPath = config.jwt.keyMode === 'dev' ? devSecretPathFor(config.databasePath) : undefined;
  const secretExisted = secretPath !== undefined && existsSync(secretPath);
  io.stdout(`${mintToken(config, { scopes, sub, ttlS })}\n`);
  // Run in another folder than the registry's, this made a secret no running registry knows.
  if (secretPath !== undefined && !secretExisted) {
    io.stderr(
      `tool-registry: created a new dev secret at ${secretPath}; only a registry serving DATABASE_PATH=${config.databasePath} accepts this token\n`,
    );
  }
  return 0;
}
