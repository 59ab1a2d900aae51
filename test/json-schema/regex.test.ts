/**
 * Patterns on the linear-time engine (src/json-schema/regex.ts, issue 28): ECMAScript's syntax
 * translated to RE2's with the same meaning, and what RE2 cannot run refused.
 */
import { describe, expect, it } from 'vitest';
import { linearRegExp, NonLinearPatternError, toRe2Syntax } from '../../src/json-schema/regex.js';
import { ArgumentValidators } from '../../src/json-schema/arguments.js';
import { schemaProblems } from '../../src/json-schema/check.js';
import type { Tool } from '../../src/model/normalise.js';

/** Patterns and inputs whose answers must be V8's (with the `u` flag, as Ajv runs them). */
const SAME_AS_V8: [string, string[]][] = [
  ['^\\u0041+$', ['AAA', 'AAa', '']],
  ['^\\u{1F600}$', ['\u{1F600}', 'x']],
  ['^\\uD83D\\uDE00$', ['\u{1F600}', '\uD83D']],
  ['^a\\sb$', ['a b', 'a\u00a0b', 'a\u2028b', 'a\u3000b', 'a\vb', 'ab', 'a\u200bb']],
  ['^a\\Sb$', ['axb', 'a b', 'a\u00a0b']],
  ['^a.b$', ['axb', 'a\nb', 'a\rb', 'a\u2028b', 'a\u2029b', 'a\u0085b']],
  ['^[^]+$', ['a\nb', '']],
  ['[]', ['a', '']],
  ['^\\cA$', ['\u0001', 'A']],
  ['^[\\b]$', ['\b', 'b']],
  ['^\\0$', ['\0', '0']],
  ['^\\p{Script=Greek}+$', ['αβγ', 'abc']],
  ['^\\p{Lu}\\P{Lu}*$', ['Hello', 'HELLO']],
  ['^\\p{ASCII_Hex_Digit}+$', ['0aF', 'g']],
  ['^(?<year>\\d{4})-(?<month>\\d{2})$', ['2026-12', '26-12']],
  ['^[a-z0-9._-]+@[a-z]+\\.[a-z]{2,}$', ['someone.x@example.com', 'no@tld']],
  ['^[[]+$', ['[[', ':']],
  ['^[\\d-]+$', ['12-3', 'x']],
  ['colou?r', ['the colour red', 'color', 'colr']],
  ['^(a+)+$', ['aaaa', 'aaa!']],
  ['\\bword\\b', ['a word here', 'swordfish']],
  ['^\\/path\\.json$', ['/path.json', 'xpath.json']],
];

describe('patterns on the linear-time engine', () => {
  it.each(SAME_AS_V8)('%s answers as V8 does', (pattern, inputs) => {
    const v8 = new RegExp(pattern, 'u');
    const linear = linearRegExp(pattern);
    for (const input of inputs) expect([input, linear.test(input)]).toEqual([input, v8.test(input)]);
  });

  it('refuses what needs a backtracking engine, saying why', () => {
    for (const pattern of ['(a)\\1', '(?<x>a)\\k<x>', '(?=a)b', '(?!a)b', '(?<=a)b', '(?<!a)b']) {
      expect(() => toRe2Syntax(pattern), pattern).toThrow(NonLinearPatternError);
    }
    expect(() => linearRegExp('(a)\\1')).toThrow(/backreference/);
    expect(() => linearRegExp('(?=a)')).toThrow(/lookahead or lookbehind/);
    // RE2's own limits are refusals too, never a fallback to V8.
    expect(() => linearRegExp('a{1001}')).toThrow(NonLinearPatternError);
  });

  it('runs catastrophic patterns in linear time (these would not end on V8 within the test timeout)', () => {
    const hostile = `${'a'.repeat(100_000)}!`;
    for (const pattern of ['^(a+)+$', '^(a|a)*$', '^(a|aa)+$', '(x+x+)+y', '^(\\w+\\s?)*$']) {
      expect(linearRegExp(pattern).test(hostile), pattern).toBe(false);
    }
  });

  it('refuses such a pattern at registration, naming its place, wherever a schema has one', () => {
    expect(schemaProblems({ type: 'object', properties: { s: { type: 'string', pattern: '^(a)\\1$' } } })).toEqual([
      { path: ['properties', 's', 'pattern'], message: expect.stringMatching(/backreference/) },
    ]);
    expect(schemaProblems({ type: 'object', patternProperties: { '^(?!x)': {} } })).toEqual([
      { path: ['patternProperties', '^(?!x)'], message: expect.stringMatching(/lookahead/) },
    ]);
    expect(schemaProblems({ type: 'object', propertyNames: { pattern: '(?<=a)b' } })).toEqual([
      { path: ['propertyNames', 'pattern'], message: expect.stringMatching(/lookbehind/) },
    ]);
    // Catastrophic on V8, but linear here: accepted.
    expect(schemaProblems({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } })).toEqual([]);
  });

  it('runs each pattern of a schema as itself (Ajv keys compiled patterns by their text)', async () => {
    const validators = new ArgumentValidators();
    const inputSchema = {
      type: 'object',
      properties: { zip: { type: 'string', pattern: '^\\d{5}(-\\d{4})?$' }, code: { type: 'string', pattern: '^[A-Z]{3}$' } },
      patternProperties: { '^x-': { type: 'string', pattern: '^v\\d+$' } },
    };
    const tool = { name: 'patterns', inputSchema } as unknown as Tool;
    expect(await validators.check(tool, { zip: '75001-1234', code: 'ABC', 'x-a': 'v2' })).toEqual([]);
    expect((await validators.check(tool, { zip: 'ABC', code: '75001', 'x-a': 'ABC' })).map((e) => e.path)).toEqual([
      '/zip',
      '/code',
      '/x-a',
    ]);
  });
});
