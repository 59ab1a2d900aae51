import { describe, expect, it } from 'vitest';
import { describeEntries, grants, missingTokens, normaliseEntries, normaliseEntry, tokensOf } from '../../src/model/scope-rule.js';
import { ScopeEntrySchema, ScopesSchema } from '../../src/model/schemas.js';

describe('scope rule', () => {
  it('normalises entries: tokens sorted and de-duplicated, entries de-duplicated in order', () => {
    expect(normaliseEntry('write:pets read:pets write:pets')).toBe('read:pets write:pets');
    expect(normaliseEntry(['b', 'a'])).toBe('a b');
    expect(normaliseEntries(['b a', 'c', ['a', 'b'], 'c'])).toEqual(['a b', 'c']);
  });

  it('grants (a and b) or c exactly', () => {
    const entries = ['a b', 'c'];
    expect(grants(entries, ['a', 'b'])).toBe(true);
    expect(grants(entries, ['c'])).toBe(true);
    expect(grants(entries, ['a'])).toBe(false);
    expect(grants(entries, [])).toBe(false);
    expect(grants([], [])).toBe(true);
    expect(grants(['a'], new Set(['a']))).toBe(true);
  });

  it('lists tokens and what is missing from the nearest alternative', () => {
    expect(tokensOf(['write:pets read:pets', 'api_key'])).toEqual(['read:pets', 'write:pets', 'api_key']);
    expect(tokensOf(['b', 'a', 'a c'])).toEqual(['b', 'a', 'c']);
    expect(missingTokens(['a b c', 'd e'], ['a', 'b'])).toEqual(['c']);
    expect(missingTokens(['a b', 'c'], ['c'])).toEqual([]);
    expect(missingTokens(['a b', 'c'], [])).toEqual(['c']);
    expect(missingTokens(['a', 'b'], [])).toEqual(['a']);
  });

  it('describes entries as a person reads them', () => {
    expect(describeEntries(['write:pets read:pets', 'api_key'])).toBe('read:pets and write:pets, or api_key');
  });
});

describe('scope entry schema', () => {
  it('accepts the string and array forms and stores the canonical string', () => {
    expect(ScopeEntrySchema.parse('write:pets read:pets')).toBe('read:pets write:pets');
    expect(ScopeEntrySchema.parse(['write:pets', 'read:pets'])).toBe('read:pets write:pets');
    expect(ScopesSchema.parse([['b', 'a'], 'a b', 'c'])).toEqual(['a b', 'c']);
  });

  it('refuses double spaces, bad tokens and too many tokens', () => {
    expect(ScopeEntrySchema.safeParse('a  b').success).toBe(false);
    expect(ScopeEntrySchema.safeParse(' a').success).toBe(false);
    expect(ScopeEntrySchema.safeParse('a "b"').success).toBe(false);
    expect(ScopeEntrySchema.safeParse([]).success).toBe(false);
    const seventeen = Array.from({ length: 17 }, (_, i) => `t${i}`);
    expect(ScopeEntrySchema.safeParse(seventeen.join(' ')).success).toBe(false);
    expect(ScopeEntrySchema.safeParse(seventeen.slice(0, 16)).success).toBe(true);
  });
});
