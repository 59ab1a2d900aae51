/**
 * The MCP session table on its own (src/http/mcp/sessions.ts), with stand-ins for the SDK's
 * server: per-caller and total bounds, the idle sweep, list_changed only for the views a write
 * touches, and a stream whose client stopped reading cut off instead of buffered.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { McpSessions, type McpSession } from '../../src/http/mcp/sessions.js';
import { RegistryError } from '../../src/model/errors.js';
import type { Change } from '../../src/model/records.js';
import type { ViewKey } from '../../src/model/visibility.js';

interface Probe {
  session: McpSession;
  closed: boolean;
  notified: number;
}

function probe(id: string, owner: string, view: ViewKey, lastSeen = 0): Probe {
  const p: Probe = { closed: false, notified: 0, session: undefined as unknown as McpSession };
  const server = {
    close: async () => {
      p.closed = true;
    },
    sendToolListChanged: async () => {
      p.notified++;
    },
  } as unknown as Server;
  p.session = {
    id,
    owner,
    server,
    transport: {} as WebStandardStreamableHTTPServerTransport,
    view,
    lastSeen,
    stream: null,
    inflight: new Set(),
  };
  return p;
}

const scopes = (...s: string[]): ViewKey => ({ kind: 'scopes', scopes: new Set(s) });
const toolChange = (name: string, scopesAfter: string[] | null, scopesBefore: string[] | null = null): Change => ({
  kind: 'tool',
  name,
  op: scopesAfter === null ? 'delete' : 'upsert',
  scopesBefore,
  scopesAfter,
});
const flush = () => new Promise((r) => setTimeout(r, 5));

describe('McpSessions', () => {
  let table: McpSessions;
  afterEach(() => table.closeAll());

  it("a caller past its share loses its least recently used session, and only that caller's", () => {
    table = new McpSessions({ maxSessions: 100, perCaller: 2, idleMs: 60_000 });
    const a1 = probe('a1', 'A', scopes('x'), 10);
    const a2 = probe('a2', 'A', scopes('x'), 5);
    const b1 = probe('b1', 'B', scopes('x'), 1);
    for (const p of [a1, a2, b1]) table.add(p.session);
    table.makeRoom('A', 100);
    expect([a1.closed, a2.closed, b1.closed]).toEqual([false, true, false]);
    expect(table.get('a2', 'A')).toBeUndefined();
    expect(table.heldBy('A')).toBe(1);
    // Another caller's session is as unknown as none.
    expect(table.get('a1', 'B')).toBeUndefined();
    expect(table.get('a1', 'A')).toBe(a1.session);
  });

  it('past the total, idle sessions go first; with none idle a new session is a 503', () => {
    table = new McpSessions({ maxSessions: 2, perCaller: 10, idleMs: 1000 });
    const idle = probe('i', 'A', scopes('x'), 0);
    const busy = probe('b', 'B', scopes('x'), 5000);
    table.add(idle.session);
    table.add(busy.session);
    table.makeRoom('C', 5500);
    expect(idle.closed).toBe(true);
    table.add(probe('c', 'C', scopes('x'), 5500).session);
    let refused: unknown;
    try {
      table.makeRoom('D', 5600);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(RegistryError);
    expect((refused as RegistryError).status).toBe(503);
    expect((refused as RegistryError).retryAfterS).toBeGreaterThan(0);
  });

  it('the sweep ends idle sessions but not those with an open stream', () => {
    table = new McpSessions({ maxSessions: 10, perCaller: 10, idleMs: 1000 });
    const idle = probe('i', 'A', scopes('x'), 0);
    const streaming = probe('s', 'A', scopes('x'), 0);
    streaming.session.stream = { admits: () => true };
    table.add(idle.session);
    table.add(streaming.session);
    table.sweep(10_000);
    expect(idle.closed).toBe(true);
    expect(streaming.closed).toBe(false);
    expect(table.size).toBe(1);
  });

  it('list_changed goes to the sessions whose view the write touched, once per burst', async () => {
    table = new McpSessions({ maxSessions: 10, perCaller: 10, idleMs: 60_000, debounceMs: 1 });
    const stream = () => ({ admits: () => true });
    const x = probe('x', 'A', scopes('x'));
    const y = probe('y', 'B', scopes('y'));
    const all = probe('all', 'C', { kind: 'all' });
    const pub = probe('pub', 'D', { kind: 'public' });
    for (const p of [x, y, all, pub]) {
      p.session.stream = stream();
      table.add(p.session);
    }
    table.changed(1, [toolChange('t1', ['x'])]);
    table.changed(2, [toolChange('t2', ['x'])]);
    await flush();
    expect([x.notified, y.notified, all.notified, pub.notified]).toEqual([1, 0, 1, 0]);
    // A tool leaving a view (its scopes changed away from y) is a change of that view.
    table.changed(3, [toolChange('t3', ['x'], ['y'])]);
    await flush();
    expect([x.notified, y.notified, all.notified, pub.notified]).toEqual([2, 1, 2, 0]);
    // A public tool is in every view; a tool service is in no MCP list.
    table.changed(4, [toolChange('t4', []), { kind: 'tool-service', name: 's', op: 'upsert', scopesBefore: null, scopesAfter: [] }]);
    await flush();
    expect([x.notified, y.notified, all.notified, pub.notified]).toEqual([3, 2, 3, 1]);
    table.changed(5, [{ kind: 'tool-service', name: 's', op: 'delete', scopesBefore: [], scopesAfter: null }]);
    await flush();
    expect([x.notified, y.notified, all.notified, pub.notified]).toEqual([3, 2, 3, 1]);
  });

  it('a stream whose client stopped reading is cut off, not written to', async () => {
    table = new McpSessions({ maxSessions: 10, perCaller: 10, idleMs: 60_000, debounceMs: 1 });
    const p = probe('x', 'A', scopes('x'));
    // The stream's event-stream helper says no (and cuts it off: test/http/event-stream.test.ts).
    let asked = false;
    p.session.stream = { admits: () => ((asked = true), false) };
    table.add(p.session);
    table.changed(1, [toolChange('t', ['x'])]);
    await flush();
    expect(asked).toBe(true);
    expect(p.notified).toBe(0);
  });
});
