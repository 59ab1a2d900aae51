/**
 * The postings of the search index (search-index.ts) and their layout. Postings live in pages of
 * 64K 32-bit words, in blocks per term that double from 1 to 512 postings. A posting is two words,
 * the document id and one byte per field: the term's count in the field (2 bits, capped at 3: BM25
 * saturates anyway, and it blunts keyword stuffing) and the field's length (6 bits, exact to 31
 * words, then in 12% steps). With the lengths in the posting, scoring reads the postings in order
 * and one 8-byte accumulator per document, nothing else: at 100,000 tools per-document arrays no
 * longer fit in cache, and each one read per posting was a cache miss. Measured on bench/data.ts's
 * tools: scoring costs 13 to 23 ns a posting (1.4 ms for a word in 87,600 of 100,000 tools, on a
 * shared 2-core machine), and choosing the page about as much again per document touched.
 */

export interface Field {
  /** BM25F weight. */
  weight: number;
  /** BM25 length normalisation. */
  b: number;
  /** Words indexed at most; more are ignored (a 10 kB description has about 1,500). */
  maxWords: number;
  dropStopWords: boolean;
}

/** Name, title, keywords, description: the order of the bytes in a posting. */
export const FIELDS: readonly Field[] = [
  { weight: 5, b: 0.5, maxWords: 64, dropStopWords: false },
  { weight: 2.5, b: 0.75, maxWords: 64, dropStopWords: true },
  { weight: 2, b: 0.5, maxWords: 256, dropStopWords: false },
  { weight: 1, b: 0.75, maxWords: 1024, dropStopWords: true },
];
export const NAME = 0;
export const FIELD_COUNT = 4;
export const MAX_DOC_WORDS = FIELDS.reduce((sum, f) => sum + f.maxWords, 0);

export const LENGTH_CODES = 64;
const EXACT_LENGTHS = 31;
const LENGTH_STEP = 1.12;
/** A field length as 6 bits: exact to 31, then the nearest of 31 * 1.12^k (63: 1,166 or more). */
export function lengthCode(length: number): number {
  if (length <= EXACT_LENGTHS) return length;
  return Math.min(LENGTH_CODES - 1, EXACT_LENGTHS + Math.round(Math.log(length / EXACT_LENGTHS) / Math.log(LENGTH_STEP)));
}
export const LENGTH_OF_CODE = Float64Array.from({ length: LENGTH_CODES }, (_, c) =>
  c <= EXACT_LENGTHS ? c : EXACT_LENGTHS * LENGTH_STEP ** (c - EXACT_LENGTHS),
);

// A block: [address of the next block (0: none), capacity in postings, postings used, ...postings].
export const HEADER = 3;
export const PAGE_WORDS = 1 << 16;
export const OFFSET_MASK = PAGE_WORDS - 1;
const MAX_GROWN_BLOCK = 512;
const MAX_COMPACTED_BLOCK = 4096;

export class PostingPool {
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

/** A compacted pool, and each term's first block, last block and live documents, by new term id. */
export interface CompactedPostings {
  pool: PostingPool;
  head: Uint32Array<ArrayBuffer>;
  tail: Uint32Array<ArrayBuffer>;
  df: Int32Array<ArrayBuffer>;
}

/**
 * Each live term's live postings, renumbered, in blocks as large as they need. `termMap` and
 * `docMap` give each old term and document its new id (-1: it goes), `terms` is how many terms
 * stay, and `oldDf` counts each old term's live documents, so its postings take one block of up
 * to MAX_COMPACTED_BLOCK postings, then more of that size.
 */
export function compactPostings(
  oldPool: PostingPool,
  oldHead: Uint32Array,
  oldDf: Int32Array,
  termMap: Int32Array,
  terms: number,
  docMap: Int32Array,
): CompactedPostings {
  const pool = new PostingPool();
  const head = new Uint32Array(Math.max(terms, 64));
  const tail = new Uint32Array(head.length);
  const df = new Int32Array(head.length);
  const oldPages = oldPool.pages;
  for (let t = 0; t < termMap.length; t++) {
    const nt = termMap[t] as number;
    if (nt < 0) continue;
    df[nt] = oldDf[t] as number;
    let remaining = df[nt];
    let block = 0;
    let room = 0;
    for (let old = oldHead[t] as number; old !== 0;) {
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
  return { pool, head, tail, df };
}
