/**
 * Issue 31's resumable streams, end to end over a real socket: a client whose GET stream dropped
 * comes back with `Last-Event-ID` and is sent the `notifications/tools/list_changed` that went out
 * while it was away, with an event id, exactly once; an id of another session replays nothing of
 * this one.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

interface SseEvent {
  id: string | undefined;
  data: string;
}

/** Reads SSE events from `res` until `enough` says so (or `waitMs` pass), then stops reading. */
async function readEvents(res: Response, enough: (events: SseEvent[]) => boolean, waitMs = 5000): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const deadline = Date.now() + waitMs;
  try {
    while (!enough(events) && Date.now() < deadline) {
      const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), deadline - Date.now()))]);
      if (chunk === null || chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = block.split('\n');
        events.push({
          id: lines.find((l) => l.startsWith('id: '))?.slice(4),
          data: lines
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trim())
            .join('\n'),
        });
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return events;
}

describe('MCP GET stream resumed with Last-Event-ID (issue 31)', () => {
  let t: TestApp;
  let base: string;
  let admin: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write'], { sub: 'resuming-client' }));
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  const session = async (): Promise<Record<string, string>> => {
    const headers = { ...admin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'reconnect-test', version: '1' } },
      }),
    });
    expect(init.status).toBe(200);
    await init.text();
    const id = init.headers.get('mcp-session-id') as string;
    const withSession = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
    const done = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: withSession,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    expect(done.status).toBe(202);
    return withSession;
  };
  const openStream = (headers: Record<string, string>, lastEventId?: string) =>
    fetch(`${base}/mcp`, {
      headers: { ...headers, accept: 'text/event-stream', ...(lastEventId !== undefined && { 'last-event-id': lastEventId }) },
    });
  const register = async (name: string) => {
    const res = await fetch(`${base}/tools/register`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json' },
      body: JSON.stringify({ name, endpoint: `/${name}`, host: '127.0.0.1', port: 9, scopes: [], description: `The ${name} tool` }),
    });
    expect(res.status).toBe(201);
  };

  it('sends what was missed while the stream was down, once, and nothing of it to another session', async () => {
    const headers = await session();
    const first = await openStream(headers);
    expect(first.status).toBe(200);
    // The cursor is the id of the last event the client got on the stream.
    const seen = readEvents(first, (events) => events.some((e) => e.data.includes('list_changed')));
    await new Promise((r) => setTimeout(r, 200));
    await register('while_here');
    // A comment opens the stream at once, before any event (its head would wait for the first otherwise).
    expect((await seen)[0]).toEqual({ id: undefined, data: '' });
    const cursor = (await seen).find((e) => e.data.includes('list_changed'))?.id;
    expect(cursor).toMatch(/\/\d+$/);

    // The stream is gone (read cancelled above); a write happens meanwhile.
    await new Promise((r) => setTimeout(r, 100));
    await register('while_away');
    await new Promise((r) => setTimeout(r, 300));

    const resumed = await openStream(headers, cursor);
    expect(resumed.status).toBe(200);
    const missed = await readEvents(resumed, (events) => events.some((e) => e.data.includes('list_changed')));
    const changed = missed.filter((e) => e.data.includes('notifications/tools/list_changed'));
    expect(changed).toHaveLength(1);
    expect(changed[0]?.id).toMatch(/\/\d+$/);
    expect(changed[0]?.id).not.toBe(cursor);

    // Resumed after that event: nothing is sent twice.
    const again = await openStream(headers, changed[0]?.id);
    const twice = await readEvents(again, () => false, 1000);
    expect(twice.filter((e) => e.data.includes('list_changed'))).toHaveLength(0);

    // Another session cannot use this one's cursor.
    const other = await session();
    const foreign = await openStream(other, cursor);
    expect(foreign.status).toBe(400);
    await foreign.text();
  }, 20_000);
});
