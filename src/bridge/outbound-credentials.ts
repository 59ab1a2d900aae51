/**
 * The registry's own credential, turned into what an outbound request carries (issue 30): a
 * header, a query parameter or a cookie. Client credentials (RFC 6749 §4.4) and token exchange
 * (RFC 8693) fetch a token from the credential's tokenUrl through the registry's outbound fetch
 * (so the address policy applies), cache it until `expires_in` minus a margin, and share one
 * request among concurrent callers. A token exchange trades the caller's token for one meant
 * for the host, cached per SHA-256 of the caller's token: the caller's token itself never goes
 * to the host. Failures are TR_ERR_UPSTREAM_CREDENTIAL with a message naming the step and the
 * token endpoint's status or error code, never a secret or a token.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { RegistryError } from '../model/errors.js';
import type { OutboundCredential } from '../model/outbound-credential.js';
import type { OutboundFetch } from './outbound-fetch.js';

/** What to add to the outbound request. */
export interface CredentialParts {
  headers: Record<string, string>;
  query: Record<string, string>;
  cookies: Record<string, string>;
}

export interface OutboundCredentialsOptions {
  fetch: OutboundFetch;
  /** Seconds before `expires_in` runs out at which a token is fetched again. Default 30. */
  marginS?: number;
  /** Longest wait for a token endpoint. Default 10 s. */
  timeoutMs?: number;
  /** Largest token answer read. Default 64 KiB. */
  maxAnswerBytes?: number;
  /** Lifetime assumed when an answer has no `expires_in`. Default 300 s. */
  defaultLifetimeS?: number;
  /** Most exchanged tokens kept (oldest dropped first). Default 1000. */
  maxExchanged?: number;
  now?: () => number;
}

interface Cached {
  token: string;
  expiresAt: number;
}

type ClientFields = {
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  clientSecretFile?: string;
  scopes?: string[];
  audience?: string;
  resource?: string;
  auth?: 'client_secret_basic' | 'client_secret_post';
};

function failure(detail: string, cause?: unknown): RegistryError {
  return new RegistryError('TR_ERR_UPSTREAM_CREDENTIAL', detail, cause === undefined ? {} : { cause });
}

/** A secret inline or read from its file now (a trailing newline dropped). */
async function secretOf(source: Record<string, unknown>, key: string): Promise<string> {
  const inline = source[key];
  if (typeof inline === 'string') return inline;
  const file = source[`${key}File`] as string;
  try {
    return (await readFile(file, 'utf8')).replace(/\r?\n$/, '');
  } catch (err) {
    throw failure(`the credential's ${key} file cannot be read`, err);
  }
}

/** Reads at most `max` bytes of a body; more is a failure (a token endpoint answers small). */
async function boundedText(response: Response, max: number): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw failure('the token endpoint answered more than the registry reads');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export class OutboundCredentials {
  readonly #fetch: OutboundFetch;
  readonly #marginMs: number;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;
  readonly #defaultLifetimeMs: number;
  readonly #maxExchanged: number;
  readonly #now: () => number;
  /** Tokens by cache key (owner, or owner + caller token hash). */
  readonly #tokens = new Map<string, Cached>();
  /** Requests in flight by cache key: one per key at a time. */
  readonly #inflight = new Map<string, Promise<Cached>>();

  constructor(options: OutboundCredentialsOptions) {
    this.#fetch = options.fetch;
    this.#marginMs = (options.marginS ?? 30) * 1000;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#maxBytes = options.maxAnswerBytes ?? 64 * 1024;
    this.#defaultLifetimeMs = (options.defaultLifetimeS ?? 300) * 1000;
    this.#maxExchanged = options.maxExchanged ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * What to add for `owner`'s credential (e.g. `tool:<name>`). `callerToken` is needed by token
   * exchange only.
   */
  async partsFor(owner: string, credential: OutboundCredential, callerToken?: string): Promise<CredentialParts> {
    const parts: CredentialParts = { headers: {}, query: {}, cookies: {} };
    const c = credential as Record<string, unknown>;
    if ('in' in credential) {
      const value = await secretOf(c, 'apiKey');
      const place = credential.in === 'header' ? parts.headers : credential.in === 'query' ? parts.query : parts.cookies;
      place[credential.name] = value;
    } else if ('basic' in credential) {
      const basic = credential.basic as Record<string, unknown>;
      const password = await secretOf(basic, 'password');
      parts.headers.authorization = `Basic ${Buffer.from(`${String(basic.username)}:${password}`).toString('base64')}`;
    } else if ('clientCredentials' in credential) {
      const fields = credential.clientCredentials as ClientFields;
      const { token } = await this.#cached(`cc:${owner}`, () => this.#request(fields, { grant_type: 'client_credentials' }));
      parts.headers.authorization = `Bearer ${token}`;
    } else if ('tokenExchange' in credential) {
      if (callerToken === undefined) throw failure('token exchange needs the caller’s token and the call has none');
      const fields = credential.tokenExchange as ClientFields;
      const key = `te:${owner}:${createHash('sha256').update(callerToken).digest('base64url')}`;
      const { token } = await this.#cached(key, () =>
        this.#request(fields, {
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          subject_token: callerToken,
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
        }),
      );
      parts.headers.authorization = `Bearer ${token}`;
    } else {
      parts.headers.authorization = `Bearer ${await secretOf(c, 'bearer')}`;
    }
    return parts;
  }

  /** Drops what is cached for an owner (its credential changed or was removed). */
  forget(owner: string): void {
    for (const key of this.#tokens.keys()) {
      if (key === `cc:${owner}` || key.startsWith(`te:${owner}:`)) this.#tokens.delete(key);
    }
  }

  async #cached(key: string, request: () => Promise<Cached>): Promise<Cached> {
    const hit = this.#tokens.get(key);
    if (hit !== undefined && hit.expiresAt > this.#now()) return hit;
    const running = this.#inflight.get(key);
    if (running !== undefined) return running;
    const next = request()
      .then((got) => {
        this.#tokens.delete(key);
        this.#tokens.set(key, got);
        // Exchanged tokens are one per caller: bounded, oldest first.
        while (this.#tokens.size > this.#maxExchanged) this.#tokens.delete(this.#tokens.keys().next().value as string);
        return got;
      })
      .finally(() => this.#inflight.delete(key));
    this.#inflight.set(key, next);
    return next;
  }

  async #request(fields: ClientFields, grant: Record<string, string>): Promise<Cached> {
    const secret = await secretOf(fields, 'clientSecret');
    const form = new URLSearchParams(grant);
    if (fields.scopes !== undefined && fields.scopes.length > 0) form.set('scope', fields.scopes.join(' '));
    if (fields.audience !== undefined) form.set('audience', fields.audience);
    if (fields.resource !== undefined) form.set('resource', fields.resource);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };
    if (fields.auth === 'client_secret_post') {
      form.set('client_id', fields.clientId);
      form.set('client_secret', secret);
    } else {
      // RFC 6749 §2.3.1: each part form-urlencoded before base64.
      const enc = (s: string) => encodeURIComponent(s).replaceAll('%20', '+');
      headers.authorization = `Basic ${Buffer.from(`${enc(fields.clientId)}:${enc(secret)}`).toString('base64')}`;
    }
    const started = this.#now();
    let response: Response;
    try {
      response = await this.#fetch(fields.tokenUrl, {
        method: 'POST',
        headers,
        body: form.toString(),
        redirect: 'error',
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw failure('the token endpoint cannot be reached', err);
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(await boundedText(response, this.#maxBytes)) as Record<string, unknown>;
    } catch (err) {
      if (err instanceof RegistryError) throw err;
      throw failure(`the token endpoint answered ${response.status} without a JSON body`);
    }
    if (!response.ok || typeof body.access_token !== 'string' || body.access_token === '') {
      // The AS's error code only (RFC 6749 §5.2 registers its values): its description may echo input.
      const code = typeof body.error === 'string' && /^[\x20-\x7E]{1,64}$/.test(body.error) ? ` (${body.error})` : '';
      throw failure(`the token endpoint refused the request: ${response.status}${code}`);
    }
    const lifetimeMs = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in * 1000 : this.#defaultLifetimeMs;
    return { token: body.access_token, expiresAt: started + Math.max(0, lifetimeMs - this.#marginMs) };
  }
}
