/**
 * The per-session event store of resumable MCP streams (issue 31, src/http/mcp/event-store.ts):
 * replay after a `Last-Event-ID` on its own stream only, and each of its three bounds (events,
 * age, bytes) dropping the oldest first. Unit tests of our own code, with a fake clock.
 */
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { SessionEventStore } from '../../src/http/mcp/event-store.js';

const note = (n: number, pad = ''): JSONRPCMessage => ({ jsonrpc: '2.0', method: 'notifications/message', params: { n, pad } });
const LOOSE = { maxEvents: 1000, maxAgeMs: 60_000, maxBytes: 1 << 20 };

async function replayed(store: SessionEventStore, after: string): Promise<{ id: string; n: unknown }[]> {
  const sent: { id: string; n: unknown }[] = [];
  await store.replayEventsAfter(after, {
    send: async (id, message) => void sent.push({ id, n: (message as { params?: { n?: unknown } }).params?.n }),
  });
  return sent;
}

describe('SessionEventStore (issue 31)', () => {
  it('replays what came after the id, on that stream only, with the ids it gave', async () => {
    const store = new SessionEventStore(LOOSE);
    const first = await store.storeEvent('get', note(1));
    const other = await store.storeEvent('post-1', note(2));
    const second = await store.storeEvent('get', note(3));
    await store.storeEvent('get', note(4));
    expect(first).toBe('get/1');
    expect(other).toBe('post-1/2');
    expect(await store.getStreamIdForEventId(second)).toBe('get');
    expect(await replayed(store, first)).toEqual([
      { id: 'get/3', n: 3 },
      { id: 'get/4', n: 4 },
    ]);
    expect(await replayed(store, other)).toEqual([]);
  });

  it('knows no id it did not give: another stream, a sequence not reached yet, or garbage', async () => {
    const store = new SessionEventStore(LOOSE);
    await store.storeEvent('get', note(1));
    for (const id of ['other/1', 'get/2', 'get/x', 'get', '/1', 'get/1e3']) {
      expect(await store.getStreamIdForEventId(id), id).toBeUndefined();
      await expect(store.replayEventsAfter(id, { send: async () => undefined }), id).rejects.toThrow('unknown event id');
    }
  });

  it('keeps a priming event as an id only, never replayed', async () => {
    const store = new SessionEventStore(LOOSE);
    const priming = store.storePriming('get');
    await store.storeEvent('get', {} as JSONRPCMessage);
    await store.storeEvent('get', note(1));
    expect(store.size).toBe(1);
    expect(await replayed(store, priming)).toEqual([{ id: 'get/3', n: 1 }]);
  });

  it('holds at most maxEvents, dropping the oldest', async () => {
    const store = new SessionEventStore({ ...LOOSE, maxEvents: 3 });
    const start = store.storePriming('get');
    for (let n = 1; n <= 5; n++) await store.storeEvent('get', note(n));
    expect(store.size).toBe(3);
    expect((await replayed(store, start)).map((e) => e.n)).toEqual([3, 4, 5]);
  });

  it('holds nothing older than maxAgeMs', async () => {
    let now = 0;
    const store = new SessionEventStore({ ...LOOSE, maxAgeMs: 1000 }, () => now);
    const start = store.storePriming('get');
    await store.storeEvent('get', note(1));
    now = 600;
    await store.storeEvent('get', note(2));
    now = 1300;
    expect((await replayed(store, start)).map((e) => e.n)).toEqual([2]);
    now = 5000;
    expect(await replayed(store, start)).toEqual([]);
    expect(store.size).toBe(0);
  });

  it('holds at most maxBytes of event JSON, the oldest going first', async () => {
    const one = Buffer.byteLength(JSON.stringify(note(1, 'x'.repeat(100))));
    const store = new SessionEventStore({ ...LOOSE, maxBytes: one * 2 + 10 });
    const start = store.storePriming('get');
    for (let n = 1; n <= 4; n++) await store.storeEvent('get', note(n, 'x'.repeat(100)));
    expect(store.size).toBe(2);
    expect((await replayed(store, start)).map((e) => e.n)).toEqual([3, 4]);
    // One event larger than the whole bound is not kept either.
    await store.storeEvent('get', note(5, 'y'.repeat(one * 3)));
    expect(store.size).toBe(0);
  });

  it('ends an answered POST stream: what came after the cursor, then nothing more', async () => {
    const store = new SessionEventStore(LOOSE);
    const priming = store.storePriming('post-9');
    await store.storeEvent('post-9', note(1));
    const answer = store.storeAnswer('post-9', Buffer.from('{"content":[]}'), ',"jsonrpc":"2.0","id":7}');
    expect(store.answeredAfter(priming)?.map((e) => e.id)).toEqual(['post-9/2', answer]);
    expect(store.answeredAfter(priming)?.[1]?.message).toEqual({ result: { content: [] }, jsonrpc: '2.0', id: 7 });
    expect(store.answeredAfter(answer)).toEqual([]);
    // The GET stream is never "answered": the SDK keeps it open.
    const get = await store.storeEvent('get', note(2));
    expect(store.answeredAfter(get)).toBeUndefined();
  });
});
