/**
 * Which key verifies bearer tokens, and with which algorithms. With no key configured the
 * registry runs in dev mode: a random secret in a mode-0600 file next to the database, which
 * `tool-registry token` also reads, standing in for an authorization server on one machine.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Config, KeyMode } from '../config.js';
import { ConfigError } from '../config/errors.js';
import { JwksKeySource } from './jwks.js';

export interface TokenKeys {
  mode: KeyMode;
  /** HMAC secret or PEM public key; empty in JWKS mode. */
  key: string;
  /** The allowlist; never `none`, never HMAC with a public key. */
  algorithms: string[];
  /** Where the dev secret lives, in dev mode. */
  devSecretPath: string | undefined;
}

const DEV_SECRET_FILE = 'registry.secret';

/** The dev secret's file: beside the database, or nowhere for an in-memory database. */
export function devSecretPathFor(databasePath: string): string | undefined {
  if (databasePath === ':memory:' || databasePath.startsWith('file:')) return undefined;
  return join(dirname(resolve(databasePath)), DEV_SECRET_FILE);
}

/** Reads the dev secret, creating it (mode 0600, never overwriting) on first use. */
function readOrCreateDevSecret(path: string): { secret: string; created: boolean } {
  try {
    return { secret: readDevSecret(path), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const secret = randomBytes(48).toString('base64url');
  try {
    writeFileSync(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    // Another process created it between our read and write: use theirs.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { secret: readDevSecret(path), created: false };
    throw err;
  }
  chmodSync(path, 0o600); // the umask may have narrowed it further, never widened; make it exact
  return { secret, created: true };
}

function readDevSecret(path: string): string {
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new Error(`${path} is readable by other users (mode ${mode.toString(8)}); run chmod 600 on it`);
  }
  const secret = readFileSync(path, 'utf8').trim();
  if (secret.length < 32) throw new Error(`${path} does not hold a usable secret`);
  return secret;
}

function algorithmsForPublicKey(pem: string): string[] {
  let key;
  try {
    key = createPublicKey(pem);
  } catch {
    throw new ConfigError('JWT_PUBLIC_KEY: is not a valid PEM public key');
  }
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return ['RS256'];
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (curve === 'secp384r1') return ['ES384'];
      if (curve === 'secp521r1') return ['ES512'];
      return ['ES256'];
    }
    case 'ed25519':
      return ['EdDSA'];
    default:
      throw new ConfigError(`JWT_PUBLIC_KEY: ${key.asymmetricKeyType ?? 'this'} keys are not supported; use RSA, EC or Ed25519`);
  }
}

/** The key and allowed algorithms for the key mode the config decided (config.jwt.keyMode). */
export function resolveTokenKeys(config: Config): TokenKeys {
  const { keyMode, secret, publicKey, algorithms } = config.jwt;
  if (keyMode === 'jwks') {
    const allowed = algorithms ?? ['RS256', 'ES256'];
    if (allowed.some((a) => a.startsWith('HS'))) {
      throw new ConfigError('JWT_ALGORITHMS: HMAC algorithms cannot be used with keys from a JWKS (algorithm confusion)');
    }
    return { mode: 'jwks', key: '', algorithms: allowed, devSecretPath: undefined };
  }
  // The config sets the key of the mode it decided; '' would fail loudly at startup.
  if (keyMode === 'public-key') {
    const allowed = algorithms ?? algorithmsForPublicKey(publicKey ?? '');
    if (allowed.some((a) => a.startsWith('HS'))) {
      throw new ConfigError('JWT_ALGORITHMS: HMAC algorithms cannot be used with JWT_PUBLIC_KEY (algorithm confusion)');
    }
    return { mode: 'public-key', key: publicKey ?? '', algorithms: allowed, devSecretPath: undefined };
  }
  const allowedHmac = algorithms ?? ['HS256'];
  if (allowedHmac.some((a) => !a.startsWith('HS'))) {
    throw new ConfigError('JWT_ALGORITHMS: only HS256, HS384 or HS512 fit a shared secret; set JWT_PUBLIC_KEY for others');
  }
  if (keyMode === 'secret') return { mode: 'secret', key: secret ?? '', algorithms: allowedHmac, devSecretPath: undefined };
  const path = devSecretPathFor(config.databasePath);
  const devSecret = path ? readOrCreateDevSecret(path).secret : randomBytes(48).toString('base64url');
  return { mode: 'dev', key: devSecret, algorithms: allowedHmac, devSecretPath: path };
}

/** The JWKS key source in JWKS mode (not started), else undefined: the key is static. */
export function keySourceFor(
  config: Config,
  keys: TokenKeys,
  onFetchError?: (err: unknown, url: string) => void,
): JwksKeySource | undefined {
  if (keys.mode !== 'jwks') return undefined;
  return new JwksKeySource({
    jwksUrl: config.jwt.jwksUrl,
    issuer: config.jwt.issuer,
    algorithms: keys.algorithms,
    cooldownMs: config.jwt.jwksCooldownS * 1000,
    timeoutMs: config.jwt.jwksTimeoutMs,
    ...(onFetchError && { onError: onFetchError }),
  });
}
