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
/** ECMAScript's `.` without the `s` flag: anything but a line terminator. */
const JS_DOT = '[^\\n\\r\\x{2028}\\x{2029}]';
const ANY = '[\\x{0}-\\x{10ffff}]';
const NOTHING = '[^\\x{0}-\\x{10ffff}]';
/** `\p{Script=Greek}` is RE2's `\p{Greek}`; a general category is written bare in both. */
const PROPERTY_PREFIX = /^(?:Script|sc|Script_Extensions|scx|General_Category|gc)=/;

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
    if (code >= 0xd800 && code <= 0xdfff) throw new NonLinearPatternError('has a lone surrogate escape, which the linear-time engine cannot match');
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
      else if (e === 'S' && !inClass) out += `[^${JS_SPACE}]`;
      else if (e === 'b' && inClass) out += hex(8);
      else if (e === '0' && !/[0-9]/.test(pattern[i] ?? '')) out += hex(0);
      else if (/[1-9]/.test(e) || e === 'k') {
        throw new NonLinearPatternError('has a backreference, which needs a backtracking engine; the registry runs patterns in linear time');
      } else if (e === 'p' || e === 'P') {
        const end = pattern.indexOf('}', i);
        if (pattern[i] !== '{' || end < 0) throw new NonLinearPatternError(`has a malformed \\${e}{...} property`);
        out += `\\${e}{${pattern.slice(i + 1, end).replace(PROPERTY_PREFIX, '')}}`;
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
      throw new NonLinearPatternError('has a lookahead or lookbehind, which needs a backtracking engine; the registry runs patterns in linear time');
    } else out += c;
  }
  return out;
}

/** What Ajv calls to build a regular expression (its `code.regExp` option). */
export interface LinearRegExp {
  test(text: string): boolean;
  toString(): string;
}

/** Compiled patterns, shared by every validator: a tool's patterns compile once. */
const compiled = new Map<string, LinearRegExp>();
const MAX_CACHED = 10_000;

/** The pattern on the linear-time engine; throws NonLinearPatternError. */
export function linearRegExp(pattern: string): LinearRegExp {
  let found = compiled.get(pattern);
  if (found) return found;
  const syntax = toRe2Syntax(pattern);
  let re: RE2JS;
  try {
    re = RE2JS.compile(syntax);
  } catch (err) {
    throw new NonLinearPatternError(`cannot run on the linear-time engine (${(err as Error).message})`);
  }
  // Ajv keys the patterns it compiled by `toString()`: without one, every pattern after the
  // first would run the first one's matcher.
  found = { test: (text: string) => re.test(text), toString: () => `/${pattern}/u` };
  if (compiled.size >= MAX_CACHED) compiled.clear();
  compiled.set(pattern, found);
  return found;
}

/** Ajv's `code.regExp`: every pattern on the linear-time engine (the `u` flag is RE2's default). */
export const ajvRegExp = Object.assign((pattern: string) => linearRegExp(pattern), { code: 'linearRegExp from src/json-schema/regex.ts' });
