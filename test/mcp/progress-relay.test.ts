/**
 * Issue 31: the bound on an upstream's progress relayed to a client (src/http/mcp/progress.ts):
 * one per interval, the newest held back sent when the interval ends or before the result,
 * never a value that does not increase, and at most `max` per call.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { progressRelay } from '../../src/http/mcp/progress.js';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('progressRelay (issue 31)', () => {
  it('sends the first at once and the newest of each interval after it', () => {
    const sent: number[] = [];
    const relay = progressRelay((p) => sent.push(p.progress), { minIntervalMs: 100, max: 100 });
    for (let i = 1; i <= 50; i++) relay.relay({ progress: i });
    expect(sent).toEqual([1]);
    vi.advanceTimersByTime(100);
    expect(sent).toEqual([1, 50]);
    relay.relay({ progress: 51 });
    relay.relay({ progress: 52 });
    relay.end();
    // Held back, sent before the result; nothing after it.
    expect(sent).toEqual([1, 50, 52]);
    relay.relay({ progress: 53 });
    vi.advanceTimersByTime(1000);
    expect(sent).toEqual([1, 50, 52]);
  });

  it('drops values that do not increase, and stops at its count', () => {
    const sent: number[] = [];
    const relay = progressRelay((p) => sent.push(p.progress), { minIntervalMs: 0, max: 3 });
    relay.relay({ progress: 5 });
    vi.advanceTimersByTime(1);
    relay.relay({ progress: 5 });
    relay.relay({ progress: 4 });
    vi.advanceTimersByTime(1);
    for (let i = 6; i <= 20; i++) {
      relay.relay({ progress: i });
      vi.advanceTimersByTime(1);
    }
    relay.end();
    expect(sent).toEqual([5, 6, 7]);
  });
});
