/**
 * The change bus's delivery and the change feed's replay-to-live hand-over, on
 * fakes of our own (a change log in an array): no database, no HTTP.
 */
import { describe, expect, it } from 'vitest';
import type { Change, ChangeRecord } from '../../src/model/records.js';
import type { ViewChange } from '../../src/model/visibility.js';
import { ChangeBus } from '../../src/registry/change-bus.js';
import { ChangeFeed, type ChangeLog } from '../../src/registry/change-feed.js';

const tool = (name: string, scopesAfter: string[] | null = [], scopesBefore: string[] | null = null): Change => ({
  kind: 'tool',
  name,
  op: scopesAfter === null ? 'delete' : 'upsert',
  scopesBefore,
  scopesAfter,
});

describe('ChangeBus', () => {
  it('publishes at once outside a commit', () => {
    const bus = new ChangeBus();
    const heard: number[] = [];
    bus.subscribe((index) => heard.push(index));
    bus.publish(1, [tool('a')]);
    expect(heard).toEqual([1]);
  });

  it('keeps telling the other listeners when one throws, and reports it', () => {
    const errors: unknown[] = [];
    const bus = new ChangeBus((err) => errors.push(err));
    const heard: number[] = [];
    bus.subscribe(() => {
      throw new Error('bad listener');
    });
    bus.subscribe((index) => heard.push(index));
    bus.publish(7, [tool('a')]);
    expect(heard).toEqual([7]);
    expect(errors).toHaveLength(1);
  });

  it('stops telling a listener once it unsubscribes', () => {
    const bus = new ChangeBus();
    const heard: number[] = [];
    const off = bus.subscribe((index) => heard.push(index));
    off();
    bus.publish(1, [tool('a')]);
    expect(heard).toEqual([]);
    expect(bus.listenerCount).toBe(0);
  });
});

/** A change log in memory, written the way the store writes it. */
function memoryLog(): ChangeLog & { write(index: number, changes: Change[]): void } {
  const rows: ChangeRecord[] = [];
  return {
    write(index, changes) {
      for (const c of changes) rows.push({ ...c, seq: rows.length + 1, index });
    },
    changesSince: (index, limit) => rows.filter((r) => r.index > index).slice(0, limit),
    changesAt: (index) => rows.filter((r) => r.index === index),
  };
}

describe('ChangeFeed', () => {
  const everything = { kind: 'all' } as const;

  function setup() {
    const bus = new ChangeBus();
    const log = memoryLog();
    let index = 0;
    const commit = (changes: Change[]) => {
      index++;
      log.write(index, changes);
      bus.publish(index, changes);
    };
    const feed = new ChangeFeed(log, bus, () => index);
    return { bus, feed, commit, index: () => index };
  }

  it('replays the log after an index, then hands over to live changes without gaps or repeats', async () => {
    const { feed, commit } = setup();
    for (let i = 0; i < 5; i++) commit([tool(`t${i}`)]);
    const got: ViewChange[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let first = true;
    const sub = feed.subscribe({ from: 2, key: everything, admin: false }, async (events, phase) => {
      got.push(...events);
      // The first replayed write waits for the "client": writes landing meanwhile are held back.
      if (first && phase === 'replay') {
        first = false;
        await gate;
      }
    });
    commit([tool('during')]);
    release();
    await sub.caughtUp;
    commit([tool('after')]);
    expect(got.map((e) => e.name)).toEqual(['t2', 't3', 't4', 'during', 'after']);
    expect(got.map((e) => e.index)).toEqual([3, 4, 5, 6, 7]);
    sub.close();
  });

  it('says reset for an index from the future and follows live changes only', async () => {
    const { feed, commit } = setup();
    commit([tool('a')]);
    const got: string[] = [];
    const sub = feed.subscribe({ from: 99, key: everything, admin: false }, (events) => {
      got.push(...events.map((e) => e.name));
    });
    expect(sub.reset).toBe(true);
    await sub.caughtUp;
    commit([tool('b')]);
    expect(got).toEqual(['b']);
  });

  it('shows each caller only its view: a tool leaving the view is a delete, services only to admins', async () => {
    const { feed, commit } = setup();
    const scoped = { kind: 'scopes', scopes: new Set(['x']) } as const;
    const got: string[] = [];
    const sub = feed.subscribe({ from: undefined, key: scoped, admin: false }, (events) => {
      got.push(...events.map((e) => `${e.op}:${e.name}`));
    });
    commit([tool('secret', ['y'])]);
    commit([tool('mine', ['x'])]);
    commit([tool('mine', ['y'], ['x'])]);
    commit([{ kind: 'tool-service', name: 'svc', op: 'upsert', scopesBefore: null, scopesAfter: [] }]);
    expect(got).toEqual(['upsert:mine', 'delete:mine']);
    sub.close();
    commit([tool('mine', ['x'], ['y'])]);
    expect(got).toHaveLength(2);
  });

  it('never splits one write across deliveries, however large', async () => {
    const { feed, commit } = setup();
    commit(Array.from({ length: 12_000 }, (_, i) => tool(`bulk${i}`)));
    commit([tool('next')]);
    const sizes: number[] = [];
    const sub = feed.subscribe({ from: 0, key: everything, admin: false }, (events) => {
      sizes.push(events.length);
    });
    await sub.caughtUp;
    expect(sizes).toEqual([12_000, 1]);
  });
});
