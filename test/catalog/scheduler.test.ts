/**
 * The one scheduler of background work (issue 32): owners round-robin, one slice per turn of
 * the event loop however many tasks, step generators run to their end, and the search feeder's
 * backlog as one more owner, taking turns with an import.
 */
import { describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.js';
import { Scheduler } from '../../src/catalog/scheduler.js';
import type { Steps } from '../../src/catalog/steps.js';
import { ChangeBus } from '../../src/registry/change-bus.js';
import { RegistryService } from '../../src/registry/registry-service.js';
import { AuditStore } from '../../src/store/audit-store.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import { seed } from '../helpers/fixtures.js';

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

  it('gives the event loop back between steps once a slice is used up', async () => {
    const scheduler = new Scheduler(0);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    function* work(): Steps<string> {
      for (let i = 0; i < 5; i++) {
        const until = performance.now() + 3;
        while (performance.now() < until);
        yield;
      }
      return 'done';
    }
    expect(await scheduler.run(work())).toBe('done');
    clearInterval(timer);
    expect(scheduler.turns).toBe(5);
    expect(ticks).toBeGreaterThan(0);
  });
});

/** A Scheduler that notes every turn it gives: whose, and the search backlog at that moment. */
class RecordingScheduler extends Scheduler {
  readonly given: { owner: string; backlog: number }[] = [];
  backlog = () => 0;

  override async turn(owner = ''): Promise<void> {
    await super.turn(owner);
    this.given.push({ owner, backlog: this.backlog() });
  }
}

describe('an import and the search feeder', () => {
  it('share the one scheduler in turns: neither starves the other', async () => {
    const scheduler = new RecordingScheduler();
    const db = openDatabase(':memory:');
    migrate(db);
    const store = new RegistryStore(db, new AuditStore(db));
    const catalog = new Catalog({
      publicUrl: new URL('http://registry.test'),
      serviceName: 'tool-registry',
      viewCacheBytes: 1 << 22,
      scheduler,
    });
    catalog.load(store.loadSnapshot());
    const bus = new ChangeBus();
    const service = new RegistryService(store, catalog, bus);
    const bundle = (prefix: string, count: number) => ({
      'tool-services': [],
      tools: Array.from({ length: count }, (_, i) => ({ ...seed('calculator'), name: `${prefix}_${i}`, scopes: [] })),
    });
    try {
      // A big write leaves a search backlog, indexed in slices after it.
      await service.importBundle(bundle('first', 10_000));
      expect(catalog.searchBacklog).toBeGreaterThan(5_000);
      // A second import runs meanwhile; the turns given until it is shown are noted.
      scheduler.backlog = () => catalog.searchBacklog;
      scheduler.given.length = 0;
      let shownAt = Number.POSITIVE_INFINITY;
      bus.subscribe(() => (shownAt = scheduler.given.length));
      await service.importBundle(bundle('second', 10_000));
      const meanwhile = scheduler.given.slice(0, shownAt);
      const owners = meanwhile.map((turn) => turn.owner).filter((owner, i, all) => owner !== all[i - 1]);
      expect(new Set(owners)).toEqual(new Set(['import', 'search-feeder']));
      // Turn and turn about, not one owner's work after the other's.
      expect(owners.length).toBeGreaterThan(4);
      // The import went on while the backlog was there, and the backlog was gone before the import was done.
      expect(meanwhile.filter((turn) => turn.owner === 'import' && turn.backlog > 0).length).toBeGreaterThan(1);
      expect(meanwhile.filter((turn) => turn.owner === 'import' && turn.backlog === 0).length).toBeGreaterThan(1);
    } finally {
      store.close();
    }
  }, 60_000);
});
