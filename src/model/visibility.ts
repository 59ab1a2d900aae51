/**
 * The visibility rules, in one place for every front (HTTP, MCP, AG-UI, the dashboard): which
 * view of the catalogue a caller gets, which tools are in a view, and what a change looks like
 * from a view. What a caller may not list, it cannot learn exists.
 */
import { hasAnyScope, type Caller } from './caller.js';
import { RegistryError } from './errors.js';
import type { Change } from './records.js';
import { grants } from './scope-rule.js';

export const ANONYMOUS_POLICIES = ['full', 'public', 'none'] as const;
/** What callers without a token see: every tool, tools needing no scope, or nothing (401). */
export type AnonymousPolicy = (typeof ANONYMOUS_POLICIES)[number];

/** Who is looking: everything, only tools that need no scope, or a set of granted scopes. */
export type ViewKey = { kind: 'all' } | { kind: 'public' } | { kind: 'scopes'; scopes: ReadonlySet<string> };

export interface VisibilityPolicy {
  anonymous: AnonymousPolicy;
  /** The scope every write needs; its holders see tool services and stored descriptors. */
  adminScope: string;
  /** A read-only scope for dashboards: the whole catalogue and per-agent usage, no writes. */
  readScope?: string | undefined;
}

/**
 * Which view a caller gets. Operators (the admin scope, or the dashboard read scope) see the
 * whole catalogue; anonymous callers follow the anonymous policy; any other token sees the
 * tools that need no scope plus those one of whose scope entries it holds every token of. Under `none` an anonymous
 * caller is refused, and the challenge lists the scopes that show more (`knownScopes`).
 */
export function viewKeyFor(caller: Caller, policy: VisibilityPolicy, knownScopes: () => Iterable<string> = () => []): ViewKey {
  if (caller.kind === 'token') return seesEverything(caller, policy) ? { kind: 'all' } : { kind: 'scopes', scopes: caller.scopes };
  switch (policy.anonymous) {
    case 'full':
      return { kind: 'all' };
    case 'public':
      return { kind: 'public' };
    case 'none':
      throw new RegistryError('TR_ERR_UNAUTHENTICATED', 'this registry lists tools only to callers with a bearer token', {
        challenge: { scope: [...knownScopes()] },
      });
  }
}

/** The anonymous view, or null where anonymous callers see nothing. */
function anonymousViewKey(anonymous: AnonymousPolicy): ViewKey | null {
  switch (anonymous) {
    case 'full':
      return { kind: 'all' };
    case 'public':
      return { kind: 'public' };
    case 'none':
      return null;
  }
}

/**
 * Whether a tool with these scope entries is in the view: one entry's tokens all among the
 * view's scopes (src/model/scope-rule.ts).
 */
export function visibleScopes(scopes: readonly string[], key: ViewKey): boolean {
  if (key.kind === 'all' || scopes.length === 0) return true;
  if (key.kind === 'public') return false;
  return grants(scopes, key.scopes);
}

export function isAdmin(caller: Caller, policy: Pick<VisibilityPolicy, 'adminScope'>): boolean {
  return hasAnyScope(caller, [policy.adminScope]);
}

/**
 * Operators: the admin scope, or the dashboard read scope where one is set. They get the whole
 * catalogue and per-agent usage figures; everyone else gets aggregates over its own view.
 */
export function seesEverything(caller: Caller, policy: Pick<VisibilityPolicy, 'adminScope' | 'readScope'>): boolean {
  return hasAnyScope(caller, policy.readScope === undefined ? [policy.adminScope] : [policy.adminScope, policy.readScope]);
}

/**
 * Each scope set's key string, made once: a token's set is the same object on every request
 * made with it (the verified-token cache holds its Caller), and a page's cache key is built
 * from this per request (sorting and joining a 50-scope token's set took ~7 us of an MCP
 * `tools/list` page). Sets are never changed once in a key (`ReadonlySet`).
 */
const scopeKeyStrings = new WeakMap<ReadonlySet<string>, string>();

/** A view key as a string: `all`, `public`, or `scopes:` and the sorted scopes. */
export function viewKeyString(key: ViewKey): string {
  if (key.kind !== 'scopes') return key.kind;
  let text = scopeKeyStrings.get(key.scopes);
  if (text === undefined) scopeKeyStrings.set(key.scopes, (text = `scopes:${[...key.scopes].sort().join(' ')}`));
  return text;
}

/** One change as a caller sees it. */
export interface ViewChange {
  index: number;
  op: 'upsert' | 'delete';
  kind: 'tool' | 'tool-service';
  name: string;
}

/**
 * What a change looks like from one view: a tool entering or changing in the view is an upsert,
 * one leaving it a delete, and one the caller never sees is nothing. Tool services are
 * topology, shown to admins only.
 */
export function changeInView(
  change: Pick<Change, 'kind' | 'name' | 'scopesBefore' | 'scopesAfter'>,
  index: number,
  key: ViewKey,
  admin: boolean,
): ViewChange | null {
  if (change.kind === 'tool-service') {
    if (!admin) return null;
    return { index, op: change.scopesAfter === null ? 'delete' : 'upsert', kind: change.kind, name: change.name };
  }
  const after = change.scopesAfter !== null && visibleScopes(change.scopesAfter, key);
  const before = change.scopesBefore !== null && visibleScopes(change.scopesBefore, key);
  if (after) return { index, op: 'upsert', kind: 'tool', name: change.name };
  if (before) return { index, op: 'delete', kind: 'tool', name: change.name };
  return null;
}

/**
 * Whether a caller may learn that a tool exists (single lookups, the access explainer): in its
 * own view, in the anonymous view, or as an admin.
 */
export function mayKnowOf(
  toolScopes: readonly string[],
  caller: Caller,
  policy: VisibilityPolicy,
  knownScopes?: () => Iterable<string>,
): { known: boolean; inOwnView: boolean } {
  const own = viewKeyFor(caller, policy, knownScopes);
  const inOwnView = visibleScopes(toolScopes, own);
  const anonymous = anonymousViewKey(policy.anonymous);
  const known = inOwnView || (anonymous !== null && visibleScopes(toolScopes, anonymous)) || isAdmin(caller, policy);
  return { known, inOwnView };
}

/**
 * mayKnowOf for routes that refuse anonymous callers whatever the name (calls): under `none` an
 * anonymous caller knows of nothing, rather than being refused here with the registry's scopes.
 */
export function mayLearnOf(toolScopes: readonly string[], caller: Caller, policy: VisibilityPolicy): boolean {
  if (caller.kind === 'token') return mayKnowOf(toolScopes, caller, policy).known;
  const anonymous = anonymousViewKey(policy.anonymous);
  return anonymous !== null && visibleScopes(toolScopes, anonymous);
}
