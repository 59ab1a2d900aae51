/**
 * What a bearer token must satisfy (RFC 9068 section 4), as the fast-jwt verify options that
 * @fastify/jwt applies: a signature with an allowed algorithm only (never `none`, never HMAC with
 * a public key: resolveTokenKeys refuses such lists), `iss`, `aud`, `exp` and `nbf` with a clock
 * tolerance; and the `typ` policy, which fast-jwt's single-valued `checkTyp` cannot express.
 */
import type { Algorithm, VerifierOptions } from 'fast-jwt';
import type { Config } from '../config.js';
import type { TokenKeys } from './keys.js';

/** Verified tokens kept (by a hash of their bytes, until they expire), per signing key. */
export const VERIFIED_TOKEN_CACHE_SIZE = 10_000;

export interface TokenRules {
  verify: VerifierOptions;
  /**
   * Whether a decoded payload passes the claim checks of `verify` (required claims, iss, aud).
   * Not a check of its own: @fastify/jwt reports a failed signature and a failed claim check
   * alike, and this tells which, without checking a forged token's signature a second time.
   */
  claimsPass(payload: Record<string, unknown>): boolean;
  /** Whether a decoded payload lacks a claim `verify` requires (exp, and iss or aud when configured). */
  lacksClaim(payload: Record<string, unknown>): boolean;
}

export function tokenRules(config: Config, keys: TokenKeys): TokenRules {
  const { issuer } = config.jwt;
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
      cache: VERIFIED_TOKEN_CACHE_SIZE,
      // A refusal is remembered for at most the clock tolerance (fast-jwt's -1), so a flood of
      // one forged token costs a hash each, not a signature check.
      errorCacheTTL: -1,
    },
    lacksClaim: (payload) => requiredClaims.some((claim) => !(claim in payload)),
    claimsPass: (payload) =>
      requiredClaims.every((claim) => claim in payload) &&
      (issuer === undefined || payload['iss'] === issuer) &&
      (audience === undefined || [payload['aud']].flat().some((aud) => audience.includes(aud as string))),
  };
}

/** RFC 9068 section 4: compare `typ` without the optional `application/` prefix, case-insensitively. */
function normaliseTyp(typ: unknown): string {
  if (typ === undefined) return 'jwt';
  return typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : '';
}

/**
 * Whether a header `typ` is one of `accepted` (normalised, e.g. `at+jwt`; `jwt` also covers a
 * missing typ). Runs on every request, cached token or not, so the common exact match is tried
 * before normalising (which allocates).
 */
export function typChecker(accepted: readonly string[]): (typ: unknown) => boolean {
  const set = new Set(accepted);
  return (typ) => (typeof typ === 'string' && set.has(typ)) || set.has(normaliseTyp(typ));
}
