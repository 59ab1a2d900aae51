/**
 * A query's words to the terms a search scores: stop words dropped (unless there is nothing
 * else), the count of words bounded, the last word expanded as a prefix while it is being typed,
 * and the terms grouped by word, rarest first, each with its BM25 factor.
 */
import { K1, type ScoredTerm } from './search-scoring.js';
import type { Vocabulary } from './search-vocabulary.js';
import { isStopWord } from './text.js';

/** A query is cut to this many characters, then to this many words (stop words aside). */
export const MAX_QUERY_CHARS = 1024;
export const MAX_QUERY_WORDS = 16;
/** A prefix expansion counts half, so the word itself outranks the longer words (search-vocabulary.ts bounds them). */
const PREFIX_WEIGHT = 0.5;

interface QueryTerm {
  term: number;
  bit: number;
  weight: number;
}

/** The terms of one query word (the word and, for the last, its expansions), and their postings. */
export interface QueryGroup {
  bit: number;
  postings: number;
  terms: ScoredTerm[];
}

/** Distinct query terms with their word's bit: whole words, and prefixes of the last one (`df`: live documents by term). */
export function queryTerms(text: string, allWords: readonly string[], vocabulary: Vocabulary, df: Int32Array): QueryTerm[] {
  let words = allWords.filter((w) => !isStopWord(w));
  // A query of stop words only still means something in names ("to", "it").
  if (words.length === 0) words = [...allWords];
  // Type-ahead: the query ends inside its last word, which may be the start of a longer word.
  const typing = /[\p{L}\p{N}\p{M}]$/u.test(text);
  const last = allWords[allWords.length - 1] as string;
  if (typing && words[words.length - 1] !== last) words.push(last);
  const prefix = typing && words.length <= MAX_QUERY_WORDS ? last : null;
  if (words.length > MAX_QUERY_WORDS) words = words.slice(0, MAX_QUERY_WORDS);

  const terms: QueryTerm[] = [];
  const bits = new Map<number, number>();
  for (const word of words) {
    const t = vocabulary.termOf(word);
    if (t === undefined || bits.has(t)) continue;
    const bit = 1 << bits.size;
    bits.set(t, bit);
    if ((df[t] as number) > 0) terms.push({ term: t, bit, weight: 1 });
  }
  if (prefix !== null) {
    const t = vocabulary.termOf(prefix);
    const bit = t !== undefined ? (bits.get(t) as number) : 1 << bits.size;
    for (const expanded of vocabulary.expand(prefix, bits, df)) terms.push({ term: expanded, bit, weight: PREFIX_WEIGHT });
  }
  return terms;
}

/**
 * The query's terms by word (a word and its prefix expansions share a bit), rarest word first,
 * each term with its BM25 factor. Terms are scored in this order in every pass, so a document's
 * score, rounded per term, is the same whichever pass gives it. `live` documents are in the index.
 */
export function queryGroups(terms: readonly QueryTerm[], docFrequency: Int32Array, live: number): QueryGroup[] {
  const byBit = new Map<number, QueryGroup>();
  for (const { term, bit, weight } of terms) {
    const df = docFrequency[term] as number;
    const factor = weight * Math.log(1 + (live - df + 0.5) / (df + 0.5)) * (K1 + 1);
    let group = byBit.get(bit);
    if (group === undefined) byBit.set(bit, (group = { bit, postings: 0, terms: [] }));
    group.postings += df;
    group.terms.push({ term, bit, factor, whole: weight === 1 });
  }
  return [...byBit.values()].sort((a, b) => a.postings - b.postings || a.bit - b.bit);
}
