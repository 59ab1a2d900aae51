/**
 * Work that can stop part-way (src/catalog/steps.ts): a sort that yields as it goes gives what a
 * stable sort gives. How steps share the event loop is test/catalog/scheduler.test.ts's.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { finish, sortInSlices } from '../../src/catalog/steps.js';

describe('sortInSlices', () => {
  it('sorts as a stable sort does (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ key: fc.integer({ min: 0, max: 50 }), at: fc.nat() }), { maxLength: 5000 }), (items) => {
        const byKey = (a: { key: number }, b: { key: number }) => a.key - b.key;
        expect(finish(sortInSlices(items, byKey))).toEqual([...items].sort(byKey));
      }),
      { numRuns: 40 },
    );
  });

  it('leaves its input alone and stops every few thousand comparisons', () => {
    const items = Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 50_000);
    const copy = [...items];
    const steps = sortInSlices(items, (a, b) => a - b);
    let yields = 0;
    let step = steps.next();
    while (!step.done) {
      yields++;
      step = steps.next();
    }
    expect(step.value).toEqual([...copy].sort((a, b) => a - b));
    expect(items).toEqual(copy);
    // 49 runs sorted one per step, then 6 merge passes of 50,000 items, 4,096 per step.
    expect(yields).toBeGreaterThanOrEqual(49 + 6 * 12);
  });
});
