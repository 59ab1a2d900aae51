import type { Caller } from '../auth/caller.js';
import type { ViewKey } from '../catalog/catalog.js';
import type { AnonymousPolicy } from '../config.js';
import { RegistryError } from '../errors.js';

/**
 * Which view of the catalogue a caller gets. Anonymous callers follow ANONYMOUS_DISCOVERY; a
 * token sees the tools that need no scope plus those any of whose scopes it holds.
 */
export function viewKeyFor(caller: Caller, policy: AnonymousPolicy): ViewKey {
  if (caller.kind === 'token') return { kind: 'scopes', scopes: caller.scopes };
  switch (policy) {
    case 'full':
      return { kind: 'all' };
    case 'public':
      return { kind: 'public' };
    case 'none':
      throw new RegistryError('TR_ERR_UNAUTHENTICATED', 'this registry lists tools only to callers with a bearer token', {
        challenge: {},
      });
  }
}
