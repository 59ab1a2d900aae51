/**
 * Issue 30: the scope rule as its users read it (visibility, the change feed, the caller check,
 * the access explainer), each with a compound entry and with single tokens as before.
 */
import { describe, expect, it } from 'vitest';
import { explainAccess } from '../../src/model/access.js';
import { hasAnyScope, requireScope, type Caller } from '../../src/model/caller.js';
import type { Tool } from '../../src/model/normalise.js';
import { changeInView, visibleScopes, type ViewKey } from '../../src/model/visibility.js';

const held = (...scopes: string[]): ViewKey => ({ kind: 'scopes', scopes: new Set(scopes) });
const token = (...scopes: string[]): Caller => ({ kind: 'token', sub: 'x', iss: undefined, scopes: new Set(scopes), expiresAt: undefined });
const ENTRIES = ['a b', 'c'];

describe('the scope rule in its uses', () => {
  it('a view holds a tool when one entry has every token held', () => {
    expect(visibleScopes(ENTRIES, held('a', 'b'))).toBe(true);
    expect(visibleScopes(ENTRIES, held('c'))).toBe(true);
    expect(visibleScopes(ENTRIES, held('a'))).toBe(false);
    expect(visibleScopes(ENTRIES, { kind: 'public' })).toBe(false);
    expect(visibleScopes(['a', 'b'], held('b'))).toBe(true);
  });

  it('a change from (a and b) to a alone enters the view of {a}', () => {
    const change = { kind: 'tool' as const, name: 't', scopesBefore: ['a b'], scopesAfter: ['a'] };
    expect(changeInView(change, 1, held('a'), false)).toMatchObject({ op: 'upsert' });
    expect(changeInView({ ...change, scopesBefore: ['a'], scopesAfter: ['a b'] }, 2, held('a'), false)).toMatchObject({ op: 'delete' });
  });

  it('the caller check refuses a partial entry with a challenge of tokens', () => {
    expect(hasAnyScope(token('a', 'b'), ENTRIES)).toBe(true);
    expect(hasAnyScope(token('a'), ENTRIES)).toBe(false);
    expect(() => requireScope(token('a'), ENTRIES, 'calling t')).toThrow('calling t needs scope a and b, or c');
    expect(() => requireScope(token('x'), ['a', 'b'], 'calling t')).toThrow('calling t needs scope a or b');
  });

  it('the explainer names the tokens missing from the nearest entry', () => {
    const tool = { name: 't', scopes: ENTRIES } as unknown as Tool;
    expect(explainAccess(tool, token('a'), false)).toMatchObject({ decision: 'deny', missingScopes: ['b'] });
    expect(explainAccess(tool, token('c'), true)).toMatchObject({ decision: 'allow', missingScopes: [], reason: 'granted by scope c' });
    const single = { name: 's', scopes: ['y', 'x'] } as unknown as Tool;
    expect(explainAccess(single, token('z'), false)).toMatchObject({
      missingScopes: ['x', 'y'],
      reason: 'the token has none of the scopes that grant this tool: x, y',
    });
  });
});
