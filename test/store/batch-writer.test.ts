import { describe, expect, it } from 'vitest';
import { BatchWriter } from '../../src/store/batch-writer.js';

describe('BatchWriter', () => {
  it('writes a full batch at once and the rest after the interval, in order', async () => {
    const batches: number[][] = [];
    const writer = new BatchWriter<number>((b) => batches.push([...b]), { flushIntervalMs: 20, maxBatch: 3, maxPending: 100 });
    for (const n of [1, 2, 3, 4]) writer.push(n);
    expect(batches).toEqual([[1, 2, 3]]);
    await new Promise((r) => setTimeout(r, 60));
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('bounds memory by dropping the oldest, and counts failed batches as dropped', () => {
    const batches: number[][] = [];
    const writer = new BatchWriter<number>((b) => batches.push([...b]), { flushIntervalMs: 1000, maxBatch: 100, maxPending: 2 });
    for (const n of [1, 2, 3]) writer.push(n);
    writer.flush();
    expect(batches).toEqual([[2, 3]]);
    expect(writer.dropped).toBe(1);
    const errors: unknown[] = [];
    const failing = new BatchWriter<number>(
      () => {
        throw new Error('disk full');
      },
      { flushIntervalMs: 1000, maxBatch: 100, maxPending: 10, onError: (e) => errors.push(e) },
    );
    failing.push(1);
    failing.flush();
    expect(failing.dropped).toBe(1);
    expect(errors).toHaveLength(1);
  });
});
