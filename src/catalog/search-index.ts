/**
 * Ranked full-text search over tools, in memory and kept up to date write by write, so that a
 * search costs the postings of its words and its page, never a scan of the catalogue or SQL.
 *
 * Ranking: a query is an OR of its words. Documents that match more of them come first, then
 * BM25F (a name word weighs most, then title, keywords, description), then the name in the
 * catalogue's order (`<`). A document whose name is the query, or has exactly the query's words
 * (`weather_forecast` for "Weather forecast"), comes before all others. The last word also
 * matches as a prefix (type-ahead) unless the query ends in a separator; see MAX_PREFIX_TERMS
 * (search-vocabulary.ts).
 *
 * Pruning (MaxScore, with the tier as the score): a document in none of the rarest r words has
 * at most k - r of the query's k words. So a search first reads only the rarest word's postings,
 * and looks the other words up for those documents, skipping whole blocks; if the page it finds
 * is full of documents with more than k - 1 words, no other can displace them. Otherwise it runs
 * again with as many of the rarest words as that page proves necessary, or all of them. "customer
 * invoices summary" at 100,000 tools (words in 0.5% to 16% of them) went from 1.06 to 0.51 ms.
 * A one-word search still scores every document with the word (3 ms for one in 88% of 100,000).
 *
 * Writes: a document is searchable as soon as it is added. Replacing or removing one marks its
 * id dead (searches skip it; document frequencies and average lengths count live documents
 * only, through a forward index of each document's terms). When dead ids pass a quarter of all
 * ids, postings, documents and vocabulary are rebuilt without them, in time proportional to the
 * live postings, amortised over the writes that made the dead ids.
 *
 * Parts: the postings and their layout (search-postings.ts), the vocabulary and its prefixes
 * (search-vocabulary.ts), a query's terms (search-query.ts), scoring and choosing the page
 * (search-scoring.ts); this file holds the documents and runs the passes.
 */
import {
  compactPostings,
  FIELD_COUNT,
  FIELDS,
  HEADER,
  lengthCode,
  MAX_DOC_WORDS,
  NAME,
  OFFSET_MASK,
  PAGE_WORDS,
  PostingPool,
  type Field,
} from './search-postings.js';
import { MAX_QUERY_CHARS, queryGroups, queryTerms, type QueryGroup } from './search-query.js';
import {
  clearScratch,
  fieldNorms,
  NAME_MARK,
  NAME_WORDS_MARK,
  newScratch,
  probe,
  roomyScratch,
  scoreTerm,
  select,
  type Best,
  type Scratch,
} from './search-scoring.js';
import { Vocabulary } from './search-vocabulary.js';
import { splitWords } from './text.js';

export interface SearchDocument {
  /** The tool's name: the key of the document, and its words weigh most. */
  name: string;
  /** A human title, if the tool has one. */
  title?: string | undefined;
  description: string;
  /** Tags or other words to be found by. */
  keywords?: readonly string[] | undefined;
}

export interface SearchOptions {
  /** The most names to return. */
  limit: number;
  /**
   * Whether the caller may have this tool (its view, its filters). Called only for documents
   * good enough to enter the results; it must not change the index (a search whose `accept`
   * does returns the results it had by then).
   */
  accept?: ((name: string) => boolean) | undefined;
}

const COMPACT_MIN_DEAD = 1024;
const COMPACT_DEAD_FRACTION = 0.25;

type Growable = Uint8Array | Uint16Array | Uint32Array | Int32Array;

function grown<A extends Growable>(array: A, length: number): A {
  if (length <= array.length) return array;
  const next = new (array.constructor as new (n: number) => A)(Math.max(length, Math.ceil(array.length * 1.5), 64));
  (next as Uint8Array).set(array as Uint8Array);
  return next;
}

/** FNV-1a over a name's words, so that a query can find the tool it names without a string compare per tool. */
function hashWords(words: readonly string[]): number {
  let h = 0x811c9dc5;
  for (const word of words) {
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ 32, 0x01000193);
  }
  return h;
}

export class SearchIndex {
  // Documents, by id.
  #docCount = 0;
  #dead = 0;
  readonly #ids = new Map<string, number>();
  #names: string[] = [];
  #alive = new Uint8Array(0);
  /** Words per field, FIELD_COUNT per document, for the live totals. */
  #lengths = new Uint16Array(0);
  readonly #lengthTotals = [0, 0, 0, 0];
  /** Document d's distinct terms are #forward[#forwardStart[d] .. #forwardStart[d + 1]). */
  #forwardStart = new Uint32Array(1);
  #forward = new Uint32Array(0);
  /** A hash of each document's name words, to find the one named by a query. */
  #nameHash = new Int32Array(0);

  // Terms, by id (the vocabulary numbers them).
  readonly #vocabulary = new Vocabulary();
  #head = new Uint32Array(0);
  #tail = new Uint32Array(0);
  /** Live documents with the term. */
  #df = new Int32Array(0);

  #pool = new PostingPool();
  /** Per-term counts while a document is added, and the terms it has. */
  #counts = new Uint32Array(0);
  readonly #seen = new Int32Array(MAX_DOC_WORDS);
  #scratch: Scratch = { acc: new Float32Array(0), touched: new Int32Array(0) };
  #searching = false;
  /** Changes on every write, so that a search notices an `accept` that wrote. */
  #epoch = 0;
  /** The epoch as select() reads it after each `accept`, made once rather than per search. */
  readonly #epochNow = (): number => this.#epoch;

  /** Live documents. */
  get size(): number {
    return this.#ids.size;
  }

  /** Adds a document, or replaces the one with the same name (its old words stop matching). */
  upsert(doc: SearchDocument): void {
    this.#upsert(doc, false);
    this.#compactIfWorthIt();
  }

  /**
   * Adds or replaces many documents: a load, an import, or one chunk of either. Each is
   * searchable as soon as it is added, so a caller can feed chunks between event-loop turns
   * (or build a new index in chunks and swap it in). The same as upsert one by one.
   */
  upsertMany(docs: Iterable<SearchDocument>): void {
    for (const doc of docs) this.#upsert(doc, true);
    this.#compactIfWorthIt();
  }

  remove(name: string): void {
    const id = this.#ids.get(name);
    if (id === undefined) return;
    this.#kill(id);
    this.#compactIfWorthIt();
  }

  /** Names of the best `limit` accepted documents, best first; [] for a query without words. */
  search(query: string, options: SearchOptions): string[] {
    if (typeof query !== 'string' || !(options.limit >= 1) || this.#ids.size === 0) return [];
    const text = query.length > MAX_QUERY_CHARS ? query.slice(0, MAX_QUERY_CHARS) : query;
    const allWords = splitWords(text, MAX_QUERY_CHARS);
    if (allWords.length === 0) return [];
    const groups = queryGroups(queryTerms(text, allWords, this.#vocabulary, this.#df), this.#df, this.#ids.size);
    const nested = this.#searching;
    // A search run from inside another's `accept` has scratch of its own.
    const scratch = nested ? newScratch(this.#docCount) : (this.#scratch = roomyScratch(this.#scratch, this.#docCount));
    // Ids below this are the ones this search can touch, even if `accept` compacts the index.
    const docCount = this.#docCount;
    const limit = Math.floor(options.limit);
    const nameWords = allWords.slice(0, (FIELDS[NAME] as Field).maxWords);
    const trimmed = text.trim();
    const norms = fieldNorms(this.#lengthTotals, this.#ids.size);
    this.#searching = true;
    let touched = 0;
    try {
      // First only the rarest word's documents, if that can fill the page (see #pass); if it did
      // not, again with as many words as the page it found proves are needed, or all of them.
      const k = groups.length;
      let essential = Math.min(k, 1);
      for (;;) {
        touched = this.#pass(groups, essential, norms, scratch, nameWords, trimmed);
        const best = this.#best(scratch, touched, limit, options.accept);
        const full = best.names.length === limit;
        // A document in none of the first `essential` groups has at most k - essential of the
        // query's words, and no name mark (a named document has every word).
        if (essential === k || best.stopped || (full && best.worstTier > k - essential)) return best.names;
        clearScratch(scratch, touched, docCount);
        touched = 0;
        essential = full ? Math.min(k, k - best.worstTier + 1) : k;
      }
    } finally {
      clearScratch(scratch, touched, docCount);
      this.#searching = nested;
    }
  }

  #upsert(doc: SearchDocument, bulk: boolean): void {
    const old = this.#ids.get(doc.name);
    if (old !== undefined) this.#kill(old);
    this.#add(doc, bulk);
  }

  #add(doc: SearchDocument, bulk: boolean): void {
    this.#epoch++;
    const d = this.#docCount++;
    this.#ids.set(doc.name, d);
    this.#names[d] = doc.name;
    this.#alive = grown(this.#alive, d + 1);
    this.#alive[d] = 1;
    this.#lengths = grown(this.#lengths, (d + 1) * FIELD_COUNT);
    this.#nameHash = grown(this.#nameHash, d + 1);

    const seen = this.#seen;
    let distinct = 0;
    // Each field's length code, where the posting of a term in that field has it.
    let lengthBits = 0;
    const keywords = doc.keywords !== undefined && doc.keywords.length > 0 ? doc.keywords.join(' ') : '';
    for (let f = 0; f < FIELD_COUNT; f++) {
      const field = FIELDS[f] as Field;
      const text = f === NAME ? doc.name : f === 1 ? doc.title : f === 2 ? keywords : doc.description;
      const words = typeof text === 'string' && text !== '' ? splitWords(text, field.maxWords) : [];
      if (f === NAME) this.#nameHash[d] = hashWords(words);
      const shift = 8 * f;
      let length = 0;
      for (const word of words) {
        const code = this.#vocabulary.codeOf(word) ?? this.#newWord(word, bulk);
        if (field.dropStopWords && (code & 1) === 1) continue;
        length++;
        const t = code >>> 1;
        const counts = this.#counts[t] as number;
        if (counts === 0) seen[distinct++] = t;
        if (((counts >>> shift) & 3) < 3) this.#counts[t] = counts + (1 << shift);
      }
      this.#lengths[d * FIELD_COUNT + f] = length;
      this.#lengthTotals[f] = (this.#lengthTotals[f] as number) + length;
      lengthBits |= lengthCode(length) << (shift + 2);
    }

    const start = this.#forwardStart[d] as number;
    this.#forward = grown(this.#forward, start + distinct);
    this.#forwardStart = grown(this.#forwardStart, d + 2);
    this.#forwardStart[d + 1] = start + distinct;
    for (let i = 0; i < distinct; i++) {
      const t = seen[i] as number;
      const counts = this.#counts[t] as number;
      this.#counts[t] = 0;
      // 0xfc in each byte whose field has the term, for the length codes of those fields.
      const present = (counts | (counts >>> 1)) & 0x01010101;
      const meta = (counts | (lengthBits & (present * 0xfc))) >>> 0;
      this.#forward[start + i] = t;
      const tail = this.#tail[t] as number;
      if (tail === 0) {
        const block = this.#pool.allocate(1);
        this.#head[t] = block;
        this.#tail[t] = this.#pool.append(block, d, meta);
      } else {
        this.#tail[t] = this.#pool.append(tail, d, meta);
      }
      this.#df[t] = (this.#df[t] as number) + 1;
    }
  }

  #kill(d: number): void {
    this.#epoch++;
    this.#alive[d] = 0;
    this.#ids.delete(this.#names[d] as string);
    this.#names[d] = '';
    this.#dead++;
    for (let i = this.#forwardStart[d] as number, end = this.#forwardStart[d + 1] as number; i < end; i++) {
      const t = this.#forward[i] as number;
      this.#df[t] = (this.#df[t] as number) - 1;
    }
    for (let f = 0; f < FIELD_COUNT; f++) {
      this.#lengthTotals[f] = (this.#lengthTotals[f] as number) - (this.#lengths[d * FIELD_COUNT + f] as number);
    }
  }

  /** Adds a word not seen before to the vocabulary, and room for its term if the term is new; returns its code. */
  #newWord(word: string, bulk: boolean): number {
    const code = this.#vocabulary.add(word, bulk);
    // A new term takes the next id; grown() returns an array as it is when it has room already.
    const terms = this.#vocabulary.termCount;
    this.#head = grown(this.#head, terms);
    this.#tail = grown(this.#tail, terms);
    this.#df = grown(this.#df, terms);
    this.#counts = grown(this.#counts, terms);
    return code;
  }

  /**
   * One pass of scoring (MaxScore, with the tier for a score). The first `essential` groups are
   * read term at a time: their documents are the candidates. Each other term is then only
   * looked up for the candidates, in document order, skipping whole blocks, so a common word
   * costs about the rare word's documents, not its own. With every group essential, every
   * document with any word is scored. Returns how many documents the pass touched.
   */
  #pass(
    groups: readonly QueryGroup[],
    essential: number,
    norms: Float64Array,
    scratch: Scratch,
    nameWords: readonly string[],
    trimmed: string,
  ): number {
    let count = 0;
    for (let g = 0; g < essential; g++)
      for (const term of (groups[g] as QueryGroup).terms) count = scoreTerm(this.#pool, this.#head, term, norms, scratch, count);
    if (essential < groups.length && count > 0) {
      const candidates = scratch.touched.subarray(0, count);
      let sorted = true;
      for (let i = 1; i < count && sorted; i++) sorted = (candidates[i - 1] as number) < (candidates[i] as number);
      if (!sorted) candidates.sort();
      for (let g = essential; g < groups.length; g++)
        for (const term of (groups[g] as QueryGroup).terms) probe(this.#pool, this.#head, term, norms, scratch, 0, count);
    }
    return this.#markNamed(scratch, count, groups, norms, nameWords, trimmed);
  }

  /**
   * Marks the documents named by the query: their name's words are the query's words, or their
   * name is the query. Such a document has every whole query term in its name, and as many name
   * words as the query has words, so the candidates are the postings of the rarest term with
   * that name length (read again: they are few), checked by hash, then by their words.
   */
  #markNamed(
    scratch: Scratch,
    touched: number,
    groups: readonly QueryGroup[],
    norms: Float64Array,
    nameWords: readonly string[],
    trimmed: string,
  ): number {
    let rarest = -1;
    for (const group of groups) {
      for (const { term, whole } of group.terms) {
        if (whole && (rarest < 0 || (this.#df[term] as number) < (this.#df[rarest] as number))) rarest = term;
      }
    }
    if (rarest < 0) return touched;
    const { acc, touched: docs } = scratch;
    const nameByte = (lengthCode(nameWords.length) << 2) & 255;
    const hash = hashWords(nameWords);
    const key = nameWords.join(' ');
    const pages = this.#pool.pages;
    let count = touched;
    for (let block = this.#head[rarest] as number; block !== 0;) {
      const page = pages[Math.floor(block / PAGE_WORDS)] as Uint32Array;
      const at = block & OFFSET_MASK;
      for (let i = at + HEADER, end = i + 2 * (page[at + 2] as number); i < end; i += 2) {
        const d = page[i] as number;
        if (((page[i + 1] as number) & 0xfc) !== nameByte || this.#alive[d] === 0 || this.#nameHash[d] !== hash) continue;
        const name = this.#names[d] as string;
        if (splitWords(name, nameWords.length + 1).join(' ') !== key) continue;
        const a = 2 * d;
        if (acc[a] === 0 && acc[a + 1] === 0) {
          // Not a candidate of this pass (it cannot be, having every word, but it costs little to be sure).
          docs[count] = d;
          for (const group of groups) for (const term of group.terms) probe(this.#pool, this.#head, term, norms, scratch, count, count + 1);
          count++;
        }
        acc[a + 1] = (acc[a + 1] as number) + (name === trimmed ? NAME_MARK : NAME_WORDS_MARK);
      }
      block = page[at] as number;
    }
    return count;
  }

  /**
   * The best `limit` accepted live documents among those touched. `accept` looks a tool up in
   * the catalogue (cache misses, at 100,000 tools), so it is first asked only about the best
   * `limit` of all: when it takes every one, they are the page. Otherwise it is asked, as the
   * candidates come, about each one good enough to enter the page.
   */
  #best(scratch: Scratch, touched: number, limit: number, accept: ((name: string) => boolean) | undefined): Best {
    if (accept === undefined) return select(scratch, touched, limit, undefined, this.#names, this.#alive, this.#epochNow);
    const unfiltered = select(scratch, touched, limit, undefined, this.#names, this.#alive, this.#epochNow);
    const epoch = this.#epoch;
    let taken = 0;
    for (const name of unfiltered.names) {
      if (!accept(name)) break;
      if (this.#epoch !== epoch) return { names: unfiltered.names.slice(0, taken + 1), worstTier: 0, stopped: true };
      taken++;
    }
    if (taken === unfiltered.names.length) return unfiltered;
    return select(scratch, touched, limit, accept, this.#names, this.#alive, this.#epochNow);
  }

  #compactIfWorthIt(): void {
    if (this.#dead > COMPACT_MIN_DEAD && this.#dead > this.#docCount * COMPACT_DEAD_FRACTION) this.#compact();
  }

  /** Rebuilds documents, postings and vocabulary without dead ids and terms no live document has. */
  #compact(): void {
    this.#epoch++;
    const docMap = new Int32Array(this.#docCount).fill(-1);
    let docs = 0;
    for (let d = 0; d < this.#docCount; d++) if (this.#alive[d] === 1) docMap[d] = docs++;
    const termMap = new Int32Array(this.#vocabulary.termCount).fill(-1);
    let terms = 0;
    for (let t = 0; t < termMap.length; t++) if ((this.#df[t] as number) > 0) termMap[t] = terms++;

    // Each live term's live postings, renumbered, in blocks as large as they need.
    const postings = compactPostings(this.#pool, this.#head, this.#df, termMap, terms, docMap);

    // Documents, with their terms.
    const names: string[] = [];
    const alive = new Uint8Array(Math.max(docs, 64));
    const lengths = new Uint16Array(alive.length * FIELD_COUNT);
    const forwardStart = new Uint32Array(alive.length + 1);
    const forward = new Uint32Array(Math.max(this.#forward.length, 64));
    const nameHash = new Int32Array(alive.length);
    let fill = 0;
    for (let d = 0; d < this.#docCount; d++) {
      const nd = docMap[d] as number;
      if (nd < 0) continue;
      const name = this.#names[d] as string;
      names[nd] = name;
      this.#ids.set(name, nd);
      alive[nd] = 1;
      lengths.set(this.#lengths.subarray(d * FIELD_COUNT, (d + 1) * FIELD_COUNT), nd * FIELD_COUNT);
      nameHash[nd] = this.#nameHash[d] as number;
      for (let i = this.#forwardStart[d] as number, end = this.#forwardStart[d + 1] as number; i < end; i++) {
        forward[fill++] = termMap[this.#forward[i] as number] as number;
      }
      forwardStart[nd + 1] = fill;
    }

    // The vocabulary: words of dead terms go, the others point at the new ids.
    this.#vocabulary.compact(termMap, terms);

    this.#pool = postings.pool;
    this.#head = postings.head;
    this.#tail = postings.tail;
    this.#df = postings.df;
    this.#counts = new Uint32Array(postings.head.length);
    this.#names = names;
    this.#alive = alive;
    this.#lengths = lengths;
    this.#nameHash = nameHash;
    this.#forwardStart = forwardStart;
    this.#forward = forward;
    this.#docCount = docs;
    this.#dead = 0;
  }
}
