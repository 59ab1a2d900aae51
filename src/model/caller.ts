/**
 * Who is asking: anonymous, or a verified token's subject and scopes; and the scope rules every
 * front applies the same way (any one of a tool's scopes grants it).
 */
import { RegistryError } from './errors.js';

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

/** Whether the caller holds at least one of `scopes` (an empty list needs none). */
export function hasAnyScope(caller: Caller, scopes: readonly string[]): boolean {
  if (scopes.length === 0) return true;
  return caller.kind === 'token' && scopes.some((s) => caller.scopes.has(s));
}

/** Throws 401 for anonymous callers and 403 for tokens without any of `scopes`. */
export function requireScope(caller: Caller, scopes: readonly string[], what: string): void {
  if (caller.kind === 'anonymous') {
    throw new RegistryError('TR_ERR_UNAUTHENTICATED', `${what} needs a bearer token with scope ${scopes.join(' or ')}`, {
      challenge: { scope: scopes },
    });
  }
  if (!hasAnyScope(caller, scopes)) {
    const description = `${what} needs scope ${scopes.join(' or ')}`;
    throw new RegistryError('TR_ERR_INSUFFICIENT_SCOPE', description, {
      challenge: { error: 'insufficient_scope', description, scope: scopes },
    });
  }
}
