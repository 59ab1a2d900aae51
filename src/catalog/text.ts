/**
 * Text to search terms, the same way for tools and for queries: words are runs of Unicode
 * letters and digits, lower-cased, without diacritics, with snake_case, kebab-case, dotted and
 * camelCase names split into their words (`fetchWeatherForecast`, `fetch_weather-forecast.v2`
 * -> fetch, weather, forecast, v2). Everything else, control characters included, separates.
 */
import { stemmer } from 'stemmer';

/** Longer words are cut to this many UTF-16 units, in tools and queries alike. */
const MAX_WORD_CHARS = 64;

const SEPARATOR = 0;
const LOWER = 1;
const UPPER = 2;
const DIGIT = 3;
/** Letters without case (CJK, Arabic...): no camelCase rule applies to them. */
const CASELESS = 4;

const ASCII_CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  if (c >= 97 && c <= 122) ASCII_CLASS[c] = LOWER;
  else if (c >= 65 && c <= 90) ASCII_CLASS[c] = UPPER;
  else if (c >= 48 && c <= 57) ASCII_CLASS[c] = DIGIT;
}

const MARKS = /\p{M}/gu;
const UPPER_LETTER = /^[\p{Lu}\p{Lt}]$/u;
const LOWER_LETTER = /^\p{Ll}$/u;
const LETTER = /^\p{L}$/u;
const NUMBER = /^\p{N}$/u;

/** Classes of BMP code points beyond ASCII, plus 1, filled in as they are met (0: not yet). */
const BMP_CLASS = new Uint8Array(0x10000);

/** The class of a code point of 128 or more (ASCII goes through ASCII_CLASS). */
function classOf(codePoint: number): number {
  if (codePoint >= 0x10000) return classOfChar(String.fromCodePoint(codePoint));
  const known = BMP_CLASS[codePoint] as number;
  if (known !== 0) return known - 1;
  const kind = classOfChar(String.fromCodePoint(codePoint));
  BMP_CLASS[codePoint] = kind + 1;
  return kind;
}

function classOfChar(char: string): number {
  if (UPPER_LETTER.test(char)) return UPPER;
  if (LOWER_LETTER.test(char)) return LOWER;
  if (LETTER.test(char)) return CASELESS;
  return NUMBER.test(char) ? DIGIT : SEPARATOR;
}

/** Compatibility decomposition without the marks: `café` -> cafe, `Ｆｕｌｌ` -> Full, `ﬁle` -> file. */
function fold(text: string): string {
  return text.normalize('NFKD').replace(MARKS, '');
}

/** The largest `maxWords` splitWords honours. */
const MAX_SPLIT_WORDS = 1024;

/**
 * The words of `text`, lower-cased and cut to MAX_WORD_CHARS, at most `maxWords` (and 1,024)
 * of them. ASCII text (nearly every tool) is split as it is; other text is folded first.
 *
 * camelCase splits before an upper-case letter that follows a lower-case letter or a digit
 * (`ipv4Address` -> ipv4, address), and an upper-case run of three or more before a lower-case
 * letter gives its last letter to the next word (`HTTPServer` -> http, server; `IOError` -> io,
 * error) unless that would leave a plural `s` alone (`URLs` -> urls). `OAuth` stays one word.
 */
export function splitWords(text: string, maxWords: number): string[] {
  const limit = Math.min(maxWords, MAX_SPLIT_WORDS);
  return scanWords(text, limit, true) ?? scanWords(fold(text), limit, false) ?? [];
}

/** splitWords on a text already folded; null at the first character beyond ASCII if `asciiOnly`. */
function scanWords(s: string, maxWords: number, asciiOnly: boolean): string[] | null {
  const words: string[] = [];
  if (maxWords <= 0) return words;
  const n = s.length;
  let start = -1;
  /** Whether the word has characters toLowerCase may change. */
  let mixed = false;
  let previous = SEPARATOR;
  let previousAt = 0;
  let previousMixed = false;
  let upperRun = 0;
  // One pass over UTF-16 units, ASCII by table.
  for (let i = 0; i < n;) {
    let c = s.charCodeAt(i);
    let width = 1;
    let kind: number;
    if (c < 128) {
      kind = ASCII_CLASS[c] as number;
    } else {
      if (asciiOnly) return null;
      c = s.codePointAt(i) as number;
      width = c > 0xffff ? 2 : 1;
      kind = classOf(c);
    }
    // Where the current word ends here, and where the next one starts (-1: not yet).
    let end = -1;
    let next = -1;
    if (kind === SEPARATOR) {
      end = i;
    } else if (start < 0) {
      start = i;
      mixed = false;
    } else if (kind === UPPER && (previous === LOWER || previous === DIGIT)) {
      end = next = i;
    } else if (kind === LOWER && previous === UPPER && upperRun >= 3 && !(c === 115 && kindAt(s, i + 1) !== LOWER)) {
      end = next = previousAt;
    }
    if (end >= 0 && start >= 0) {
      words.push(wordAt(s, start, end, mixed));
      if (words.length >= maxWords) return words;
      start = next;
      // A word that starts at the previous character has that character's case.
      mixed = next >= 0 && next < i && previousMixed;
    }
    const own = kind === UPPER || c >= 128;
    mixed ||= own;
    upperRun = kind === UPPER ? (previous === UPPER ? upperRun + 1 : 1) : 0;
    previous = kind;
    previousAt = i;
    previousMixed = own;
    i += width;
  }
  if (start >= 0) words.push(wordAt(s, start, n, mixed));
  return words;
}

function kindAt(s: string, i: number): number {
  if (i >= s.length) return SEPARATOR;
  const c = s.charCodeAt(i);
  return c < 128 ? (ASCII_CLASS[c] as number) : classOf(s.codePointAt(i) as number);
}

function wordAt(s: string, start: number, end: number, mixed: boolean): string {
  const word = mixed ? s.slice(start, end).toLowerCase() : s.slice(start, end);
  return word.length > MAX_WORD_CHARS ? word.slice(0, MAX_WORD_CHARS) : word;
}

/** Lucene's English stop words: dropped from titles, descriptions and queries, kept in names. */
const STOP_WORDS: ReadonlySet<string> = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'but',
  'by',
  'for',
  'if',
  'in',
  'into',
  'is',
  'it',
  'no',
  'not',
  'of',
  'on',
  'or',
  'such',
  'that',
  'the',
  'their',
  'then',
  'there',
  'these',
  'they',
  'this',
  'to',
  'was',
  'will',
  'with',
]);

export function isStopWord(word: string): boolean {
  return STOP_WORDS.has(word);
}

/**
 * The term a word is indexed and searched under: Porter's stem (the `stemmer` package) with a
 * final double consonant made single, so that every inflection meets. Porter alone gives
 * add -> add but adding, added -> ad; with the last step add, adds, added and adding all give
 * `ad` (and call, calls, calling give `cal`). Only words of a-z are stemmed: Porter is for
 * English, and `v2`, `utf8` or `straße` are kept as they are.
 */
export function stem(word: string): string {
  if (word.length < 3) return word;
  for (let i = 0; i < word.length; i++) {
    const c = word.charCodeAt(i);
    if (c < 97 || c > 122) return word;
  }
  const stemmed = stemmer(word);
  const n = stemmed.length;
  const last = stemmed.charCodeAt(n - 1);
  if (n >= 3 && last === stemmed.charCodeAt(n - 2) && !isVowel(last)) return stemmed.slice(0, -1);
  return stemmed;
}

function isVowel(code: number): boolean {
  return code === 97 || code === 101 || code === 105 || code === 111 || code === 117;
}
