/**
 * Signing keys from an authorization server's JWKS. Keys are cached by `kid`; an unknown `kid`
 * triggers at most one fetch per cooldown period (single-flight), and every fetch has a
 * timeout, so forged `kid`s cannot become a flood of fetches and a hanging key endpoint cannot
 * hang requests. Rotation works without a restart: a new `kid` is fetched when first seen.
 */
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';

export interface JwksOptions {
  /** The JWKS document's URL; found through the issuer's metadata when absent. */
  jwksUrl?: URL | undefined;
  /** Issuer whose metadata names `jwks_uri` (OpenID Connect discovery, then RFC 8414). */
  issuer?: string | undefined;
  /** Shortest time between two fetches triggered by unknown `kid`s. */
  cooldownMs: number;
  /** Longest a key or metadata fetch may take. */
  timeoutMs: number;
  fetch?: typeof fetch;
  now?: () => number;
  /** Told about fetch failures (never about tokens). */
  onError?: (err: unknown, url: string) => void;
}

/** How old a key set may get before a background refresh. */
const MAX_KEY_SET_AGE_MS = 10 * 60_000;

function sameKeys(a: ReadonlyMap<string, CachedKey>, b: ReadonlyMap<string, CachedKey>): boolean {
  if (a.size !== b.size) return false;
  for (const [kid, key] of a) if (b.get(kid)?.pem !== key.pem) return false;
  return true;
}

export class KeyNotFoundError extends Error {
  override readonly name = 'KeyNotFoundError';
}

interface CachedKey {
  pem: string;
  /** `alg` from the JWK, when it pins one. */
  alg: string | undefined;
}

export class JwksKeySource {
  readonly #options: JwksOptions;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  #keys = new Map<string, CachedKey>();
  #jwksUrl: URL | undefined;
  #lastFetchAt = Number.NEGATIVE_INFINITY;
  #inflight: Promise<void> | null = null;
  /** Fetches made so far (for tests and metrics). */
  fetches = 0;
  /** Bumped whenever the key set changes; verified-token caches key on it. */
  generation = 0;
  #lastSuccessAt = Number.NEGATIVE_INFINITY;

  constructor(options: JwksOptions) {
    if (!options.jwksUrl && !options.issuer) throw new Error('JWKS needs a jwksUrl or an issuer');
    this.#options = options;
    this.#jwksUrl = options.jwksUrl;
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
  }

  /** Starts the first fetch in the background so the first request does not wait for it. */
  warm(): void {
    this.#refreshIfAllowed().catch(() => undefined);
  }

  /** The PEM of the key a token's header names. */
  async keyFor(header: { kid?: unknown; alg?: unknown }): Promise<string> {
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    // Refresh in the background now and then, so keys the server retired are dropped even when
    // no unknown kid comes along.
    if (this.#now() - this.#lastSuccessAt > MAX_KEY_SET_AGE_MS) this.warm();
    let key = this.#find(kid);
    if (!key) {
      await this.#refreshIfAllowed();
      key = this.#find(kid);
    }
    if (!key) throw new KeyNotFoundError(kid === undefined ? 'the token names no key (kid) and the key set has several' : 'the token was signed with an unknown key');
    if (key.alg !== undefined && key.alg !== header.alg) throw new KeyNotFoundError('the token algorithm does not match its key');
    return key.pem;
  }

  #find(kid: string | undefined): CachedKey | undefined {
    if (kid !== undefined) return this.#keys.get(kid);
    // RFC 7517: without a kid, a single key is unambiguous.
    return this.#keys.size === 1 ? this.#keys.values().next().value : undefined;
  }

  /** Single-flight, and at most once per cooldown. */
  async #refreshIfAllowed(): Promise<void> {
    if (this.#inflight) return this.#inflight;
    if (this.#now() - this.#lastFetchAt < this.#options.cooldownMs) return;
    this.#lastFetchAt = this.#now();
    this.#inflight = this.#refresh().finally(() => {
      this.#inflight = null;
    });
    return this.#inflight;
  }

  async #refresh(): Promise<void> {
    try {
      const url = this.#jwksUrl ?? (this.#jwksUrl = await this.#discoverJwksUrl());
      const body = (await this.#getJson(url)) as { keys?: unknown };
      if (!Array.isArray(body.keys)) throw new Error('the JWKS document has no "keys" array');
      const keys = new Map<string, CachedKey>();
      body.keys.forEach((jwk: JsonWebKey & { kid?: string; use?: string; alg?: string }, i) => {
        if (jwk.use !== undefined && jwk.use !== 'sig') return;
        if (jwk.kty !== 'RSA' && jwk.kty !== 'EC' && jwk.kty !== 'OKP') return;
        let key: KeyObject;
        try {
          key = createPublicKey({ key: jwk, format: 'jwk' });
        } catch {
          return; // one bad key must not hide the good ones
        }
        keys.set(jwk.kid ?? `#${i}`, { pem: key.export({ type: 'spki', format: 'pem' }).toString(), alg: jwk.alg });
      });
      if (!sameKeys(this.#keys, keys)) {
        this.#keys = keys;
        this.generation++;
      }
      this.#lastSuccessAt = this.#now();
      this.fetches++;
    } catch (err) {
      this.fetches++;
      this.#options.onError?.(err, this.#jwksUrl?.href ?? this.#options.issuer ?? '');
      // Keep the keys we had: a flaky key endpoint must not lock out valid tokens.
    }
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
