/**
 * Issue 28: JSON-RPC batches on `/mcp`, which exist in protocol revision 2025-03-26 only (it
 * added them; 2025-06-18 removed them). SDK clients never send a batch, so these are raw POSTs
 * to a registry on a loopback port, against HTTP tools on a loopback server that counts the
 * calls it gets: a batch repeating a request id is refused whole and runs nothing; a request
 * cancelled by `notifications/cancelled` (in its own batch or from another POST) gets no
 * answer, and the HTTP response it was in ends once every other request of it is answered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { connect, mcpUrl, type McpTestClient } from './support.js';

type Message = {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  result?: { content?: { text: string }[] };
  error?: { code: number; message: string };
};

const call = (id: string | number, tool: string, text = 'x') => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: tool, arguments: { text } },
});
const cancel = (requestId: string | number) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId, reason: 'changed my mind' },
});

/** The JSON-RPC messages of an SSE answer, once it has ended. */
async function messagesOf(res: Response): Promise<Message[]> {
  const text = await res.text();
  return [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1] ?? 'null') as Message);
}

/** Resolves with what `promise` gave, or rejects when it takes longer than `ms`. */
async function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: still open after ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('JSON-RPC batches on /mcp (issue 28)', () => {
  let t: TestApp;
  let url: URL;
  let toolHost: Server;
  /** Calls each path of the tool host got. */
  const calls = new Map<string, number>();
  /** Held calls of /hang, answered when released; `aborted` once the registry hung up on one. */
  const held: { res: ServerResponse; aborted: boolean }[] = [];
  const clients: McpTestClient[] = [];
  let nextSub = 0;

  const countOf = (path: string) => calls.get(path) ?? 0;
  const until = async (check: () => boolean, what: string) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
    if (!check()) throw new Error(`timed out waiting for ${what}`);
  };

  /** A session opened at `revision` by raw HTTP; the headers to send on it. */
  const openSession = async (revision = '2025-03-26') => {
    const token = t.token([], { sub: `batcher-${nextSub++}` });
    const base = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(url, {
      method: 'POST',
      headers: base,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'batcher', version: '1' } },
      }),
    });
    expect(init.status).toBe(200);
    const headers: Record<string, string> = {
      ...base,
      'mcp-session-id': init.headers.get('mcp-session-id') ?? '',
      'mcp-protocol-version': revision,
    };
    await init.text();
    const initialized = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    });
    expect(initialized.status).toBe(202);
    return headers;
  };
  const post = (headers: Record<string, string>, body: unknown) => fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });

  beforeAll(async () => {
    toolHost = createServer((req: IncomingMessage, res: ServerResponse) => {
      const path = req.url ?? '';
      calls.set(path, countOf(path) + 1);
      req.resume();
      req.on('end', () => {
        if (path === '/hang') {
          const entry = { res, aborted: false };
          res.once('close', () => (entry.aborted = !res.writableFinished));
          held.push(entry);
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain' }).end(`answer ${countOf(path)} of ${path}`);
      });
    });
    await new Promise<void>((resolve) => toolHost.listen(0, '127.0.0.1', resolve));
    const port = (toolHost.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const admin = bearer(t.token(['registry:write'], { sub: 'operator' }));
    for (const [name, endpoint] of [
      ['counted', '/count'],
      ['other', '/other'],
      ['hanging', '/hang'],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: {
          name,
          endpoint,
          scopes: [],
          description: `The ${name} tool`,
          parameters: { text: { type: 'string', description: 'Anything' } },
          host: '127.0.0.1',
          port,
        },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    url = await mcpUrl(t.app);
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    for (const h of held) h.res.destroy();
    await t?.close();
    await new Promise((resolve) => toolHost?.close(resolve));
  });

  describe('what each protocol revision does with one', () => {
    it('2025-03-26 (and no MCP-Protocol-Version header, which means it) answers every request of a batch on one stream', async () => {
      const headers = await openSession();
      const res = await post(headers, [
        call(1, 'counted'),
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { jsonrpc: '2.0', id: 3, method: 'ping' },
      ]);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const answers = await messagesOf(res);
      expect(answers.map((m) => m.id).sort()).toEqual([1, 2, 3]);
      const { 'mcp-protocol-version': _, ...headerless } = headers;
      const again = await post(headerless, [call(4, 'counted'), call(5, 'other')]);
      expect((await messagesOf(again)).map((m) => m.id).sort()).toEqual([4, 5]);
    });

    it('2024-11-05 had no Streamable HTTP (the SDK still lets a client negotiate it there): its batches are taken as 2025-03-26 takes them', async () => {
      const headers = await openSession('2024-11-05');
      const res = await post(headers, [call(1, 'counted'), call(2, 'other')]);
      expect(res.status).toBe(200);
      expect((await messagesOf(res)).map((m) => m.id).sort()).toEqual([1, 2]);
    });

    it('2025-06-18 and later have no batches: one is refused whole, and nothing in it runs', async () => {
      for (const revision of ['2025-06-18', '2025-11-25']) {
        const headers = await openSession(revision);
        const before = countOf('/count');
        const res = await post(headers, [call(1, 'counted'), call(2, 'counted')]);
        expect(res.status, revision).toBe(400);
        expect(((await res.json()) as { detail: string }).detail).toContain(`MCP ${revision} has no JSON-RPC batches`);
        expect(countOf('/count')).toBe(before);
      }
    });
  });

  describe('a repeated request id', () => {
    it('refuses the whole batch with one -32600 Invalid Request naming the id, and runs none of it', async () => {
      const headers = await openSession();
      const before = countOf('/count');
      const res = await post(headers, [call(7, 'counted'), call(7, 'counted'), call(8, 'counted')]);
      expect(res.status).toBe(400);
      const body = (await res.json()) as {
        code: string;
        detail: string;
        jsonrpc: string;
        id: null;
        error: { code: number; message: string };
      };
      expect(body).toMatchObject({ code: 'TR_ERR_BAD_REQUEST', jsonrpc: '2.0', id: null, error: { code: -32600 } });
      expect(body.error.message).toBe('Invalid Request: more than one request of the batch has id 7; each request needs an id of its own');
      expect(body.detail).toBe(body.error.message);
      // Give a wrongly started call the time to reach the tool host.
      await new Promise((r) => setTimeout(r, 100));
      expect(countOf('/count')).toBe(before);
      // The session is unharmed, and the ids free.
      const after = await post(headers, [call(7, 'counted'), call(8, 'counted')]);
      expect((await messagesOf(after)).map((m) => m.id).sort()).toEqual([7, 8]);
      expect(countOf('/count')).toBe(before + 2);
    });

    it('a string id and a number id that read alike are two ids, as JSON-RPC has them', async () => {
      const headers = await openSession();
      const res = await post(headers, [call(1, 'counted'), call('1', 'counted')]);
      expect(res.status).toBe(200);
      expect((await messagesOf(res)).map((m) => m.id)).toEqual(expect.arrayContaining([1, '1']));
    });

    it('an id repeated between a request and a notification or a response is no repeat: only requests have ids to answer', async () => {
      const headers = await openSession();
      const res = await post(headers, [call(3, 'counted'), cancel(99), { jsonrpc: '2.0', method: 'notifications/initialized' }]);
      expect(res.status).toBe(200);
      expect((await messagesOf(res)).map((m) => m.id)).toEqual([3]);
    });
  });

  describe('a request cancelled in its own batch', () => {
    it('is never run and gets no answer; the answer to the rest ends the response', async () => {
      const headers = await openSession();
      const hanging = countOf('/hang');
      const res = await post(headers, [call(1, 'counted'), call(2, 'hanging'), cancel(2)]);
      expect(res.status).toBe(200);
      const answers = await within(2000, messagesOf(res), 'the response of a batch with a cancelled request');
      expect(answers.map((m) => m.id)).toEqual([1]);
      expect(countOf('/hang')).toBe(hanging);
    });

    it('wherever the cancellation stands in the batch', async () => {
      const headers = await openSession();
      const hanging = countOf('/hang');
      const res = await post(headers, [cancel('h'), call('h', 'hanging'), call('c', 'counted')]);
      const answers = await within(2000, messagesOf(res), 'the response of a batch cancelling a later request');
      expect(answers.map((m) => m.id)).toEqual(['c']);
      expect(countOf('/hang')).toBe(hanging);
    });

    it('all of a batch cancelled: an event stream that ends at once with nothing in it (the input had requests, so no 202)', async () => {
      const headers = await openSession();
      const hanging = countOf('/hang');
      const res = await post(headers, [call(1, 'hanging'), call(2, 'hanging'), cancel(1), cancel(2)]);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      expect(await within(2000, messagesOf(res), 'the response of a batch cancelled whole')).toEqual([]);
      expect(countOf('/hang')).toBe(hanging);
      // The ids are free again, and the session works.
      const again = await post(headers, [call(1, 'counted'), call(2, 'counted')]);
      expect((await messagesOf(again)).map((m) => m.id).sort()).toEqual([1, 2]);
    });
  });

  describe('a request cancelled from another POST while it runs', () => {
    it('stops the call and ends its response without an answer', async () => {
      const headers = await openSession();
      const before = held.length;
      const running = post(headers, call('long', 'hanging'));
      await until(() => held.length > before, 'the call to reach the tool host');
      const cancelled = await post(headers, cancel('long'));
      expect(cancelled.status).toBe(202);
      const res = await within(2000, running, 'the POST of the cancelled request');
      expect(res.status).toBe(200);
      expect(await within(2000, messagesOf(res), 'the stream of the cancelled request')).toEqual([]);
      await until(() => held[before]?.aborted === true, 'the registry to hang up on the tool host');
      // The id is free again.
      const again = await post(headers, call('long', 'counted'));
      expect((await messagesOf(again)).map((m) => m.id)).toEqual(['long']);
    });

    it('in a batch: the response ends with the answers to the others', async () => {
      const headers = await openSession();
      const before = held.length;
      const running = post(headers, [call('slow', 'hanging'), call('quick', 'counted')]);
      await until(() => held.length > before, 'the call to reach the tool host');
      expect((await post(headers, cancel('slow'))).status).toBe(202);
      const res = await within(2000, running, 'the POST of the batch');
      expect((await within(2000, messagesOf(res), 'the stream of the batch')).map((m) => m.id)).toEqual(['quick']);
    });

    it('a cancellation after the answer, or of an id never sent, changes nothing', async () => {
      const headers = await openSession();
      const answered = await post(headers, call(5, 'counted'));
      expect((await messagesOf(answered)).map((m) => m.id)).toEqual([5]);
      expect((await post(headers, cancel(5))).status).toBe(202);
      expect((await post(headers, cancel('never-sent'))).status).toBe(202);
      const next = await post(headers, [call(5, 'counted'), call(6, 'counted')]);
      expect((await messagesOf(next)).map((m) => m.id).sort()).toEqual([5, 6]);
    });

    it('an SDK client that aborts a call: the tool host is hung up on, and the session goes on', async () => {
      const c = await connect(url, t.token([], { sub: 'sdk-canceller' }));
      clients.push(c);
      const before = held.length;
      const abort = new AbortController();
      const result = c.client.callTool({ name: 'hanging', arguments: { text: 'x' } }, undefined, { signal: abort.signal });
      await until(() => held.length > before, 'the call to reach the tool host');
      abort.abort('the user pressed stop');
      await expect(result).rejects.toThrow(/stop/);
      await until(() => held[before]?.aborted === true, 'the registry to hang up on the tool host');
      const next = await c.client.callTool({ name: 'counted', arguments: { text: 'y' } });
      expect(next.isError).toBeFalsy();
    });
  });
});
