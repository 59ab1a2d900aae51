/**
 * Who is asking: anonymous, or a verified token's subject and scopes; and the scope rules every
 * front applies the same way (any one of a tool's scope entries grants it, each needing all its
 * tokens: src/model/scope-rule.ts).
 */
import { RegistryError } from './errors.js';
import { describeEntries, grants, tokensOf } from './scope-rule.js';

export type Caller =
  | { kind: 'anonymous' }
  | {
      kind: 'token';
      /** The token's subject (agent or client id). */
      sub: string | undefined;
      iss: string | undefined;
      /** Every granted scope, merged from `scope`, `scp` and `scopes`. */
      scopes: ReadonlySet<string>;
      /** When the token expires (its `exp`, in ms since the epoch); long-lived answers end by then. */
      expiresAt: number | undefined;
    };

export const ANONYMOUS: Caller = Object.freeze({ kind: 'anonymous' });

/** Whether the caller's scopes grant one of the entries `scopes` (an empty list needs none). */
export function hasAnyScope(caller: Caller, scopes: readonly string[]): boolean {
  if (scopes.length === 0) return true;
  return caller.kind === 'token' && grants(scopes, caller.scopes);
}

/**
 * Throws 401 for anonymous callers and 403 for tokens that no entry of `scopes` grants. The
 * challenge's `scope` lists tokens (RFC 6750 section 3), every token any entry names.
 */
export function requireScope(caller: Caller, scopes: readonly string[], what: string): void {
  if (caller.kind === 'anonymous') {
    throw new RegistryError('TR_ERR_UNAUTHENTICATED', `${what} needs a bearer token with scope ${describeEntries(scopes)}`, {
      challenge: { scope: tokensOf(scopes) },
    });
  }
  if (!hasAnyScope(caller, scopes)) {
    const description = `${what} needs scope ${describeEntries(scopes)}`;
    throw new RegistryError('TR_ERR_INSUFFICIENT_SCOPE', description, {
      challenge: { error: 'insufficient_scope', description, scope: tokensOf(scopes) },
    });
  }
}
