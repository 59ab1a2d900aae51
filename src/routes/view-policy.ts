import type { Caller } from '../auth/caller.js';
import type { Catalog, ViewKey } from '../catalog/catalog.js';
import type { AnonymousPolicy } from '../config.js';
import { RegistryError } from '../errors.js';

/**
 * Which view of the catalogue a caller gets. Anonymous callers follow ANONYMOUS_DISCOVERY; a
 * token sees the tools that need no scope plus those any of whose scopes it holds.
 */
export function viewKeyFor(caller: Caller, policy: AnonymousPolicy, catalog?: Catalog): ViewKey {
  if (caller.kind === 'token') return { kind: 'scopes', scopes: caller.scopes };
  switch (policy) {
    case 'full':
      return { kind: 'all' };
    case 'public':
      return { kind: 'public' };
    case 'none':
      // Any valid token sees the tools that need no scope; the scopes listed are those that
      // show more.
      throw new RegistryError('TR_ERR_UNAUTHENTICATED', 'this registry lists tools only to callers with a bearer token', {
        challenge: { scope: catalog ? [...catalog.knownScopes().keys()] : [] },
      });
  }
}
