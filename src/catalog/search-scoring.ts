/**
 * Scoring a query's postings and choosing its page. A posting's BM25F term frequency is summed,
 * with the term's factor, into its document's accumulator, which also marks the query words the
 * document has; the page is the best documents by that tier (how many words), then score, then
 * name. MaxScore passes (search-index.ts) read a term's postings whole (scoreTerm) or only for
 * the candidates (probe).
 */
import {
  FIELD_COUNT,
  FIELDS,
  HEADER,
  LENGTH_CODES,
  LENGTH_OF_CODE,
  OFFSET_MASK,
  PAGE_WORDS,
  type Field,
  type PostingPool,
} from './search-postings.js';

export const K1 = 1.2;

/**
 * A document's mark while a query is scored: the query words it has as bits 0-15, and how many
 * it has from bit 16; from bit 21, whether it is named by the query's words or by the query
 * itself. So `mark >>> 16` is its tier, the first key of the ranking.
 */
const WORD_COUNT_UNIT = 1 << 16;
export const NAME_WORDS_MARK = 1 << 21;
export const NAME_MARK = 1 << 22;

/** A query term ready to score: `factor` is its weight times its IDF times (k1 + 1). */
export interface ScoredTerm {
  term: number;
  bit: number;
  factor: number;
  /** A word of the query, not a prefix expansion. */
  whole: boolean;
}

/** A page of results, the tier of its last, and whether it stopped because `accept` wrote. */
export interface Best {
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
export interface Scratch {
  acc: Float32Array;
  touched: Int32Array;
}

/** `scratch` if it has room for `docCount` documents, else a larger one (half as large again, at least) to keep. */
export function roomyScratch(scratch: Scratch, docCount: number): Scratch {
  if (scratch.touched.length >= docCount) return scratch;
  const length = Math.max(docCount, Math.ceil(scratch.touched.length * 1.5), 64);
  return { acc: new Float32Array(2 * length), touched: new Int32Array(length) };
}

/** Scratch for `docCount` documents, used once. */
export function newScratch(docCount: number): Scratch {
  return { acc: new Float32Array(2 * docCount), touched: new Int32Array(docCount) };
}

/** weight / (1 - b + b * length / average) for each field and length code, of the fields' word totals over `live` documents. */
export function fieldNorms(lengthTotals: readonly number[], live: number): Float64Array {
  const norms = new Float64Array(FIELD_COUNT * LENGTH_CODES);
  for (let f = 0; f < FIELD_COUNT; f++) {
    const { weight, b } = FIELDS[f] as Field;
    const average = Math.max((lengthTotals[f] as number) / live, 1e-9);
    for (let c = 0; c < LENGTH_CODES; c++) norms[f * LENGTH_CODES + c] = weight / (1 - b + (b * (LENGTH_OF_CODE[c] as number)) / average);
  }
  return norms;
}

/** Adds a term's postings to the accumulators; returns the count of touched documents. */
export function scoreTerm(
  pool: PostingPool,
  head: Uint32Array,
  { term, bit, factor }: ScoredTerm,
  norms: Float64Array,
  scratch: Scratch,
  touchedBefore: number,
): number {
  const { acc, touched } = scratch;
  const pages = pool.pages;
  let count = touchedBefore;
  for (let block = head[term] as number; block !== 0;) {
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
export function probe(
  pool: PostingPool,
  head: Uint32Array,
  { term, bit, factor }: ScoredTerm,
  norms: Float64Array,
  scratch: Scratch,
  from: number,
  to: number,
): void {
  const { acc, touched } = scratch;
  const pages = pool.pages;
  let block = head[term] as number;
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

/** Zeroes the accumulators of the documents a pass touched. */
export function clearScratch(scratch: Scratch, touched: number, docCount: number): void {
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

/**
 * The best `limit` live documents among those touched that `accept` takes: a bounded heap, worst
 * on top. `epochNow` is the index's count of writes, by which an `accept` that wrote stops it.
 */
export function select(
  scratch: Scratch,
  touched: number,
  limit: number,
  accept: ((name: string) => boolean) | undefined,
  names: readonly string[],
  alive: Uint8Array,
  epochNow: () => number,
): Best {
  const { acc, touched: docs } = scratch;
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
  const epoch = epochNow();
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
      if (epochNow() !== epoch) {
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
