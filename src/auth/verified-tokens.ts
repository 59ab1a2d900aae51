/**
 * Bearer tokens already verified, by their exact `Authorization` header: a request that
 * presents the same header again costs a Map lookup instead of @fastify/jwt's decode, cache-key
 * hash and option merging (about 15-20 us of a bearer request in the profile). Only tokens that
 * passed every check are kept, each until it expires (plus the clock tolerance the verifier
 * allows) and at most `ttlMs` after it was verified, as fast-jwt's own cache does; the oldest
 * entry goes first once `max` are held.
 */
import type { Caller } from '../model/caller.js';

/** fast-jwt's default cacheTTL: a verified token is checked again at least this often. */
const TTL_MS = 600_000;

export class VerifiedTokens {
  readonly #entries = new Map<string, { caller: Caller; until: number }>();
  readonly #max: number;
  readonly #toleranceMs: number;
  readonly #ttlMs: number;

  constructor(max: number, toleranceMs: number, ttlMs = TTL_MS) {
    this.#max = max;
    this.#toleranceMs = toleranceMs;
    this.#ttlMs = ttlMs;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The caller of a header verified before and still accepted at `now`. */
  get(header: string, now: number): Caller | undefined {
    const entry = this.#entries.get(header);
    if (entry === undefined) return undefined;
    if (now < entry.until) return entry.caller;
    this.#entries.delete(header);
    return undefined;
  }

  /** Forgets every header (the keys changed: a retired key's tokens must be refused). */
  clear(): void {
    this.#entries.clear();
  }

  /** Keeps a header whose token has just been verified (tokens without `exp` are not kept). */
  set(header: string, caller: Caller, now: number): void {
    if (caller.kind !== 'token' || caller.expiresAt === undefined) return;
    const until = Math.min(caller.expiresAt + this.#toleranceMs, now + this.#ttlMs);
    if (until <= now) return;
    if (!this.#entries.has(header) && this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(header, { caller, until });
  }
}
