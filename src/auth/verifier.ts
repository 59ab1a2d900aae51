/**
 * What a bearer token must satisfy (RFC 9068 section 4). First the fast-jwt verify options that
 * @fastify/jwt applies: a signature with an allowed algorithm only (never `none`, never HMAC with
 * a public key: resolveTokenKeys refuses such lists), `iss`, `aud`, `exp` and `nbf` with a clock
 * tolerance. Then, on a token that passed those, what fast-jwt does not check: the `typ` policy,
 * which its single-valued `checkTyp` cannot express, and identity claims that are strings.
 */
import type { Algorithm, VerifierOptions } from 'fast-jwt';
import type { Config } from '../config.js';
import type { Caller } from '../model/caller.js';
import { callerFromClaims, identityClaimProblem, tokenRefused } from './caller.js';
import type { TokenKeys } from './keys.js';

/** Verified tokens kept (src/auth/verified-tokens.ts, by their Authorization header, until they expire). */
export const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

/** A token as fast-jwt hands it back when verified with `complete: true`. */
export interface VerifiedToken {
  header: { typ?: unknown };
  payload: Record<string, unknown>;
}

export interface TokenRules {
  verify: VerifierOptions;
  /**
   * The Caller of a token that passed `verify`, after the checks fast-jwt does not make; throws
   * the refusal (a RegistryError) of a token whose `typ` or identity claims are not accepted.
   */
  admit(token: VerifiedToken): Caller;
}

export function tokenRules(config: Config, keys: TokenKeys): TokenRules {
  const { issuer, acceptedTyp, roleScopes } = config.jwt;
  const acceptsTyp = typChecker(acceptedTyp);
  // With a JWKS the audience defaults to this API's resource identifiers (RFC 8707): the
  // registry's, and its MCP endpoint's (MCP clients ask for a token for the URL they connect
  // to). A token minted for another API is not accepted here.
  const audience = config.jwt.audience ?? (keys.mode === 'jwks' ? [config.resource, config.mcp.resource] : undefined);
  // fast-jwt checks iss and aud only when present: a configured issuer or audience must be there.
  const requiredClaims = ['exp', ...(issuer !== undefined ? ['iss'] : []), ...(audience !== undefined ? ['aud'] : [])];
  return {
    verify: {
      algorithms: keys.algorithms as Algorithm[],
      ...(issuer !== undefined && { allowedIss: issuer }),
      ...(audience !== undefined && { allowedAud: audience }),
      requiredClaims,
      clockTolerance: config.jwt.clockToleranceS * 1000,
      // The header too, for the typ policy.
      complete: true,
      // No cache of fast-jwt's own: the registry keeps one, by Authorization header, of verified
      // tokens and of refusals alike (src/auth/verified-tokens.ts), in front of the verifier.
      cache: false,
    },
    admit: ({ header, payload }) => {
      if (!acceptsTyp(header.typ)) throw tokenRefused(undefined, acceptedTyp, 'TR_JWT_TYP_NOT_ACCEPTED');
      // Identity claims that are strings (RFC 7519's StringOrURI), refused in their own words
      // rather than ignored.
      const problem = identityClaimProblem(payload);
      if (problem) throw problem;
      return callerFromClaims(payload, roleScopes);
    },
  };
}

/** RFC 9068 section 4: compare `typ` without the optional `application/` prefix, case-insensitively. */
function normaliseTyp(typ: unknown): string {
  if (typ === undefined) return 'jwt';
  return typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : '';
}

/**
 * Whether a header `typ` is one of `accepted` (normalised, e.g. `at+jwt`; `jwt` also covers a
 * missing typ). The common exact match is tried before normalising (which allocates).
 */
function typChecker(accepted: readonly string[]): (typ: unknown) => boolean {
  const set = new Set(accepted);
  return (typ) => (typeof typ === 'string' && set.has(typ)) || set.has(normaliseTyp(typ));
}
