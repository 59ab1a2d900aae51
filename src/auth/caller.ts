/**
 * Turning a request's credentials into a Caller. The token check itself is passed in (the HTTP
 * layer builds it from @fastify/jwt), so this stays plain TypeScript.
 */
import { ANONYMOUS, type Caller } from '../model/caller.js';
import { RegistryError } from '../model/errors.js';

/** Verifies a compact JWT and returns its claims, or throws (any error means invalid). */
export type TokenVerifier = (token: string) => Promise<Record<string, unknown>>;

/**
 * Merges the scope claims different providers use: `scope` (RFC 9068), `scp` (Okta, Entra),
 * `scopes` (the article). With a role map, `roles`, `groups` and Keycloak's
 * `realm_access.roles` values that the map names add their scopes.
 */
export function scopesFromClaims(claims: Record<string, unknown>, roleScopes?: Readonly<Record<string, string>>): Set<string> {
  const scopes = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string') {
      for (const s of value.split(' ')) if (s !== '') scopes.add(s);
    } else if (Array.isArray(value)) {
      for (const item of value) if (typeof item === 'string' && item !== '') scopes.add(item);
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

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
/** Longer than any real access token; refusing early keeps garbage off the verifier. */
const MAX_TOKEN_LENGTH = 8192;

export interface CredentialSources {
  authorization: string | undefined;
  /** Whether the query string carried `access_token`, which APIs must not accept. */
  queryToken: boolean;
}

function invalidToken(description: string, cause?: unknown): RegistryError {
  return new RegistryError('TR_ERR_INVALID_TOKEN', description, {
    challenge: { error: 'invalid_token', description },
    cause,
  });
}

/**
 * Resolves the caller. No credentials is anonymous; anything presented must be a valid token,
 * or the caller gets 401 (never the anonymous view, or clients never learn their token expired).
 */
export async function resolveCaller(
  sources: CredentialSources,
  verify: TokenVerifier,
  roleScopes?: Readonly<Record<string, string>>,
): Promise<Caller> {
  if (sources.queryToken && sources.authorization !== undefined) {
    // RFC 6750 section 2: a client must not use more than one method per request.
    const description = 'send the token in the Authorization header only, not also in the query string';
    throw new RegistryError('TR_ERR_INVALID_REQUEST', description, { challenge: { error: 'invalid_request', description } });
  }
  if (sources.queryToken) {
    throw invalidToken('access tokens in the query string are not accepted; send an Authorization: Bearer header');
  }
  const header = sources.authorization;
  if (header === undefined) return ANONYMOUS;
  const match = BEARER.exec(header);
  if (!match?.[1]) {
    const description = /^bearer\b/i.test(header.trim())
      ? 'the Authorization header must be "Bearer <token>"'
      : 'only the Bearer authorization scheme is supported';
    throw new RegistryError('TR_ERR_INVALID_REQUEST', description, { challenge: { error: 'invalid_request', description } });
  }
  const token = match[1];
  if (token.length > MAX_TOKEN_LENGTH) throw invalidToken('the token is too long');
  let claims: Record<string, unknown>;
  try {
    claims = await verify(token);
  } catch (err) {
    throw invalidToken(describeVerifyError(err), err);
  }
  return {
    kind: 'token',
    sub: typeof claims['sub'] === 'string' ? claims['sub'] : undefined,
    iss: typeof claims['iss'] === 'string' ? claims['iss'] : undefined,
    scopes: scopesFromClaims(claims, roleScopes),
  };
}

/** A short reason for the challenge, without echoing token contents. */
function describeVerifyError(err: unknown): string {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : '';
  switch (code) {
    case 'FAST_JWT_EXPIRED':
      return 'the token has expired';
    case 'FAST_JWT_INACTIVE':
      return 'the token is not valid yet';
    case 'FAST_JWT_INVALID_SIGNATURE':
      return 'the token signature is not valid';
    case 'FAST_JWT_INVALID_ALGORITHM':
      return 'the token algorithm is not allowed';
    case 'FAST_JWT_INVALID_CLAIM_VALUE':
    case 'FAST_JWT_MISSING_REQUIRED_CLAIM':
      return 'the token issuer, audience or type is not accepted here';
    case 'TR_JWT_INVALID_TYP':
      return err instanceof Error ? err.message : 'the token type is not accepted';
    case 'FAST_JWT_KEY_FETCHING_ERROR':
      return 'the token was signed with a key this registry does not know';
    case 'FAST_JWT_MALFORMED':
    case 'FAST_JWT_INVALID_TYPE':
    case 'FAST_JWT_INVALID_PAYLOAD':
      return 'the token is malformed';
    default:
      return 'the token is not valid';
  }
}
