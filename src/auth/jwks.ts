/**
 * Signing keys from an authorization server's JWKS, for the key function @fastify/jwt's verifier
 * calls. jose picks the key (createLocalJWKSet: `kid`, the key type the header's `alg` needs,
 * `use`, `key_ops`, `crv`, and the JWK's own `alg` when it pins one). Fetching stays here,
 * because jose's createRemoteJWKSet counts only successful fetches towards its cooldown (a flood
 * of unknown kids against a failing endpoint would become a flood of fetches), drops to an error
 * rather than keeping the last good keys when a refresh fails, and has no issuer discovery:
 *
 * - an unknown `kid` triggers at most one fetch per cooldown, failed fetches included, and
 *   concurrent ones share it (single-flight); every fetch has a timeout, so forged kids cannot
 *   become a flood of fetches and a hanging key endpoint cannot hang requests;
 * - the last good key set stays when a fetch fails: a flaky key endpoint must not lock out
 *   valid tokens;
 * - the set is refetched every 10 minutes, so keys the server retired stop verifying even when
 *   no unknown kid comes along; a new kid is fetched when first seen (rotation, no restart);
 * - a signature that fails under a known kid refetches too, within the same cooldown: a server
 *   that re-keys under the same kid is followed at once, and a flood of forged signatures
 *   costs at most one fetch per cooldown, as forged kids do;
 * - with only an issuer, `jwks_uri` comes from its metadata (OpenID Connect discovery, then
 *   RFC 8414), whose `issuer` must match.
 */
import { KeyObject } from 'node:crypto';
import { createLocalJWKSet, errors, importJWK, type JSONWebKeySet, type JWK, type JWSHeaderParameters } from 'jose';

export interface JwksOptions {
  /** The JWKS document's URL; found through the issuer's metadata when absent. */
  jwksUrl?: URL | undefined;
  /** Issuer whose metadata names `jwks_uri` (OpenID Connect discovery, then RFC 8414). */
  issuer?: string | undefined;
  /** Allowed token algorithms: a token with another `alg` is refused before any lookup or fetch. */
  algorithms: readonly string[];
  /** Shortest time between two fetches triggered by unknown `kid`s. */
  cooldownMs: number;
  /** Longest a key or metadata fetch may take. */
  timeoutMs: number;
  /** Time between background refreshes (default 10 minutes). */
  refreshMs?: number;
  fetch?: typeof fetch;
  now?: () => number;
  /** Told about fetch failures (never about tokens). */
  onError?: (err: unknown, url: string) => void;
}

/** A token whose key the registry cannot find (or may not use); `code` names the reason. */
class KeyLookupError extends Error {
  override readonly name = 'KeyLookupError';
  constructor(
    readonly code: 'TR_JWT_UNKNOWN_KEY' | 'TR_JWT_ALGORITHM_NOT_ALLOWED',
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Node-style callback with a key (a PEM string), typed as fast-jwt's key function takes it: '' with an error. */
export type KeyCallback = (err: Error | null, key: string) => void;

/** What keyFor reads of a token: the header's `kid` and `alg` (fast-jwt's decoded token has more). */
export interface KeyedToken {
  header: { kid?: unknown; alg?: unknown };
}

interface KeySet {
  /** The document as fetched, to tell whether a refetch changed anything. */
  json: string;
  select: ReturnType<typeof createLocalJWKSet>;
  /**
   * PEMs already picked, by kid and alg. fast-jwt asks for the key on every verification: a
   * known key must come back at once, without jose's promise. A new set starts empty, so a key
   * that left the set is never resolved again (a retired key stops verifying).
   */
  pems: Map<unknown, Map<unknown, string>>;
  /** Keys that import for one of the allowed algorithms and that jose would pick for it: zero means no token can verify. */
  usable: number;
}

const DEFAULT_REFRESH_MS = 10 * 60_000;

export class JwksKeySource {
  readonly #options: JwksOptions;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  readonly #algorithms: ReadonlySet<unknown>;
  #keys: KeySet | undefined;
  #jwksUrl: URL | undefined;
  #lastFetchAt = Number.NEGATIVE_INFINITY;
  #inflight: Promise<void> | null = null;
  #timer: NodeJS.Timeout | undefined;
  /** Why the latest fetch failed; undefined once one succeeds. */
  #lastFailure: string | undefined;
  /** Fetches of the key set made so far, failed ones included (for tests and metrics). */
  fetches = 0;
  /** Fetches that failed: the endpoint, the document or discovery (for metrics). */
  failedFetches = 0;
  /** Goes up whenever the key set changes: what was verified with the old one is checked again. */
  version = 0;

  constructor(options: JwksOptions) {
    if (!options.jwksUrl && !options.issuer) throw new Error('JWKS needs a jwksUrl or an issuer');
    this.#options = options;
    this.#jwksUrl = options.jwksUrl;
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
    this.#algorithms = new Set(options.algorithms);
  }

  /**
   * Why no token can be verified now (no key set fetched, or an empty one), or undefined when
   * keys are loaded (they are kept when later fetches fail). Without keys it also starts a
   * fetch, at most once per cooldown as tokens do: an unready registry gets no traffic, so
   * waiting for a token or the 10-minute refresh would keep it unready long after the key
   * endpoint came back.
   */
  missingKeys(): string | undefined {
    if (this.#keys !== undefined && this.#keys.usable > 0) return undefined;
    void this.#refreshIfAllowed();
    if (this.#lastFailure !== undefined) return `fetching the signing keys failed: ${this.#lastFailure}`;
    if (this.#keys === undefined) return 'the signing keys have not been fetched yet';
    if (this.#keys.json === '[]') return 'the key set holds no keys';
    return `the key set holds no key that can verify a token signed with ${[...this.#algorithms].join(', ')} (JWT_ALGORITHMS): each is malformed, of another type or algorithm, or not for signatures`;
  }

  /**
   * After a signature failed under a key of the set taken at `version`: perhaps the server
   * re-keyed under the same kid. Refetches at most once per cooldown (unknown kids share it),
   * single-flight, and says whether the key set is another one now: only then is the token worth
   * verifying again.
   */
  async refreshAfterBadSignature(version: number): Promise<boolean> {
    if (this.version === version) await this.#refreshIfAllowed();
    return this.version !== version;
  }

  /** Fetches the key set now, in the background (the first request need not wait), and every refreshMs. */
  start(): void {
    void this.#refresh();
    this.#timer ??= setInterval(() => void this.#refresh(), this.#options.refreshMs ?? DEFAULT_REFRESH_MS).unref();
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The PEM of the key a token header names; synchronous when the key is already known. */
  keyFor(header: { kid?: unknown; alg?: unknown }, done: KeyCallback): void {
    const pem = this.#keys?.pems.get(header.kid)?.get(header.alg);
    if (pem !== undefined) {
      done(null, pem);
      return;
    }
    this.#resolve(header).then(
      (key) => done(null, key),
      (err: Error) => done(err, ''),
    );
  }

  async #resolve(header: { kid?: unknown; alg?: unknown }): Promise<string> {
    if (!this.#algorithms.has(header.alg)) {
      throw new KeyLookupError('TR_JWT_ALGORITHM_NOT_ALLOWED', 'the token algorithm is not allowed');
    }
    try {
      return await this.#select(header);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw unknownKey(header, err);
    }
    // Perhaps a new key (rotation): refetch, at most once per cooldown, and look again.
    await this.#refreshIfAllowed();
    try {
      return await this.#select(header);
    } catch (err) {
      throw unknownKey(header, err);
    }
  }

  async #select(header: { kid?: unknown; alg?: unknown }): Promise<string> {
    const keys = this.#keys;
    if (!keys) throw new errors.JWKSNoMatchingKey();
    const key = await keys.select(header as JWSHeaderParameters);
    const pem = KeyObject.from(key).export({ type: 'spki', format: 'pem' }).toString();
    let byAlg = keys.pems.get(header.kid);
    if (!byAlg) keys.pems.set(header.kid, (byAlg = new Map()));
    byAlg.set(header.alg, pem);
    return pem;
  }

  /** Single-flight, and at most once per cooldown. */
  #refreshIfAllowed(): Promise<void> {
    if (this.#inflight) return this.#inflight;
    if (this.#now() - this.#lastFetchAt < this.#options.cooldownMs) return Promise.resolve();
    return this.#refresh();
  }

  #refresh(): Promise<void> {
    if (this.#inflight) return this.#inflight;
    // Counted when it starts, so failed fetches count towards the cooldown too.
    this.#lastFetchAt = this.#now();
    this.fetches++;
    this.#inflight = this.#fetchKeySet().finally(() => {
      this.#inflight = null;
    });
    return this.#inflight;
  }

  async #fetchKeySet(): Promise<void> {
    try {
      const url = (this.#jwksUrl ??= await this.#discoverJwksUrl());
      const jwks = (await this.#getJson(url)) as JSONWebKeySet;
      const json = JSON.stringify(jwks.keys);
      this.#lastFailure = undefined;
      if (json === this.#keys?.json) return;
      // createLocalJWKSet checks the document's shape; a key that does not import fails only
      // the tokens that name it, not the others.
      const select = createLocalJWKSet(jwks);
      this.#keys = { json, select, pems: new Map(), usable: await usableKeys(jwks.keys, this.#options.algorithms) };
      this.version++;
    } catch (err) {
      // Keep the keys we had.
      this.failedFetches++;
      this.#lastFailure = this.#describe(err);
      this.#options.onError?.(err, this.#jwksUrl?.href ?? this.#options.issuer ?? '');
    }
  }

  /** A failed fetch in a few words: fetch's own "fetch failed" says nothing without its cause. */
  #describe(err: unknown): string {
    if (!(err instanceof Error)) return String(err).slice(0, 200);
    if (err.name === 'TimeoutError') return `no answer within ${this.#options.timeoutMs} ms (JWKS_TIMEOUT_MS)`;
    const cause = (err.cause as NodeJS.ErrnoException | undefined)?.code;
    return (cause === undefined ? err.message : `${err.message} (${cause})`).slice(0, 200);
  }

  async #discoverJwksUrl(): Promise<URL> {
    const issuer = this.#options.issuer ?? '';
    const base = new URL(issuer);
    const path = base.pathname.replace(/\/+$/, '');
    const candidates = [
      new URL(`${path}/.well-known/openid-configuration`, base),
      new URL(`/.well-known/oauth-authorization-server${path}`, base),
    ];
    let lastError: unknown;
    for (const url of candidates) {
      try {
        const metadata = (await this.#getJson(url)) as { issuer?: unknown; jwks_uri?: unknown };
        if (metadata.issuer !== issuer) throw new Error(`metadata at ${url.href} names issuer ${String(metadata.issuer)}, not ${issuer}`);
        if (typeof metadata.jwks_uri !== 'string') throw new Error(`metadata at ${url.href} has no jwks_uri`);
        return new URL(metadata.jwks_uri);
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError instanceof Error ? lastError : new Error('no authorization server metadata found');
  }

  async #getJson(url: URL): Promise<unknown> {
    const response = await this.#fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(this.#options.timeoutMs),
      redirect: 'error',
    });
    if (!response.ok) throw new Error(`${url.href} answered ${response.status}`);
    return response.json();
  }
}

/** The key type and curves an algorithm's key has, as jose's key selection reads them. */
function keyShape(alg: string): { kty: string; crv?: readonly string[] } | undefined {
  if (/^(RS|PS)(256|384|512)$/.test(alg)) return { kty: 'RSA' };
  const ec = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521', ES256K: 'secp256k1' }[alg];
  if (ec !== undefined) return { kty: 'EC', crv: [ec] };
  if (alg === 'EdDSA') return { kty: 'OKP', crv: ['Ed25519', 'Ed448'] };
  if (alg === 'Ed25519') return { kty: 'OKP', crv: ['Ed25519'] };
  return undefined;
}

/**
 * How many keys of the set could verify a token: a key jose would pick for one of the allowed
 * algorithms (its type, curve, own `alg`, `use` and `key_ops` fit) and that imports for it. A set
 * of keys that fit none (a key missing its coordinates, keys of other algorithms) verifies nothing.
 */
async function usableKeys(keys: readonly JWK[], algorithms: readonly string[]): Promise<number> {
  let usable = 0;
  for (const jwk of keys) {
    for (const alg of algorithms) {
      const shape = keyShape(alg);
      if (shape === undefined || jwk.kty !== shape.kty) continue;
      if (shape.crv !== undefined && !shape.crv.includes(String(jwk.crv))) continue;
      if (jwk.alg !== undefined && jwk.alg !== alg) continue;
      if (jwk.use !== undefined && jwk.use !== 'sig') continue;
      if (jwk.key_ops !== undefined && !(Array.isArray(jwk.key_ops) && jwk.key_ops.includes('verify'))) continue;
      try {
        await importJWK({ ...jwk, ext: true }, alg);
      } catch {
        continue;
      }
      usable++;
      break;
    }
  }
  return usable;
}

function unknownKey(header: { kid?: unknown }, cause: unknown): KeyLookupError {
  const message =
    cause instanceof errors.JWKSMultipleMatchingKeys && header.kid === undefined
      ? 'the token names no key (kid) and the key set has several'
      : 'the token was signed with an unknown key';
  return new KeyLookupError('TR_JWT_UNKNOWN_KEY', message, { cause });
}
