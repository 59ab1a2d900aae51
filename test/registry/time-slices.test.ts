/**
 * Long work in slices: a sort that yields as it goes gives what a stable sort gives, and work
 * run by TimeSlices gives the event loop back between its steps once a slice is used up.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { finish } from '../../src/catalog/steps.js';
import { sortInSlices, TimeSlices, TurnQueue } from '../../src/registry/time-slices.js';

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

describe('TimeSlices', () => {
  it('gives the event loop back between steps once a slice is used up', async () => {
    const slices = new TimeSlices(0);
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    function* work() {
      for (let i = 0; i < 5; i++) {
        const until = performance.now() + 3;
        while (performance.now() < until);
        yield;
      }
      return 'done';
    }
    expect(await slices.run(work())).toBe('done');
    clearInterval(timer);
    expect(slices.yields).toBe(5);
    expect(turns).toBeGreaterThan(0);
  });
});

describe('TurnQueue', () => {
  /** A task that needs `steps` turns, each using up the whole slice. */
  async function task(turns: TurnQueue, owner: string, steps: number, log: string[]): Promise<void> {
    for (let i = 0; i < steps; i++) {
      await turns.turn(owner);
      log.push(owner);
      // Uses up the slice, so the next turn() queues.
      const until = performance.now() + 2;
      while (performance.now() < until);
    }
  }

  it('gives callers turns round-robin, however many tasks one of them queues', async () => {
    const turns = new TurnQueue(1);
    const log: string[] = [];
    const greedy = Array.from({ length: 10 }, () => task(turns, 'greedy', 3, log));
    const modest = task(turns, 'modest', 3, log);
    await Promise.all([...greedy, modest]);
    // The modest caller's three steps come within its first three rounds, not after 30 greedy steps.
    const modestAt = log.flatMap((owner, i) => (owner === 'modest' ? [i] : []));
    expect(modestAt).toHaveLength(3);
    expect(modestAt.at(-1)).toBeLessThan(8);
    expect(log).toHaveLength(33);
    expect(turns.waiting).toBe(0);
  });

  it('runs one queued task per turn of the event loop', async () => {
    const turns = new TurnQueue(1);
    const log: string[] = [];
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    await Promise.all(Array.from({ length: 5 }, (_, i) => task(turns, `c${i}`, 4, log)));
    ticking = false;
    expect(log).toHaveLength(20);
    // Every step waited for a turn of its own.
    expect(ticks).toBeGreaterThanOrEqual(19);
  });
});
