/**
 * Issue 9, slow readers: while a replay waits for a client that does not read, the live changes
 * held back for after it are bounded (MAX_HELD_BACK_EVENTS); past it the feed closes the
 * subscription and says so, and the client resumes from its last id.
 */
import { describe, expect, it } from 'vitest';
import type { ChangeRecord } from '../../src/model/records.js';
import { ChangeBus } from '../../src/registry/change-bus.js';
import { ChangeFeed, MAX_HELD_BACK_EVENTS } from '../../src/registry/change-feed.js';

describe('a replay that waits on its client', () => {
  it('holds back at most MAX_HELD_BACK_EVENTS live changes, then closes with onFellBehind', async () => {
    const log: ChangeRecord[] = [{ seq: 1, index: 1, kind: 'tool', name: 'first', op: 'upsert', scopesBefore: null, scopesAfter: [] }];
    let index = 1;
    const bus = new ChangeBus();
    const feed = new ChangeFeed(
      { changesSince: (from) => log.filter((r) => r.index > from), changesAfterRow: (seq) => log.filter((r) => r.seq > seq) },
      bus,
      () => index,
    );
    let fellBehind = 0;
    let delivered = 0;
    // A client that never drains: the first replayed write is never acknowledged.
    const subscription = feed.subscribe({ from: 0, key: { kind: 'all' }, admin: false, onFellBehind: () => fellBehind++ }, () => {
      delivered++;
      return new Promise<void>(() => undefined);
    });
    await new Promise((r) => setImmediate(r));
    expect(delivered).toBe(1);
    const write = () => {
      index++;
      bus.publish(
        index,
        Array.from({ length: 1000 }, (_, i) => ({
          kind: 'tool' as const,
          name: `t${index}-${i}`,
          op: 'upsert' as const,
          scopesBefore: null,
          scopesAfter: [],
        })),
      );
    };
    for (let i = 0; i < MAX_HELD_BACK_EVENTS / 1000; i++) write();
    expect(fellBehind).toBe(0);
    write();
    expect(fellBehind).toBe(1);
    // Closed: nothing more is held or told.
    write();
    expect(fellBehind).toBe(1);
    expect(bus.listenerCount).toBe(0);
    subscription.close();
  });
});
