/**
 * Ranked full-text search over tools, in memory and kept up to date write by write, so that a
 * search costs the postings of its words and its page, never a scan of the catalogue or SQL.
 *
 * Ranking: a query is an OR of its words. Documents that match more of them come first, then
 * BM25F (a name word weighs most, then title, keywords, description), then the name in the
 * catalogue's order (`<`). A document whose name is the query, or has exactly the query's words
 * (`weather_forecast` for "Weather forecast"), comes before all others. The last word also
 * matches as a prefix (type-ahead) unless the query ends in a separator; see MAX_PREFIX_TERMS.
 *
 * Layout: postings live in pages of 64K 32-bit words, in blocks per term that double from 1 to
 * 512 postings. A posting is two words, the document id and one byte per field: the term's
 * count in the field (2 bits, capped at 3: BM25 saturates anyway, and it blunts keyword
 * stuffing) and the field's length (6 bits, exact to 31 words, then in 12% steps). With the
 * lengths in the posting, scoring reads the postings in order and one 8-byte accumulator per
 * document, nothing else: at 100,000 tools per-document arrays no longer fit in cache, and each
 * one read per posting was a cache miss. Measured on bench/data.ts's tools: scoring costs 13 to
 * 23 ns a posting (1.4 ms for a word in 87,600 of 100,000 tools, on a shared 2-core machine),
 * and choosing the page about as much again per document touched.
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
 */
import { isStopWord, splitWords, stem } from './text.js';

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

/** A query is cut to this many characters, then to this many words (stop words aside). */
export const MAX_QUERY_CHARS = 1024;
export const MAX_QUERY_WORDS = 16;
/**
 * The prefix bound. The last word expands when it has 2 or more characters, to at most 16 other
 * terms, the most frequent first, chosen among at most 2,048 vocabulary words that start with
 * it, and only while their postings add up to at most 65,536 (a term that would pass that is
 * left out). So a short prefix costs at most 16 terms and 65,536 postings more, whatever the
 * size of the catalogue. Expanded terms count half, so the word itself outranks the longer words.
 */
const MIN_PREFIX_CHARS = 2;
const MAX_PREFIX_TERMS = 16;
const MAX_PREFIX_SCAN = 2048;
const MAX_PREFIX_POSTINGS = 65_536;
const PREFIX_WEIGHT = 0.5;

interface Field {
  /** BM25F weight. */
  weight: number;
  /** BM25 length normalisation. */
  b: number;
  /** Words indexed at most; more are ignored (a 10 kB description has about 1,500). */
  maxWords: number;
  dropStopWords: boolean;
}

/** Name, title, keywords, description: the order of the bytes in a posting. */
const FIELDS: readonly Field[] = [
  { weight: 5, b: 0.5, maxWords: 64, dropStopWords: false },
  { weight: 2.5, b: 0.75, maxWords: 64, dropStopWords: true },
  { weight: 2, b: 0.5, maxWords: 256, dropStopWords: false },
  { weight: 1, b: 0.75, maxWords: 1024, dropStopWords: true },
];
const NAME = 0;
const FIELD_COUNT = 4;
const MAX_DOC_WORDS = FIELDS.reduce((sum, f) => sum + f.maxWords, 0);
const K1 = 1.2;

const LENGTH_CODES = 64;
const EXACT_LENGTHS = 31;
const LENGTH_STEP = 1.12;
/** A field length as 6 bits: exact to 31, then the nearest of 31 * 1.12^k (63: 1,166 or more). */
function lengthCode(length: number): number {
  if (length <= EXACT_LENGTHS) return length;
  return Math.min(LENGTH_CODES - 1, EXACT_LENGTHS + Math.round(Math.log(length / EXACT_LENGTHS) / Math.log(LENGTH_STEP)));
}
const LENGTH_OF_CODE = Float64Array.from({ length: LENGTH_CODES }, (_, c) =>
  c <= EXACT_LENGTHS ? c : EXACT_LENGTHS * LENGTH_STEP ** (c - EXACT_LENGTHS),
);

const COMPACT_MIN_DEAD = 1024;
const COMPACT_DEAD_FRACTION = 0.25;

/**
 * A document's mark while a query is scored: the query words it has as bits 0-15, and how many
 * it has from bit 16; from bit 21, whether it is named by the query's words or by the query
 * itself. So `mark >>> 16` is its tier, the first key of the ranking.
 */
const WORD_COUNT_UNIT = 1 << 16;
const NAME_WORDS_MARK = 1 << 21;
const NAME_MARK = 1 << 22;

// A block: [address of the next block (0: none), capacity in postings, postings used, ...postings].
const HEADER = 3;
const PAGE_WORDS = 1 << 16;
const OFFSET_MASK = PAGE_WORDS - 1;
const MAX_GROWN_BLOCK = 512;
const MAX_COMPACTED_BLOCK = 4096;

class PostingPool {
  readonly pages: Uint32Array[] = [];
  #fill = PAGE_WORDS;

  /** A new empty block (pages are never reused, so it is zeroed); its address is never 0. */
  allocate(capacity: number): number {
    const words = HEADER + 2 * capacity;
    if (this.#fill + words > PAGE_WORDS) {
      this.pages.push(new Uint32Array(PAGE_WORDS));
      this.#fill = this.pages.length === 1 ? 1 : 0;
    }
    const at = this.#fill;
    (this.pages[this.pages.length - 1] as Uint32Array)[at + 1] = capacity;
    this.#fill += words;
    return (this.pages.length - 1) * PAGE_WORDS + at;
  }

  link(block: number, next: number): void {
    (this.pages[Math.floor(block / PAGE_WORDS)] as Uint32Array)[block & OFFSET_MASK] = next;
  }

  /** Appends a posting to the block at `block`, or to a new one chained to it; returns the block written. */
  append(block: number, doc: number, meta: number): number {
    let page = this.pages[Math.floor(block / PAGE_WORDS)] as Uint32Array;
    let at = block & OFFSET_MASK;
    const capacity = page[at + 1] as number;
    if (page[at + 2] === capacity) {
      block = this.allocate(Math.min(capacity * 2, MAX_GROWN_BLOCK));
      page[at] = block;
      page = this.pages[Math.floor(block / PAGE_WORDS)] as Uint32Array;
      at = block & OFFSET_MASK;
    }
    const used = page[at + 2] as number;
    page[at + HEADER + 2 * used] = doc;
    page[at + HEADER + 2 * used + 1] = meta;
    page[at + 2] = used + 1;
    return block;
  }
}

/**
 * Vocabulary words that share their first two code units. A bulk load appends to them and a
 * search sorts them when it first needs them; a single write keeps a sorted bucket sorted.
 */
interface PrefixBucket {
  words: string[];
  terms: number[];
  sorted: boolean;
}

type Growable = Uint8Array | Uint16Array | Uint32Array | Int32Array;

function grown<A extends Growable>(array: A, length: number): A {
  if (length <= array.length) return array;
  const next = new (array.constructor as new (n: number) => A)(Math.max(length, Math.ceil(array.length * 1.5), 64));
  (next as Uint8Array).set(array as Uint8Array);
  return next;
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

/** FNV-1a over a name's words, so that a query can find the tool it names without a string compare per tool. */
function hashWords(words: readonly string[]): number {
  let h = 0x811c9dc5;
  for (const word of words) {
    for (let i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ 32, 0x01000193);
  }
  return h;
}

interface QueryTerm {
  term: number;
  bit: number;
  weight: number;
}

/** A query term ready to score: `factor` is its weight times its IDF times (k1 + 1). */
interface ScoredTerm {
  term: number;
  bit: number;
  factor: number;
  /** A word of the query, not a prefix expansion. */
  whole: boolean;
}

/** The terms of one query word (the word and, for the last, its expansions), and their postings. */
interface QueryGroup {
  bit: number;
  postings: number;
  terms: ScoredTerm[];
}

/** A page of results, the tier of its last, and whether it stopped because `accept` wrote. */
interface Best {
  names: string[];
  worstTier: number;
  stopped: boolean;
}

/** A posting's term frequency, BM25F: per field, its count times the field's norm for its length. */
function termFrequency(meta: number, norms: Float64Array): number {
  let tf = 0;
  let field = meta & 255;
  if (field !== 0) tf += (field & 3) * (norms[field >>> 2] as number);
  field = (meta >>> 8) & 255;
  if (field !== 0) tf += (field & 3) * (norms[LENGTH_CODES + (field >>> 2)] as number);
  field = (meta >>> 16) & 255;
  if (field !== 0) tf += (field & 3) * (norms[2 * LENGTH_CODES + (field >>> 2)] as number);
  field = meta >>> 24;
  if (field !== 0) tf += (field & 3) * (norms[3 * LENGTH_CODES + (field >>> 2)] as number);
  return tf;
}

/**
 * Per document [score, mark] as float32, 8 bytes: one cache line per posting scored, and half
 * the bytes of float64. Marks (below 2^23) are exact in float32; a score is summed in float64
 * and stored rounded, in query-term order, so it is the same whatever order documents came in.
 */
interface Scratch {
  acc: Float32Array;
  touched: Int32Array;
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

  // Terms, by id.
  #termCount = 0;
  #stems = new Map<string, number>();
  #termText: string[] = [];
  #head = new Uint32Array(0);
  #tail = new Uint32Array(0);
  /** Live documents with the term. */
  #df = new Int32Array(0);
  /** Every word seen, lower-cased as written -> its term * 2, + 1 for a stop word: one lookup a word. */
  readonly #words = new Map<string, number>();
  readonly #buckets = new Map<string, PrefixBucket>();

  #pool = new PostingPool();
  /** Per-term counts while a document is added, and the terms it has. */
  #counts = new Uint32Array(0);
  readonly #seen = new Int32Array(MAX_DOC_WORDS);
  #scratch: Scratch = { acc: new Float32Array(0), touched: new Int32Array(0) };
  #searching = false;
  /** Changes on every write, so that a search notices an `accept` that wrote. */
  #epoch = 0;

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
    const groups = this.#queryGroups(this.#queryTerms(text, allWords));
    const nested = this.#searching;
    const scratch = nested ? this.#newScratch() : this.#readyScratch();
    // Ids below this are the ones this search can touch, even if `accept` compacts the index.
    const docCount = this.#docCount;
    const limit = Math.floor(options.limit);
    const nameWords = allWords.slice(0, (FIELDS[NAME] as Field).maxWords);
    const trimmed = text.trim();
    const norms = this.#norms();
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
        this.#clear(scratch, touched, docCount);
        touched = 0;
        essential = full ? Math.min(k, k - best.worstTier + 1) : k;
      }
    } finally {
      this.#clear(scratch, touched, docCount);
      this.#searching = nested;
    }
  }

  /** Zeroes the accumulators of the documents a pass touched. */
  #clear(scratch: Scratch, touched: number, docCount: number): void {
    const { acc, touched: docs } = scratch;
    if (touched > docCount >>> 3) {
      acc.fill(0, 0, 2 * docCount);
      return;
    }
    for (let i = 0; i < touched; i++) {
      const a = 2 * (docs[i] as number);
      acc[a] = 0;
      acc[a + 1] = 0;
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
        const code = this.#words.get(word) ?? this.#newWord(word, bulk);
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

  /** Adds a word not seen before, with its stem's term (new if need be) and its prefix entry; returns its code. */
  #newWord(word: string, bulk: boolean): number {
    const stemmed = stem(word);
    let t = this.#stems.get(stemmed);
    if (t === undefined) {
      t = this.#termCount++;
      this.#stems.set(stemmed, t);
      this.#termText[t] = stemmed;
      this.#head = grown(this.#head, t + 1);
      this.#tail = grown(this.#tail, t + 1);
      this.#df = grown(this.#df, t + 1);
      this.#counts = grown(this.#counts, t + 1);
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
  #termOfQueryWord(word: string): number | undefined {
    const code = this.#words.get(word);
    return code !== undefined ? code >>> 1 : this.#stems.get(stem(word));
  }

  /** Distinct query terms with their word's bit: whole words, and prefixes of the last one. */
  #queryTerms(text: string, allWords: readonly string[]): QueryTerm[] {
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
      const t = this.#termOfQueryWord(word);
      if (t === undefined || bits.has(t)) continue;
      const bit = 1 << bits.size;
      bits.set(t, bit);
      if ((this.#df[t] as number) > 0) terms.push({ term: t, bit, weight: 1 });
    }
    if (prefix !== null) {
      const t = this.#termOfQueryWord(prefix);
      const bit = t !== undefined ? (bits.get(t) as number) : 1 << bits.size;
      for (const expanded of this.#expand(prefix, bits)) terms.push({ term: expanded, bit, weight: PREFIX_WEIGHT });
    }
    return terms;
  }

  /** Terms other than `exclude` of vocabulary words that start with `prefix`; see MAX_PREFIX_TERMS. */
  #expand(prefix: string, exclude: ReadonlyMap<number, number>): number[] {
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
      if ((this.#df[t] as number) > 0 && !exclude.has(t)) candidates.add(t);
    }
    const df = this.#df;
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
   * The query's terms by word (a word and its prefix expansions share a bit), rarest word first,
   * each term with its BM25 factor. Terms are scored in this order in every pass, so a document's
   * score, rounded per term, is the same whichever pass gives it.
   */
  #queryGroups(terms: readonly QueryTerm[]): QueryGroup[] {
    const live = this.#ids.size;
    const byBit = new Map<number, QueryGroup>();
    for (const { term, bit, weight } of terms) {
      const df = this.#df[term] as number;
      const factor = weight * Math.log(1 + (live - df + 0.5) / (df + 0.5)) * (K1 + 1);
      let group = byBit.get(bit);
      if (group === undefined) byBit.set(bit, (group = { bit, postings: 0, terms: [] }));
      group.postings += df;
      group.terms.push({ term, bit, factor, whole: weight === 1 });
    }
    return [...byBit.values()].sort((a, b) => a.postings - b.postings || a.bit - b.bit);
  }

  /** weight / (1 - b + b * length / average) for each field and length code. */
  #norms(): Float64Array {
    const live = this.#ids.size;
    const norms = new Float64Array(FIELD_COUNT * LENGTH_CODES);
    for (let f = 0; f < FIELD_COUNT; f++) {
      const { weight, b } = FIELDS[f] as Field;
      const average = Math.max((this.#lengthTotals[f] as number) / live, 1e-9);
      for (let c = 0; c < LENGTH_CODES; c++) norms[f * LENGTH_CODES + c] = weight / (1 - b + (b * (LENGTH_OF_CODE[c] as number)) / average);
    }
    return norms;
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
      for (const term of (groups[g] as QueryGroup).terms) count = this.#scoreTerm(term, norms, scratch, count);
    if (essential < groups.length && count > 0) {
      const candidates = scratch.touched.subarray(0, count);
      let sorted = true;
      for (let i = 1; i < count && sorted; i++) sorted = (candidates[i - 1] as number) < (candidates[i] as number);
      if (!sorted) candidates.sort();
      for (let g = essential; g < groups.length; g++)
        for (const term of (groups[g] as QueryGroup).terms) this.#probe(term, norms, scratch, 0, count);
    }
    return this.#markNamed(scratch, count, groups, norms, nameWords, trimmed);
  }

  /** Adds a term's postings to the accumulators; returns the count of touched documents. */
  #scoreTerm({ term, bit, factor }: ScoredTerm, norms: Float64Array, scratch: Scratch, touchedBefore: number): number {
    const { acc, touched } = scratch;
    const pages = this.#pool.pages;
    let count = touchedBefore;
    for (let block = this.#head[term] as number; block !== 0;) {
      const page = pages[Math.floor(block / PAGE_WORDS)] as Uint32Array;
      const at = block & OFFSET_MASK;
      for (let i = at + HEADER, end = i + 2 * (page[at + 2] as number); i < end; i += 2) {
        const d = page[i] as number;
        const tf = termFrequency(page[i + 1] as number, norms);
        // Every contribution is positive, so a score of 0 means not touched yet.
        const a = 2 * d;
        const score = acc[a] as number;
        if (score === 0) touched[count++] = d;
        acc[a] = score + (factor * tf) / (K1 + tf);
        const mark = acc[a + 1] as number;
        if ((mark & bit) === 0) acc[a + 1] = mark + bit + WORD_COUNT_UNIT;
      }
      block = page[at] as number;
    }
    return count;
  }

  /**
   * Adds a term's postings to the touched documents scratch.touched[from..to), which are in
   * ascending order (as postings are): blocks that end before the next candidate are skipped
   * by their last posting, and a block is searched by galloping from where the last one was.
   */
  #probe({ term, bit, factor }: ScoredTerm, norms: Float64Array, scratch: Scratch, from: number, to: number): void {
    const { acc, touched } = scratch;
    const pages = this.#pool.pages;
    let block = this.#head[term] as number;
    if (block === 0) return;
    let page = pages[Math.floor(block / PAGE_WORDS)] as Uint32Array;
    let at = block & OFFSET_MASK;
    let i = at + HEADER;
    let end = i + 2 * (page[at + 2] as number);
    for (let c = from; c < to; c++) {
      const d = touched[c] as number;
      while (i >= end || (page[end - 2] as number) < d) {
        block = page[at] as number;
        if (block === 0) return;
        page = pages[Math.floor(block / PAGE_WORDS)] as Uint32Array;
        at = block & OFFSET_MASK;
        i = at + HEADER;
        end = i + 2 * (page[at + 2] as number);
      }
      // The block's last posting is >= d: the first posting >= d is in [i, end - 2].
      if ((page[i] as number) < d) {
        let lo = i;
        let step = 2;
        let hi = lo + step;
        while (hi < end - 2 && (page[hi] as number) < d) {
          lo = hi;
          step *= 2;
          hi = lo + step;
        }
        if (hi > end - 2) hi = end - 2;
        while (hi - lo > 2) {
          const mid = lo + (((hi - lo) >>> 2) << 1);
          if ((page[mid] as number) < d) lo = mid;
          else hi = mid;
        }
        i = hi;
      }
      if (page[i] !== d) continue;
      const tf = termFrequency(page[i + 1] as number, norms);
      const a = 2 * d;
      acc[a] = (acc[a] as number) + (factor * tf) / (K1 + tf);
      const mark = acc[a + 1] as number;
      if ((mark & bit) === 0) acc[a + 1] = mark + bit + WORD_COUNT_UNIT;
      i += 2;
    }
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
          for (const group of groups) for (const term of group.terms) this.#probe(term, norms, scratch, count, count + 1);
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
    if (accept === undefined) return this.#select(scratch, touched, limit, undefined);
    const unfiltered = this.#select(scratch, touched, limit, undefined);
    const epoch = this.#epoch;
    let taken = 0;
    for (const name of unfiltered.names) {
      if (!accept(name)) break;
      if (this.#epoch !== epoch) return { names: unfiltered.names.slice(0, taken + 1), worstTier: 0, stopped: true };
      taken++;
    }
    if (taken === unfiltered.names.length) return unfiltered;
    return this.#select(scratch, touched, limit, accept);
  }

  /** The best `limit` live documents among those touched that `accept` takes: a bounded heap, worst on top. */
  #select(scratch: Scratch, touched: number, limit: number, accept: ((name: string) => boolean) | undefined): Best {
    const { acc, touched: docs } = scratch;
    const names = this.#names;
    const alive = this.#alive;
    const tier = (d: number): number => (acc[2 * d + 1] as number) >>> 16;
    const before = (a: number, b: number): boolean => {
      const ta = tier(a);
      const tb = tier(b);
      if (ta !== tb) return ta > tb;
      const sa = acc[2 * a] as number;
      const sb = acc[2 * b] as number;
      if (sa !== sb) return sa > sb;
      return (names[a] as string) < (names[b] as string);
    };
    const heap: number[] = [];
    // The worst kept document's rank, so that most candidates are turned away at a glance.
    let worstTier = -1;
    let worstScore = 0;
    let worstName = '';
    const epoch = this.#epoch;
    let stopped = false;
    for (let i = 0; i < touched; i++) {
      const d = docs[i] as number;
      if (alive[d] === 0) continue;
      if (heap.length === limit) {
        const t = (acc[2 * d + 1] as number) >>> 16;
        if (t !== worstTier) {
          if (t < worstTier) continue;
        } else {
          const score = acc[2 * d] as number;
          if (score < worstScore || (score === worstScore && !((names[d] as string) < worstName))) continue;
        }
      }
      if (accept !== undefined) {
        if (!accept(names[d] as string)) continue;
        if (this.#epoch !== epoch) {
          stopped = true;
          break;
        }
      }
      if (heap.length < limit) {
        let at = heap.length;
        heap.push(d);
        while (at > 0) {
          const parent = (at - 1) >>> 1;
          if (!before(heap[parent] as number, d)) break;
          heap[at] = heap[parent] as number;
          at = parent;
        }
        heap[at] = d;
      } else {
        let at = 0;
        for (;;) {
          const left = 2 * at + 1;
          if (left >= heap.length) break;
          const right = left + 1;
          const worse = right < heap.length && before(heap[left] as number, heap[right] as number) ? right : left;
          if (!before(d, heap[worse] as number)) break;
          heap[at] = heap[worse] as number;
          at = worse;
        }
        heap[at] = d;
      }
      if (heap.length === limit) {
        const worst = heap[0] as number;
        worstTier = tier(worst);
        worstScore = acc[2 * worst] as number;
        worstName = names[worst] as string;
      }
    }
    heap.sort((a, b) => (before(a, b) ? -1 : 1));
    const worst = heap[heap.length - 1];
    return { names: heap.map((d) => names[d] as string), worstTier: worst === undefined ? 0 : tier(worst), stopped };
  }

  #readyScratch(): Scratch {
    const needed = this.#docCount;
    if (this.#scratch.touched.length < needed) {
      const length = Math.max(needed, Math.ceil(this.#scratch.touched.length * 1.5), 64);
      this.#scratch = { acc: new Float32Array(2 * length), touched: new Int32Array(length) };
    }
    return this.#scratch;
  }

  /** For a search run from inside another's `accept`. */
  #newScratch(): Scratch {
    return { acc: new Float32Array(2 * this.#docCount), touched: new Int32Array(this.#docCount) };
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
    const termMap = new Int32Array(this.#termCount).fill(-1);
    let terms = 0;
    for (let t = 0; t < this.#termCount; t++) if ((this.#df[t] as number) > 0) termMap[t] = terms++;

    // Each live term's live postings, renumbered, in blocks as large as they need.
    const pool = new PostingPool();
    const head = new Uint32Array(Math.max(terms, 64));
    const tail = new Uint32Array(head.length);
    const df = new Int32Array(head.length);
    const termText: string[] = [];
    const stems = new Map<string, number>();
    const oldPages = this.#pool.pages;
    for (let t = 0; t < this.#termCount; t++) {
      const nt = termMap[t] as number;
      if (nt < 0) continue;
      termText[nt] = this.#termText[t] as string;
      stems.set(termText[nt], nt);
      df[nt] = this.#df[t] as number;
      let remaining = df[nt];
      let block = 0;
      let room = 0;
      for (let old = this.#head[t] as number; old !== 0;) {
        const page = oldPages[Math.floor(old / PAGE_WORDS)] as Uint32Array;
        const at = old & OFFSET_MASK;
        for (let i = at + HEADER, end = i + 2 * (page[at + 2] as number); i < end; i += 2) {
          const d = docMap[page[i] as number] as number;
          if (d < 0) continue;
          if (room === 0) {
            room = Math.min(remaining, MAX_COMPACTED_BLOCK);
            const next = pool.allocate(room);
            if (block === 0) head[nt] = next;
            else pool.link(block, next);
            block = next;
          }
          pool.append(block, d, page[i + 1] as number);
          room--;
          remaining--;
        }
        old = page[at] as number;
      }
      tail[nt] = block;
    }

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

    this.#pool = pool;
    this.#head = head;
    this.#tail = tail;
    this.#df = df;
    this.#termText = termText;
    this.#stems = stems;
    this.#termCount = terms;
    this.#counts = new Uint32Array(head.length);
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
