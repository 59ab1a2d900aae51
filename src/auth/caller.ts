/**
 * Credentials -> Caller, the parts RFC 6750 leaves to the resource server: where a token may
 * come from, what a refusal says, and which claims carry scopes. The signature and claim checks
 * themselves are @fastify/jwt's (src/http/plugins/auth.ts); this stays plain TypeScript.
 */
import type { Caller } from '../model/caller.js';
import { RegistryError } from '../model/errors.js';

/**
 * RFC 6749 section 3.3 scope-token. Every scope the registry compares a caller's with (tools',
 * ADMIN_SCOPE, STATS_READ_SCOPE, ROLE_SCOPES) is one (ScopeSchema), so any other value, one
 * with control characters among them, could grant nothing: it is not kept in the Caller.
 */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/**
 * Merges the scope claims different providers use: `scope` (RFC 9068), `scp` (Okta, Entra),
 * `scopes` (the article). With a role map, `roles`, `groups` and Keycloak's
 * `realm_access.roles` values that the map names add their scopes.
 */
function scopesFromClaims(claims: Record<string, unknown>, roleScopes?: Readonly<Record<string, string>>): Set<string> {
  const scopes = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string') {
      for (const s of value.split(' ')) if (SCOPE_TOKEN.test(s)) scopes.add(s);
    } else if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'string' && SCOPE_TOKEN.test(item)) scopes.add(item);
    }
  };
  add(claims['scope']);
  add(claims['scp']);
  add(claims['scopes']);
  if (roleScopes) {
    const realmAccess = claims['realm_access'] as { roles?: unknown } | undefined;
    for (const roles of [claims['roles'], claims['groups'], realmAccess?.roles]) {
      if (!Array.isArray(roles) && typeof roles !== 'string') continue;
      for (const role of Array.isArray(roles) ? roles : [roles]) {
        if (typeof role === 'string' && Object.hasOwn(roleScopes, role)) add(roleScopes[role]);
      }
    }
  }
  return scopes;
}

/** The Caller a verified token's claims describe. */
export function callerFromClaims(claims: Record<string, unknown>, roleScopes?: Readonly<Record<string, string>>): Caller {
  return {
    kind: 'token',
    sub: typeof claims['sub'] === 'string' ? claims['sub'] : undefined,
    iss: typeof claims['iss'] === 'string' ? claims['iss'] : undefined,
    scopes: scopesFromClaims(claims, roleScopes),
    expiresAt: typeof claims['exp'] === 'number' && Number.isFinite(claims['exp']) ? claims['exp'] * 1000 : undefined,
  };
}

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** Longer than any real access token; refusing early keeps garbage off the verifier. */
const MAX_TOKEN_LENGTH = 8192;

/**
 * The claims callerFromClaims copies into the Caller as its identity, from where they reach the
 * audit log, the request log, `/stats` (`usage_by_agent`), the per-caller budget keys and the
 * `user` property of message-bus calls.
 */
const IDENTITY_CLAIMS = ['sub', 'iss'] as const;
// C0, DEL, C1, the line and paragraph separators and the bidirectional overrides, as
// src/model/schemas.ts refuses them in text (no exception: an identifier has no use for a tab or
// a line feed).
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\x00-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
const BACKSLASH = 0x5c;
const DEL = 0x7f;
/** UTF-8's lead byte of U+0080 to U+00BF, C1 among them. */
const C1_LEAD = 0xc2;
/** UTF-8's lead byte of U+2000 to U+2FFF, the line separators and bidirectional overrides among them. */
const U2000_LEAD = 0xe2;

/**
 * Refuses (401, invalid_token) a token whose `sub` or `iss` holds a control character, before
 * it is verified: such a value would write raw escapes and line breaks into every place the
 * identity goes. Refused rather than escaped because these claims are identifiers (RFC 7519
 * StringOrURI), which no identity provider issues with control characters, and an escaped form
 * would be a second, different identity: the one the audit log, `/stats` and the tool services
 * (the bus's `user`) would see would no longer be the token's, and escaping the escape character
 * too would change ordinary subjects such as `DOMAIN\user`.
 *
 * Only the payload is decoded, not verified: a refusal needs no trust, and a token that passes
 * here is verified as before. JSON text holds a control character only as an escape (after a
 * backslash) or raw as DEL, a UTF-8 C1 (lead byte 0xC2) or a separator or override (lead byte
 * 0xE2), so a payload without those bytes, which is most of them, is not parsed at all. Measured on a typical token (best of 10 x 100,000
 * calls, busy 2-core machine): bearerToken took 0.5 us before this check and 1.6 us with it.
 */
function refuseControlCharactersInIdentity(token: string): void {
  const start = token.indexOf('.');
  const end = token.indexOf('.', start + 1);
  // Not a JWS: the verifier refuses it in its own words.
  if (start < 0 || end < 0) return;
  const payload = Buffer.from(token.slice(start + 1, end), 'base64url');
  if (!payload.includes(BACKSLASH) && !payload.includes(DEL) && !payload.includes(C1_LEAD) && !payload.includes(U2000_LEAD)) return;
  let claims: unknown;
  try {
    claims = JSON.parse(payload.toString('utf8'));
  } catch {
    return;
  }
  if (typeof claims !== 'object' || claims === null) return;
  for (const claim of IDENTITY_CLAIMS) {
    const value: unknown = (claims as Record<string, unknown>)[claim];
    if (typeof value === 'string' && CONTROL_CHARACTER.test(value))
      throw invalidToken(`the token's ${claim} claim contains control characters`);
  }
}

/**
 * A 401 for a verified token whose `sub` or `iss` is there but not a string (RFC 7519 section 4.1:
 * StringOrURI). Ignored, such a token would act as one without a subject, sharing its budgets
 * and audit identity with every other; undefined when both are absent or strings.
 */
export function identityClaimProblem(claims: Record<string, unknown>): RegistryError | undefined {
  for (const claim of IDENTITY_CLAIMS) {
    const value = claims[claim];
    if (value !== undefined && typeof value !== 'string') return invalidToken(`the token's ${claim} claim is not a string`);
  }
  return undefined;
}

function invalidToken(description: string, cause?: unknown): RegistryError {
  return new RegistryError('TR_ERR_INVALID_TOKEN', description, {
    challenge: { error: 'invalid_token', description },
    cause,
  });
}

function invalidRequest(description: string): RegistryError {
  return new RegistryError('TR_ERR_INVALID_REQUEST', description, { challenge: { error: 'invalid_request', description } });
}

/**
 * Refuses a request that sends the Authorization header more than once (`rawHeaders` is Node's
 * flat name, value list). Node keeps only the first, so a proxy that reads the last one and
 * this registry would disagree about who is asking (RFC 6750 section 3.1: invalid_request).
 */
export function refuseRepeatedAuthorization(rawHeaders: readonly string[]): void {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name?.length === 13 && name.toLowerCase() === 'authorization') {
      if (seen) throw invalidRequest('send one Authorization header, not several');
      seen = true;
    }
  }
}

/**
 * The bearer token of a request that presents credentials (a header, or `access_token` in the
 * query), or a RegistryError (400 or 401) saying why it cannot be used. Only the Authorization
 * header is accepted: APIs must not take tokens from the query string (RFC 6750 section 2.3,
 * and the MCP rules). Cheap refusals come here, before any signature check: too long a token,
 * and identity claims with control characters.
 */
export function bearerToken(authorization: string | undefined, queryToken: boolean): string {
  if (queryToken && authorization !== undefined) {
    // RFC 6750 section 2: a client must not use more than one method per request.
    throw invalidRequest('send the token in the Authorization header only, not also in the query string');
  }
  if (authorization === undefined) {
    throw invalidToken('access tokens in the query string are not accepted; send an Authorization: Bearer header');
  }
  const match = BEARER.exec(authorization);
  if (!match?.[1]) {
    throw invalidRequest(
      /^bearer\b/i.test(authorization.trim())
        ? 'the Authorization header must be "Bearer <token>"'
        : 'only the Bearer authorization scheme is supported',
    );
  }
  if (match[1].length > MAX_TOKEN_LENGTH) throw invalidToken('the token is too long');
  refuseControlCharactersInIdentity(match[1]);
  return match[1];
}

/**
 * The 401 for a token that failed verification, with a short reason for the challenge that
 * never echoes token contents. Errors that are already refusals pass through. `acceptedTyp`
 * names the types a token may have; `code` is the reason's code, for a check of the registry's
 * own (the typ policy), whose failure is no error.
 */
export function tokenRefused(err: unknown, acceptedTyp: readonly string[], code: unknown = failureCode(err)): RegistryError {
  if (err instanceof RegistryError) return err;
  return invalidToken(describe(String(code), acceptedTyp), err);
}

/**
 * Why a verification failed: fast-jwt's code (FAST_JWT_*, which @fastify/jwt's app.jwt.verify
 * passes on as it is), or the key source's (TR_JWT_*) when fast-jwt wrapped the key source's
 * error in its FAST_JWT_KEY_FETCHING_ERROR (it keeps the error as `originalError`).
 */
export function failureCode(err: unknown): unknown {
  const code = codeOf(err);
  if (code !== 'FAST_JWT_KEY_FETCHING_ERROR' || typeof err !== 'object' || err === null || !('originalError' in err)) return code;
  return codeOf(err.originalError) ?? code;
}

function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

/**
 * The challenge's words for each reason a token is refused: the one place that says them, for
 * requests, /mcp and announcements alike. Codes from fast-jwt (FAST_JWT_*), the key source
 * (TR_JWT_*) and the typ policy (TR_JWT_TYP_NOT_ACCEPTED, src/auth/verifier.ts).
 */
function describe(code: string, acceptedTyp: readonly string[]): string {
  switch (code) {
    case 'FAST_JWT_EXPIRED':
      return 'the token has expired';
    case 'FAST_JWT_INACTIVE':
      return 'the token is not valid yet';
    case 'FAST_JWT_INVALID_SIGNATURE':
      return 'the token signature is not valid';
    case 'FAST_JWT_MISSING_SIGNATURE':
      return 'the token is not signed';
    case 'FAST_JWT_INVALID_ALGORITHM':
    case 'TR_JWT_ALGORITHM_NOT_ALLOWED':
      return 'the token algorithm is not allowed';
    case 'FAST_JWT_INVALID_CLAIM_VALUE':
      return 'the token issuer, audience or type is not accepted here';
    case 'FAST_JWT_MISSING_REQUIRED_CLAIM':
      return 'the token lacks a claim this registry requires: exp, and iss or aud when it names an issuer or audience';
    case 'TR_JWT_TYP_NOT_ACCEPTED':
      return `the token type must be ${acceptedTyp.join(' or ')}`;
    case 'TR_JWT_UNKNOWN_KEY':
      return 'the token was signed with a key this registry does not know';
    case 'FAST_JWT_MALFORMED':
      return 'the token is malformed';
    default:
      return 'the token is not valid';
  }
}
