/**
 * The one scheduler of background work (issue 32): owners round-robin, one slice per turn of
 * the event loop however many tasks, step generators run to their end, and the search feeder's
 * backlog as one more owner.
 */
import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/catalog/scheduler.js';
import type { Steps } from '../../src/catalog/steps.js';

/** A task that needs `steps` turns, each using up the whole slice. */
async function task(scheduler: Scheduler, owner: string, steps: number, log: string[]): Promise<void> {
  for (let i = 0; i < steps; i++) {
    await scheduler.turn(owner);
    log.push(owner);
    const until = performance.now() + 2;
    while (performance.now() < until);
  }
}

describe('Scheduler', () => {
  it('gives owners turns round-robin, however many tasks one of them queues', async () => {
    const scheduler = new Scheduler(1);
    const log: string[] = [];
    const greedy = Array.from({ length: 10 }, () => task(scheduler, 'greedy', 3, log));
    const modest = task(scheduler, 'modest', 3, log);
    await Promise.all([...greedy, modest]);
    const modestAt = log.flatMap((owner, i) => (owner === 'modest' ? [i] : []));
    expect(modestAt).toHaveLength(3);
    expect(modestAt.at(-1)).toBeLessThan(8);
    expect(log).toHaveLength(33);
    expect(scheduler.waiting).toBe(0);
  });

  it('runs one slice per turn of the event loop across many tasks', async () => {
    const scheduler = new Scheduler(1);
    const log: string[] = [];
    let ticks = 0;
    let ticking = true;
    const tick = () => {
      ticks++;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    await Promise.all(Array.from({ length: 5 }, (_, i) => task(scheduler, `c${i}`, 4, log)));
    ticking = false;
    expect(log).toHaveLength(20);
    expect(scheduler.turns).toBe(20);
    expect(ticks).toBeGreaterThanOrEqual(19);
  });

  it('runs step generators to their end, sharing turns with async tasks', async () => {
    const scheduler = new Scheduler(1);
    const log: string[] = [];
    function* steps(): Steps<number> {
      let sum = 0;
      for (let i = 1; i <= 4; i++) {
        sum += i;
        log.push('steps');
        const until = performance.now() + 2;
        while (performance.now() < until);
        yield;
      }
      return sum;
    }
    const [sum] = await Promise.all([scheduler.run(steps(), 'import'), task(scheduler, 'replay', 3, log)]);
    expect(sum).toBe(10);
    // Interleaved, not one owner's work after the other's.
    expect(log.slice(0, 4)).toContain('replay');
    expect(scheduler.waiting).toBe(0);
  });
});
