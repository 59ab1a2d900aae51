/**
 * The search index's vocabulary: every word its documents had, each to its term (the word's stem)
 * and whether it is a stop word, and the words by their first two code units, for the type-ahead
 * prefix of a query's last word.
 */
import { isStopWord, stem } from './text.js';

/**
 * The prefix bound. The last word expands when it has 2 or more characters, to at most 16 other
 * terms, the most frequent first, chosen among at most 2,048 vocabulary words that start with
 * it, and only while their postings add up to at most 65,536 (a term that would pass that is
 * left out). So a short prefix costs at most 16 terms and 65,536 postings more, whatever the
 * size of the catalogue. Expanded terms count half (search-query.ts), so the word itself outranks
 * the longer words.
 */
const MIN_PREFIX_CHARS = 2;
const MAX_PREFIX_TERMS = 16;
const MAX_PREFIX_SCAN = 2048;
const MAX_PREFIX_POSTINGS = 65_536;

/**
 * Vocabulary words that share their first two code units. A bulk load appends to them and a
 * search sorts them when it first needs them; a single write keeps a sorted bucket sorted.
 */
interface PrefixBucket {
  words: string[];
  terms: number[];
  sorted: boolean;
}

function lowerBound(words: readonly string[], word: string): number {
  let lo = 0;
  let hi = words.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((words[mid] as string) < word) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Words and terms by id; the index keeps each term's postings and counts by the same id. */
export class Vocabulary {
  /** Every word seen, lower-cased as written -> its term * 2, + 1 for a stop word: one lookup a word. */
  readonly #words = new Map<string, number>();
  readonly #buckets = new Map<string, PrefixBucket>();
  #stems = new Map<string, number>();
  #termText: string[] = [];
  #termCount = 0;

  /** Terms so far: their ids are 0 to termCount - 1. */
  get termCount(): number {
    return this.#termCount;
  }

  /** A word's code, its term * 2 (+ 1 for a stop word), if it was seen before. */
  codeOf(word: string): number | undefined {
    return this.#words.get(word);
  }

  /** Adds a word not seen before, with its stem's term (new if need be) and its prefix entry; returns its code. */
  add(word: string, bulk: boolean): number {
    const stemmed = stem(word);
    let t = this.#stems.get(stemmed);
    if (t === undefined) {
      t = this.#termCount++;
      this.#stems.set(stemmed, t);
      this.#termText[t] = stemmed;
    }
    const code = t * 2 + (isStopWord(word) ? 1 : 0);
    this.#words.set(word, code);
    if (word.length >= MIN_PREFIX_CHARS) {
      const key = word.slice(0, MIN_PREFIX_CHARS);
      const bucket = this.#buckets.get(key);
      if (bucket === undefined) {
        this.#buckets.set(key, { words: [word], terms: [t], sorted: true });
      } else if (bucket.sorted && !bulk) {
        const at = lowerBound(bucket.words, word);
        bucket.words.splice(at, 0, word);
        bucket.terms.splice(at, 0, t);
      } else {
        bucket.words.push(word);
        bucket.terms.push(t);
        bucket.sorted = false;
      }
    }
    return code;
  }

  /** The term of a query word, if some document ever had it. */
  termOf(word: string): number | undefined {
    const code = this.#words.get(word);
    return code !== undefined ? code >>> 1 : this.#stems.get(stem(word));
  }

  /**
   * Terms other than `exclude` of vocabulary words that start with `prefix`, by `df` (each term's
   * live documents); see MAX_PREFIX_TERMS.
   */
  expand(prefix: string, exclude: ReadonlyMap<number, number>, df: Int32Array): number[] {
    if (prefix.length < MIN_PREFIX_CHARS) return [];
    const bucket = this.#buckets.get(prefix.slice(0, MIN_PREFIX_CHARS));
    if (bucket === undefined) return [];
    if (!bucket.sorted) {
      // Sorted on first use after words were added: the cost of one bucket, not the vocabulary.
      const order = bucket.words.map((_, i) => i).sort((a, b) => ((bucket.words[a] as string) < (bucket.words[b] as string) ? -1 : 1));
      bucket.words = order.map((i) => bucket.words[i] as string);
      bucket.terms = order.map((i) => bucket.terms[i] as number);
      bucket.sorted = true;
    }
    const candidates = new Set<number>();
    const { words, terms } = bucket;
    for (let i = lowerBound(words, prefix), end = Math.min(words.length, i + MAX_PREFIX_SCAN); i < end; i++) {
      if (!(words[i] as string).startsWith(prefix)) break;
      const t = terms[i] as number;
      if ((df[t] as number) > 0 && !exclude.has(t)) candidates.add(t);
    }
    const text = this.#termText;
    const byFrequency = [...candidates].sort(
      (a, b) => (df[b] as number) - (df[a] as number) || ((text[a] as string) < (text[b] as string) ? -1 : 1),
    );
    const chosen: number[] = [];
    let postings = 0;
    for (const t of byFrequency) {
      if (postings + (df[t] as number) > MAX_PREFIX_POSTINGS) continue;
      postings += df[t] as number;
      chosen.push(t);
      if (chosen.length === MAX_PREFIX_TERMS) break;
    }
    return chosen;
  }

  /**
   * Terms get the ids of a compaction (`termMap`, -1 for a term no live document has, `terms` of
   * them stay): words of dead terms go, the others point at the new ids.
   */
  compact(termMap: Int32Array, terms: number): void {
    const termText: string[] = [];
    const stems = new Map<string, number>();
    termMap.forEach((nt, t) => {
      if (nt < 0) return;
      termText[nt] = this.#termText[t] as string;
      stems.set(termText[nt], nt);
    });
    for (const [word, code] of this.#words) {
      const nt = termMap[code >>> 1] as number;
      if (nt < 0) this.#words.delete(word);
      else this.#words.set(word, nt * 2 + (code & 1));
    }
    for (const [key, bucket] of this.#buckets) {
      const kept: PrefixBucket = { words: [], terms: [], sorted: bucket.sorted };
      bucket.words.forEach((word, i) => {
        const nt = termMap[bucket.terms[i] as number] as number;
        if (nt < 0) return;
        kept.words.push(word);
        kept.terms.push(nt);
      });
      if (kept.words.length === 0) this.#buckets.delete(key);
      else this.#buckets.set(key, kept);
    }
    this.#termText = termText;
    this.#stems = stems;
    this.#termCount = terms;
  }
}
