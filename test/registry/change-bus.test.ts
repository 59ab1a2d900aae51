/**
 * The change bus's delivery and the change feed's replay-to-live hand-over, on
 * fakes of our own (a change log in an array): no database, no HTTP.
 */
import { describe, expect, it } from 'vitest';
import type { Change, ChangeRecord } from '../../src/model/records.js';
import type { ViewChange } from '../../src/model/visibility.js';
import { ChangeBus } from '../../src/registry/change-bus.js';
import { sseChanges } from '../../src/http/sse.js';
import { ChangeFeed, type ChangeLog, REPLAY_PAGE } from '../../src/registry/change-feed.js';

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
    changesAfterRow: (seq, limit) => rows.filter((r) => r.seq > seq).slice(0, limit),
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

  it('replays a big write in bounded parts, with the resume id only where each write ends', async () => {
    const { feed, commit } = setup();
    commit(Array.from({ length: 2 * REPLAY_PAGE + 500 }, (_, i) => tool(`bulk${i}`)));
    commit([tool('next')]);
    const parts: { size: number; complete: boolean }[] = [];
    let text = '';
    const sub = feed.subscribe({ from: 0, key: everything, admin: false }, (events, _phase, complete) => {
      parts.push({ size: events.length, complete });
      text += sseChanges(events, complete);
    });
    await sub.caughtUp;
    expect(Math.max(...parts.map((p) => p.size))).toBeLessThanOrEqual(REPLAY_PAGE);
    expect(parts.slice(0, 2).every((p) => !p.complete)).toBe(true);
    expect(parts.at(-1)?.complete).toBe(true);
    // Every event once, in order; ids after the last event of write 1 and after write 2.
    const names = [...text.matchAll(/"name":"([^"]+)"/g)].map((m) => m[1]);
    expect(names).toEqual([...Array.from({ length: 2 * REPLAY_PAGE + 500 }, (_, i) => `bulk${i}`), 'next']);
    const ids = [...text.matchAll(/id: (\d+)\nevent: change\ndata: \{[^\n]*"name":"([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(ids).toEqual([`1 bulk${2 * REPLAY_PAGE + 499}`, '2 next']);
  });

  it('puts the id on the last event in view when the rest of a write, past a page, is outside it', async () => {
    const { feed, commit } = setup();
    const scoped = { kind: 'scopes', scopes: new Set(['x']) } as const;
    // The visible tools end the page; the next page holds only tools the view cannot see.
    commit([
      ...Array.from({ length: REPLAY_PAGE }, (_, i) => tool(`mine${i}`, ['x'])),
      ...Array.from({ length: 10 }, (_, i) => tool(`hidden${i}`, ['y'])),
    ]);
    commit([tool('hidden-write', ['y'])]);
    commit([tool('mine-last', ['x'])]);
    let text = '';
    const sub = feed.subscribe({ from: 0, key: scoped, admin: false }, (events, _phase, complete) => {
      text += sseChanges(events, complete);
    });
    await sub.caughtUp;
    const ids = [...text.matchAll(/id: (\d+)\nevent: change\ndata: \{[^\n]*"name":"([^"]+)"/g)].map((m) => `${m[1]} ${m[2]}`);
    expect(ids).toEqual([`1 mine${REPLAY_PAGE - 1}`, '3 mine-last']);
    expect(text).not.toContain('hidden');
  });

  it('gives every subscriber with the same view the same live array, computed once', () => {
    const { feed, commit } = setup();
    const got: (readonly ViewChange[])[] = [];
    const subs = [0, 1, 2].map(() => feed.subscribe({ from: undefined, key: everything, admin: true }, (events) => void got.push(events)));
    const other = feed.subscribe({ from: undefined, key: everything, admin: false }, (events) => void got.push(events));
    commit([tool('a'), { kind: 'tool-service', name: 'svc', op: 'upsert', scopesBefore: null, scopesAfter: [] }]);
    expect(got).toHaveLength(4);
    expect(got[1]).toBe(got[0]);
    expect(got[2]).toBe(got[0]);
    expect(got[0]?.map((e) => e.name)).toEqual(['a', 'svc']);
    expect(got[3]?.map((e) => e.name)).toEqual(['a']);
    for (const sub of [...subs, other]) sub.close();
  });

  it('replays many subscribers in turns: one slice of work per turn of the event loop', async () => {
    const { feed, commit } = setup();
    // Enough rows that the replay outlasts any single turn many times over on a fast runtime
    // too (at 6,000 rows a replay, Node 26 finished all six in 35 ms, a GC pause a quarter of it).
    for (let i = 0; i < 24; i++) commit(Array.from({ length: 1000 }, (_, k) => tool(`w${i}-${k}`)));
    const subs = Array.from({ length: 6 }, () => feed.subscribe({ from: 0, key: everything, admin: false }, () => undefined));
    // A timer every turn of the loop measures how long each turn was held.
    let longest = 0;
    let lastTick = performance.now();
    let ticking = true;
    const tick = () => {
      const now = performance.now();
      longest = Math.max(longest, now - lastTick);
      lastTick = now;
      if (ticking) setImmediate(tick);
    };
    setImmediate(tick);
    const started = performance.now();
    await Promise.all(subs.map((s) => s.caughtUp));
    ticking = false;
    const total = performance.now() - started;
    // 6 replays of 24,000 rows each: all of it far longer than any single turn.
    expect(longest).toBeLessThan(total / 4);
  });
});
