/**
 * Call durations as counts in buckets fixed in advance, so that percentiles over any span of
 * minutes come from adding the minutes' counts together (a ring of samples cannot be merged).
 *
 * Bounds: bucket 0 holds [0, 0.125 ms); buckets 1 to 88 split 0.125 ms .. 524,288 ms (2^-3 to
 * 2^19 ms, about 8.7 minutes, past any call timeout) into 22 octaves of 4 buckets, each 2^(1/4)
 * (about 19 %) wider than the last; bucket 89 holds everything longer. A percentile is reported
 * as the geometric middle of the bucket its nearest-rank sample falls in, kept within the span's
 * shortest and longest call: between 0.125 ms and 524 s it is within a factor 2^(1/8) of the
 * exact nearest-rank value (at most 9.1 % above, 8.3 % below); below 0.125 ms it is off by less
 * than 0.125 ms; above 524 s it is the longest call.
 */

const LOWEST_MS = 0.125;
const STEPS_PER_OCTAVE = 4;
const OCTAVES = 22;
/** The number of buckets: underflow, 88 geometric, overflow. */
export const LATENCY_BUCKETS = OCTAVES * STEPS_PER_OCTAVE + 2;
const LAST = LATENCY_BUCKETS - 1;

/** The bucket a duration falls in; O(1), no allocation. Anything not a positive number is bucket 0. */
export function bucketOf(ms: number): number {
  if (!(ms >= LOWEST_MS)) return 0;
  const i = Math.floor(Math.log2(ms / LOWEST_MS) * STEPS_PER_OCTAVE) + 1;
  return i > LAST ? LAST : i;
}

/** The lower bound of bucket `i` in ms (bucket 0: 0). */
export function lowerBoundOf(i: number): number {
  return i <= 0 ? 0 : LOWEST_MS * 2 ** ((i - 1) / STEPS_PER_OCTAVE);
}

/** The value reported for a sample in bucket `i`, before it is kept within the span's min and max. */
function middleOf(i: number): number {
  if (i <= 0) return 0;
  if (i >= LAST) return Number.POSITIVE_INFINITY;
  return LOWEST_MS * 2 ** ((i - 0.5) / STEPS_PER_OCTAVE);
}

/**
 * The nearest-rank `p`th percentile of `samples` durations counted in `counts` (indexed by
 * bucket), kept within [minMs, maxMs], rounded to 0.01 ms. 0 when there are no samples.
 */
export function percentileOf(counts: ArrayLike<number>, samples: number, p: number, minMs: number, maxMs: number): number {
  if (samples <= 0) return 0;
  const rank = Math.max(1, Math.ceil((p / 100) * samples));
  let seen = 0;
  let bucket = LAST;
  for (let i = 0; i < LATENCY_BUCKETS; i++) {
    seen += counts[i] ?? 0;
    if (seen >= rank) {
      bucket = i;
      break;
    }
  }
  const value = Math.min(maxMs, Math.max(minMs, middleOf(bucket)));
  return Math.round(value * 100) / 100;
}
