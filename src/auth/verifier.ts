/**
 * Bearer-token verification as RFC 9068 asks of a resource server: signature with an allowed
 * algorithm only (never `none`, never HMAC with a public key), `typ`, `iss`, `aud`, `exp`,
 * `nbf` with a clock tolerance. Built on fast-jwt, the engine under @fastify/jwt, used directly
 * because keys may come from a JWKS asynchronously and the typ policy and error reasons are
 * ours to decide; this keeps the check in one place and free of Fastify.
 */
import { createVerifier, type Algorithm } from 'fast-jwt';
import type { TokenVerifier } from './caller.js';
import type { JwksKeySource } from './jwks.js';

export interface VerifierOptions {
  /** A static HMAC secret or PEM public key, or a JWKS source. */
  key: string | JwksKeySource;
  algorithms: string[];
  issuer?: string | undefined;
  /** The token's `aud` must contain one of these. */
  audience?: string[] | undefined;
  clockToleranceMs: number;
  /** Accepted header `typ` values, lower case (`at+jwt`; `jwt` also covers a missing typ). */
  acceptedTyp: string[];
  /** Verified tokens kept, by their bytes, until they expire. */
  cacheSize: number;
}

/** A token whose header `typ` is not accepted. */
export class TokenTypeError extends Error {
  override readonly name = 'TokenTypeError';
  readonly code = 'TR_JWT_INVALID_TYP';
}

/** RFC 9068 section 4: compare `typ` without the optional `application/` prefix, case-insensitively. */
export function normaliseTyp(typ: unknown): string {
  if (typ === undefined) return 'jwt';
  return typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : '';
}

export function createTokenVerifier(options: VerifierOptions): TokenVerifier {
  const source = options.key;
  const build = () =>
    createVerifier({
      key: async ({ header }: { header: { kid?: string; alg?: string } }) => (typeof source === 'string' ? source : source.keyFor(header)),
      algorithms: options.algorithms as Algorithm[],
      ...(options.issuer !== undefined && { allowedIss: options.issuer }),
      ...(options.audience !== undefined && { allowedAud: options.audience }),
      clockTolerance: options.clockToleranceMs,
      // fast-jwt checks iss and aud only when present: a configured issuer or audience must be there.
      requiredClaims: ['exp', ...(options.issuer !== undefined ? ['iss'] : []), ...(options.audience !== undefined ? ['aud'] : [])],
      complete: true,
      cache: options.cacheSize,
      // Failures are not cached: a token refused for an unknown key may verify after rotation.
      errorCacheTTL: -1,
    });
  // Verified tokens are cached until they expire. When the key set changes the verifier (and
  // its cache) is rebuilt, so a token whose key the authorization server retired stops
  // verifying once the registry has refetched the keys.
  let generation = typeof source === 'string' ? 0 : source.generation;
  let verify = build();
  const accepted = new Set(options.acceptedTyp);
  return async (token: string) => {
    if (typeof source !== 'string' && source.generation !== generation) {
      generation = source.generation;
      verify = build();
    }
    const { header, payload } = (await verify(token)) as { header: { typ?: unknown }; payload: Record<string, unknown> };
    if (!accepted.has(normaliseTyp(header.typ))) {
      throw new TokenTypeError(`the token type must be ${[...accepted].join(' or ')}`);
    }
    return payload;
  };
}
