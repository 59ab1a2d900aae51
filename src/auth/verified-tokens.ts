/**
 * The registry's one token cache, by exact `Authorization` header, in front of @fastify/jwt's
 * verifier, which keeps none of its own.
 *
 * A verified token: a request that presents the same header again costs a Map lookup instead
 * of a verification (decode, key, signature, claims). Kept until it expires (plus the clock
 * tolerance the verifier allows) and at most `ttlMs` after it was verified, as fast-jwt's own
 * cache did; the oldest entry goes first once `max` are held.
 *
 * A refusal: a flood of one bad token costs one verification per `refusals.ttlMs`, not one per
 * request. The caller keeps no refusal that time or the next key fetch is likely to undo (a
 * token not valid yet, an unknown key); an expired token stays refused, and a changed key set,
 * which can undo others (a signature under a key since replaced), clears the cache. Refusals
 * have their own bound, so distinct bad tokens cannot push verified ones out.
 */
import type { Caller } from '../model/caller.js';
import type { RegistryError } from '../model/errors.js';

/** fast-jwt's default cacheTTL: a verified token is checked again at least this often. */
const TTL_MS = 600_000;
/** A few seconds of refusals, at most 1,000 of them. */
const REFUSALS = { max: 1_000, ttlMs: 5_000 };

export class VerifiedTokens {
  readonly #entries = new Map<string, { caller: Caller; until: number }>();
  readonly #refusals = new Map<string, { refusal: RegistryError; until: number }>();
  readonly #max: number;
  readonly #toleranceMs: number;
  readonly #ttlMs: number;
  readonly #refusalMax: number;
  readonly #refusalTtlMs: number;

  constructor(max: number, toleranceMs: number, ttlMs = TTL_MS, refusals: { max: number; ttlMs: number } = REFUSALS) {
    this.#max = max;
    this.#toleranceMs = toleranceMs;
    this.#ttlMs = ttlMs;
    this.#refusalMax = refusals.max;
    this.#refusalTtlMs = refusals.ttlMs;
  }

  /** Verified headers held (refusals not counted). */
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

  /** The refusal a header got within the last few seconds. */
  refused(header: string, now: number): RegistryError | undefined {
    const entry = this.#refusals.get(header);
    if (entry === undefined) return undefined;
    if (now < entry.until) return entry.refusal;
    this.#refusals.delete(header);
    return undefined;
  }

  /** Forgets every header (the keys changed: a retired key's tokens must be refused, a new key's accepted). */
  clear(): void {
    this.#entries.clear();
    this.#refusals.clear();
  }

  /** Keeps a header whose token has just been verified (tokens without `exp` are not kept). */
  set(header: string, caller: Caller, now: number): void {
    if (caller.kind !== 'token' || caller.expiresAt === undefined) return;
    const until = Math.min(caller.expiresAt + this.#toleranceMs, now + this.#ttlMs);
    if (until <= now) return;
    keep(this.#entries, this.#max, header, { caller, until });
  }

  /** Keeps a header whose token has just been refused. */
  refuse(header: string, refusal: RegistryError, now: number): void {
    keep(this.#refusals, this.#refusalMax, header, { refusal, until: now + this.#refusalTtlMs });
  }
}

/** Sets `key`, first dropping the oldest entry when `max` are held. */
function keep<V>(entries: Map<string, V>, max: number, key: string, value: V): void {
  if (!entries.has(key) && entries.size >= max) {
    const oldest = entries.keys().next();
    if (!oldest.done) entries.delete(oldest.value);
  }
  entries.set(key, value);
}
