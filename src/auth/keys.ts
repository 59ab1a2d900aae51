/**
 * Which key verifies bearer tokens, and with which algorithms. With no key configured the
 * registry runs in dev mode: a random secret in a mode-0600 file next to the database, which
 * `tool-registry token` also reads, standing in for an authorization server on one machine.
 */
import { createPublicKey, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError, type Config } from '../config.js';
import type { TokenVerifier } from './caller.js';
import { JwksKeySource } from './jwks.js';
import { createTokenVerifier } from './verifier.js';

export interface TokenKeys {
  mode: 'secret' | 'public-key' | 'jwks' | 'dev';
  /** HMAC secret or PEM public key; empty in JWKS mode. */
  key: string;
  /** The allowlist; never `none`, never HMAC with a public key. */
  algorithms: string[];
  /** Where the dev secret lives, in dev mode. */
  devSecretPath: string | undefined;
}

export const DEV_SECRET_FILE = 'registry.secret';

/** The dev secret's file: beside the database, or nowhere for an in-memory database. */
export function devSecretPathFor(databasePath: string): string | undefined {
  if (databasePath === ':memory:' || databasePath.startsWith('file:')) return undefined;
  return join(dirname(resolve(databasePath)), DEV_SECRET_FILE);
}

/** Reads the dev secret, creating it (mode 0600, never overwriting) on first use. */
export function readOrCreateDevSecret(path: string): { secret: string; created: boolean } {
  try {
    return { secret: readDevSecret(path), created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dirname(path), { recursive: true });
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

export function readDevSecret(path: string): string {
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

export function resolveTokenKeys(config: Config): TokenKeys {
  const { secret, publicKey, algorithms, jwksUrl, issuer } = config.jwt;
  if (jwksUrl !== undefined || (secret === undefined && publicKey === undefined && issuer !== undefined)) {
    const allowed = algorithms ?? ['RS256', 'ES256'];
    if (allowed.some((a) => a.startsWith('HS'))) {
      throw new ConfigError('JWT_ALGORITHMS: HMAC algorithms cannot be used with keys from a JWKS (algorithm confusion)');
    }
    return { mode: 'jwks', key: '', algorithms: allowed, devSecretPath: undefined };
  }
  if (publicKey !== undefined) {
    const allowed = algorithms ?? algorithmsForPublicKey(publicKey);
    if (allowed.some((a) => a.startsWith('HS'))) {
      throw new ConfigError('JWT_ALGORITHMS: HMAC algorithms cannot be used with JWT_PUBLIC_KEY (algorithm confusion)');
    }
    return { mode: 'public-key', key: publicKey, algorithms: allowed, devSecretPath: undefined };
  }
  const allowedHmac = algorithms ?? ['HS256'];
  if (allowedHmac.some((a) => !a.startsWith('HS'))) {
    throw new ConfigError('JWT_ALGORITHMS: only HS256, HS384 or HS512 fit a shared secret; set JWT_PUBLIC_KEY for others');
  }
  if (secret !== undefined) return { mode: 'secret', key: secret, algorithms: allowedHmac, devSecretPath: undefined };
  const path = devSecretPathFor(config.databasePath);
  const devSecret = path ? readOrCreateDevSecret(path).secret : randomBytes(48).toString('base64url');
  return { mode: 'dev', key: devSecret, algorithms: allowedHmac, devSecretPath: path };
}

/**
 * The verifier for a config. With a JWKS the audience defaults to this API's resource
 * identifier (RFC 8707): a token minted for another API is not accepted here.
 */
export function verifierFor(
  config: Config,
  keys: TokenKeys,
  onKeyFetchError?: (err: unknown, url: string) => void,
): { verify: TokenVerifier; jwks: JwksKeySource | undefined } {
  const jwks =
    keys.mode === 'jwks'
      ? new JwksKeySource({
          jwksUrl: config.jwt.jwksUrl,
          issuer: config.jwt.issuer,
          cooldownMs: config.jwt.jwksCooldownS * 1000,
          timeoutMs: config.jwt.jwksTimeoutMs,
          ...(onKeyFetchError && { onError: onKeyFetchError }),
        })
      : undefined;
  const verify = createTokenVerifier({
    key: jwks ?? keys.key,
    algorithms: keys.algorithms,
    issuer: config.jwt.issuer,
    audience: config.jwt.audience ?? (keys.mode === 'jwks' ? [config.resource] : undefined),
    clockToleranceMs: config.jwt.clockToleranceS * 1000,
    acceptedTyp: config.jwt.acceptedTyp,
    cacheSize: 10_000,
  });
  return { verify, jwks };
}
