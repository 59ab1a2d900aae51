/**
 * Every regular expression a schema runs (`pattern`, `patternProperties`), on a linear-time
 * engine: re2js, a pure JavaScript port of RE2 (Go's `regexp`), maintained, with no native
 * build. V8's own engine backtracks: `^(a+)+$` against 29 `a`s and a `!` took 8.9 s on the
 * event loop (issue 28), and nothing can interrupt a synchronous match. The native `re2`
 * binding would be faster per match, but it needs a compiler and Node's headers at install time
 * (its prebuilt binaries come from GitHub, which the build machines and many users' CI cannot
 * reach) and a rebuild for every Node version; a tool's patterns run on short strings, where
 * re2js costs about 1.3 us a match against V8's 0.04 us (`npm run bench -- --only=validation`).
 *
 * JSON Schema patterns are ECMA-262 regular expressions. RE2's syntax is close but not the same,
 * so a pattern is translated first: `\uXXXX` and `\u{X}` escapes, `\cX`, `\0`, `\s` (ECMAScript's
 * Unicode white space), `.` (which excludes ECMAScript's four line terminators), `[^]` and `[]`.
 * What RE2 cannot run in linear time (backreferences, lookahead and lookbehind) is refused: a
 * schema with such a pattern is refused at registration, never run on V8's engine.
 */
import { RE2JS } from 're2js';

/** A pattern that cannot run on the linear-time engine, with the reason. */
export class NonLinearPatternError extends Error {
  override readonly name = 'NonLinearPatternError';
}

/** ECMAScript's WhiteSpace and LineTerminator code points (`\s`), as RE2 class members. */
const JS_SPACE = '\\t\\n\\x{b}\\f\\r \\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}\\x{feff}';
/** Everything but JS_SPACE (ECMAScript's `\S`, where RE2's is ASCII-only), as RE2 class members. */
const JS_NOT_SPACE =
  '\\x{0}-\\x{8}\\x{e}-\\x{1f}\\x{21}-\\x{9f}\\x{a1}-\\x{167f}\\x{1681}-\\x{1fff}\\x{200b}-\\x{2027}\\x{202a}-\\x{202e}\\x{2030}-\\x{205e}\\x{2060}-\\x{2fff}\\x{3001}-\\x{fefe}\\x{ff00}-\\x{10ffff}';
/** ECMAScript's `.` without the `s` flag: anything but a line terminator. */
const JS_DOT = '[^\\n\\r\\x{2028}\\x{2029}]';
const ANY = '[\\x{0}-\\x{10ffff}]';
const NOTHING = '[^\\x{0}-\\x{10ffff}]';
/**
 * `\p{Script=Greek}` is RE2's `\p{Greek}`; a general category is written bare in both. RE2 has
 * no Script_Extensions, a larger set than Script: such a property is refused, not run as Script.
 */
const PROPERTY_PREFIX = /^(?:Script|sc|General_Category|gc)=/;
const EXTENSIONS_PREFIX = /^(?:Script_Extensions|scx)=/;

const hex = (code: number) => `\\x{${code.toString(16)}}`;
const isHex = (text: string) => /^[0-9a-fA-F]+$/.test(text);

/** The RE2 form of an ECMAScript (`u` flag) pattern; throws NonLinearPatternError. */
export function toRe2Syntax(pattern: string): string {
  let out = '';
  let inClass = false;
  let i = 0;
  /** A `\u` escape at `i` (after the backslash and `u`), as a code point, advancing `i`. */
  const unicodeEscape = (): number => {
    if (pattern[i] === '{') {
      const end = pattern.indexOf('}', i);
      const digits = pattern.slice(i + 1, end);
      if (end < 0 || !isHex(digits)) throw new NonLinearPatternError('has a malformed \\u{...} escape');
      i = end + 1;
      return Number.parseInt(digits, 16);
    }
    const digits = pattern.slice(i, i + 4);
    if (digits.length < 4 || !isHex(digits)) throw new NonLinearPatternError('has a malformed \\uXXXX escape');
    i += 4;
    let code = Number.parseInt(digits, 16);
    // A surrogate pair written as two escapes is one code point under the `u` flag.
    const low = pattern.slice(i, i + 6);
    if (code >= 0xd800 && code <= 0xdbff && /^\\u[dD][c-fC-F][0-9a-fA-F]{2}$/.test(low)) {
      code = 0x10000 + ((code - 0xd800) << 10) + (Number.parseInt(low.slice(2), 16) - 0xdc00);
      i += 6;
    }
    if (code >= 0xd800 && code <= 0xdfff)
      throw new NonLinearPatternError('has a lone surrogate escape, which the linear-time engine cannot match');
    return code;
  };
  while (i < pattern.length) {
    const c = pattern[i] as string;
    i++;
    if (c === '\\') {
      const e = pattern[i];
      i++;
      if (e === undefined) throw new NonLinearPatternError('ends with a lone backslash');
      if (e === 'u') out += hex(unicodeEscape());
      else if (e === 'c' && /^[a-zA-Z]$/.test(pattern[i] ?? '')) out += hex((pattern.charCodeAt(i++) as number) % 32);
      else if (e === 's') out += inClass ? JS_SPACE : `[${JS_SPACE}]`;
      else if (e === 'S') out += inClass ? JS_NOT_SPACE : `[${JS_NOT_SPACE}]`;
      else if (e === 'b' && inClass) out += hex(8);
      else if (e === '0' && !/[0-9]/.test(pattern[i] ?? '')) out += hex(0);
      else if (/[1-9]/.test(e) || e === 'k') {
        throw new NonLinearPatternError(
          'has a backreference, which needs a backtracking engine; the registry runs patterns in linear time',
        );
      } else if (e === 'p' || e === 'P') {
        const end = pattern.indexOf('}', i);
        if (pattern[i] !== '{' || end < 0) throw new NonLinearPatternError(`has a malformed \\${e}{...} property`);
        const property = pattern.slice(i + 1, end);
        if (EXTENSIONS_PREFIX.test(property))
          throw new NonLinearPatternError(`uses \\${e}{${property}}: the linear-time engine has no Script_Extensions (write Script=...)`);
        out += `\\${e}{${property.replace(PROPERTY_PREFIX, '')}}`;
        i = end + 1;
      } else out += `\\${e}`;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      // A `[` inside a class is a literal in ECMAScript; RE2 would read `[:alpha:]` in it.
      out += c === '[' ? '\\[' : c;
      continue;
    }
    if (c === '[') {
      // `[]` matches nothing and `[^]` anything in ECMAScript; RE2 reads a `]` there as a literal.
      if (pattern.startsWith(']', i)) {
        out += NOTHING;
        i += 1;
      } else if (pattern.startsWith('^]', i)) {
        out += ANY;
        i += 2;
      } else {
        inClass = true;
        out += c;
      }
      continue;
    }
    if (c === '.') out += JS_DOT;
    else if (c === '(' && /^\?(?:[=!]|<[=!])/.test(pattern.slice(i, i + 3))) {
      throw new NonLinearPatternError(
        'has a lookahead or lookbehind, which needs a backtracking engine; the registry runs patterns in linear time',
      );
    } else out += c;
  }
  return out;
}

/** What Ajv calls to build a regular expression (its `code.regExp` option). */
export interface LinearRegExp {
  test(text: string): boolean;
  toString(): string;
  /**
   * The size of its automaton, in RE2 instructions. RE2 matches in time linear in the text, but
   * each character may cost a step per live state: `[ab]{1000}` twenty times (20,000
   * instructions) took 8 s on 19,900 `a`s. The work bound (work.ts) weighs each character by it.
   */
  readonly size: number;
}

/**
 * The largest automaton a pattern may compile to. Compiling costs about 1 us an instruction
 * and keeps about 70 bytes of heap each: `[ab]{1000}` 1,300 times (1.3 million) took 1.2-2 s and
 * 94 MB. Patterns in tools' schemas compile to tens or hundreds (an e-mail pattern: 13).
 */
const MAX_PATTERN_SIZE = 5_000;
/** Compiled patterns, shared by every validator: a tool's patterns compile once. */
const compiled = new Map<string, LinearRegExp>();
/** The most instructions the cache keeps (about 35 MB); past it, it starts afresh. */
const MAX_CACHED_SIZE = 500_000;
let cachedSize = 0;

/**
 * About how many RE2 instructions a pattern in RE2 syntax compiles to, from its text alone (a
 * counted repeat copies what it repeats), so that a huge one is refused before it is compiled.
 */
function estimatedSize(syntax: string): number {
  /** Per open group: its size so far, and the size of its last atom (for a repeat after it). */
  const groups: { size: number; last: number }[] = [{ size: 0, last: 0 }];
  let i = 0;
  const atom = (size: number) => {
    const top = groups[groups.length - 1] as { size: number; last: number };
    top.size += size;
    top.last = size;
  };
  while (i < syntax.length) {
    const c = syntax[i] as string;
    if (c === '\\') {
      // An escape: \x{...} and \p{...} run to their brace; others are two characters.
      const brace = syntax[i + 2] === '{' ? syntax.indexOf('}', i) : -1;
      i = brace > 0 ? brace + 1 : i + 2;
      atom(1);
    } else if (c === '[') {
      // A class is one instruction; skip to its end, past escapes.
      i++;
      if (syntax[i] === '^') i++;
      if (syntax[i] === ']') i++;
      while (i < syntax.length && syntax[i] !== ']') i += syntax[i] === '\\' ? 2 : 1;
      i++;
      atom(1);
    } else if (c === '(') {
      groups.push({ size: 0, last: 0 });
      i++;
    } else if (c === ')') {
      const group = groups.length > 1 ? (groups.pop() as { size: number; last: number }) : { size: 0, last: 0 };
      atom(group.size + 2);
      i++;
    } else if (c === '{') {
      const end = syntax.indexOf('}', i);
      const counts = end > 0 ? /^\{(\d+)(?:,(\d*))?\}$/.exec(syntax.slice(i, end + 1)) : null;
      if (counts) {
        const top = groups[groups.length - 1] as { size: number; last: number };
        const copies = Math.max(Number(counts[1]), counts[2] ? Number(counts[2]) : 0, 1);
        top.size += top.last * (copies - 1) + 1;
        top.last *= copies;
        i = end + 1;
      } else {
        atom(1);
        i++;
      }
    } else {
      if (c !== '|' && c !== '*' && c !== '+' && c !== '?') atom(1);
      else (groups[groups.length - 1] as { size: number }).size++;
      i++;
    }
  }
  return groups.reduce((sum, group) => sum + group.size, 0);
}

/** The program size re2js compiled (its internal `prog.inst`), else the estimate. */
function programSize(re: RE2JS, estimate: number): number {
  const inst = (re as unknown as { re2Input?: { prog?: { inst?: unknown[] } } }).re2Input?.prog?.inst;
  return Array.isArray(inst) ? inst.length : estimate;
}

/** The pattern on the linear-time engine; throws NonLinearPatternError. */
export function linearRegExp(pattern: string): LinearRegExp {
  let found = compiled.get(pattern);
  if (found) return found;
  const syntax = toRe2Syntax(pattern);
  const estimate = estimatedSize(syntax);
  if (estimate > MAX_PATTERN_SIZE) throw tooLarge(estimate);
  let re: RE2JS;
  try {
    re = RE2JS.compile(syntax);
  } catch (err) {
    throw new NonLinearPatternError(`cannot run on the linear-time engine (${(err as Error).message})`);
  }
  const size = programSize(re, estimate);
  if (size > MAX_PATTERN_SIZE) throw tooLarge(size);
  // Ajv keys the patterns it compiled by `toString()`: without one, every pattern after the
  // first would run the first one's matcher.
  found = { test: (text: string) => re.test(text), toString: () => `/${pattern}/u`, size };
  if (cachedSize + size > MAX_CACHED_SIZE) {
    compiled.clear();
    cachedSize = 0;
  }
  compiled.set(pattern, found);
  cachedSize += size;
  return found;
}

const tooLarge = (size: number) =>
  new NonLinearPatternError(
    `compiles to about ${size} states of the linear-time engine, more than the ${MAX_PATTERN_SIZE} a pattern may have (a counted repeat such as {1000} copies what it repeats)`,
  );

/** Ajv's `code.regExp`: every pattern on the linear-time engine (the `u` flag is RE2's default). */
export const ajvRegExp = Object.assign((pattern: string) => linearRegExp(pattern), { code: 'linearRegExp from src/json-schema/regex.ts' });
