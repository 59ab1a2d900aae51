/**
 * Issue 31: a `tools/list` request alone in a POST is answered from the page's precomputed
 * result bytes with its id spliced in (src/http/mcp/list-answer.ts). The same request in a
 * batch (revision 2025-03-26) still goes through the SDK's server and transport, which
 * serialise the handler's objects: the two answers are compared as parsed JSON, page by page,
 * for the anonymous view, a token's view and a paged list, and a write must change what the
 * bytes say. The stream framing (priming event, event ids) and Last-Event-ID replay of an
 * answer sent as bytes are checked too.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

interface Rpc {
  jsonrpc: string;
  id: number | string;
  result?: { tools: { name: string; [k: string]: unknown }[]; nextCursor?: string; [k: string]: unknown };
  error?: { code: number; message: string };
}

/** Each SSE event of an answer: its id and the parsed data ('' for a priming event). */
function eventsOf(body: string): { id: string | undefined; data: Rpc | '' }[] {
  return body
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => {
      const lines = e.split('\n');
      const id = lines.find((l) => l.startsWith('id: '))?.slice(4);
      const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '';
      return { id, data: data.trim() === '' ? '' : (JSON.parse(data) as Rpc) };
    });
}

/** The answer event's data as sent. */
const dataOf = (body: string): string | undefined => body.match(/^data: (\{.+)$/m)?.[1];

const messagesOf = (res: LightMyRequestResponse): Rpc[] => eventsOf(res.body).flatMap((e) => (e.data === '' ? [] : [e.data]));

describe('tools/list from precomputed bytes (issue 31)', () => {
  let t: TestApp;
  const admin = () => bearer(t.token(['registry:write'], { sub: 'operator' }));

  const register = async (name: string, scopes: string[], extra: Record<string, unknown> = {}) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin(),
      payload: {
        name,
        endpoint: `/${name}`,
        scopes,
        description: `The ${name} tool`,
        parameters: { text: { type: 'string', description: 'Anything', enum: ['a', 'b'] } },
        host: '127.0.0.1',
        port: 9,
        ...extra,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
  };

  /** A session opened at `revision`; the headers to send on it. */
  const open = async (authorization: string | undefined, revision: string) => {
    const base: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(authorization !== undefined && { authorization }),
    };
    const init = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: base,
      payload: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'bytes-test', version: '1' } },
      },
    });
    expect(init.statusCode, init.body).toBe(200);
    const headers = { ...base, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': revision };
    const done = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers,
      payload: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
    expect(done.statusCode).toBe(202);
    return headers;
  };

  const post = (headers: Record<string, string>, payload: object) => t.app.inject({ method: 'POST', url: '/mcp', headers, payload });
  const list = (id: number | string, cursor?: string) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/list',
    ...(cursor !== undefined && { params: { cursor } }),
  });

  /** Every page, each asked for alone (the bytes) and in a batch of one (the SDK), compared. */
  const walk = async (headers: Record<string, string>) => {
    const pages: NonNullable<Rpc['result']>[] = [];
    let cursor: string | undefined;
    let id = 100;
    do {
      const alone = await post(headers, list(++id, cursor));
      expect(alone.statusCode, alone.body).toBe(200);
      expect(alone.headers['content-type']).toBe('text/event-stream');
      expect(alone.headers['mcp-session-id']).toBe(headers['mcp-session-id']);
      // Sent in one piece, from bytes: the SDK's transport streams its answers (no length).
      expect(alone.headers['content-length']).toBeDefined();
      const [fast] = messagesOf(alone);
      const batched = await post(headers, [list(id, cursor)]);
      expect(batched.statusCode, batched.body).toBe(200);
      expect(batched.headers['content-length']).toBeUndefined();
      const [sdk] = messagesOf(batched);
      expect(fast).toEqual(sdk);
      // Byte for byte, even: the result's bytes in the SDK's own key order.
      expect(dataOf(alone.body)).toBe(dataOf(batched.body));
      expect(fast?.id).toBe(id);
      pages.push(fast?.result ?? { tools: [] });
      cursor = fast?.result?.nextCursor;
    } while (cursor !== undefined);
    return pages;
  };
  const names = (pages: NonNullable<Rpc['result']>[]) => pages.flatMap((p) => p.tools.map((tool) => tool.name));

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MCP_PAGE_SIZE: '3', MCP_ALLOW_ANONYMOUS: 'true', ANONYMOUS_DISCOVERY: 'public' });
    await register('open_a', []);
    await register('open_b', [], { description: 'Quotes "and" \\ backslashes, ünïcode' });
    await register('alpha_a', ['alpha']);
    await register('alpha_b', ['alpha']);
    await register('alpha_c', ['alpha']);
    await register('beta_a', ['beta']);
    const deprecated = await t.app.inject({
      method: 'PUT',
      url: '/tools/alpha_b/deprecation',
      headers: admin(),
      payload: { sunset: '2999-01-01T00:00:00.000Z', reason: 'use alpha_c' },
    });
    expect(deprecated.statusCode, deprecated.body).toBe(200);
  });
  afterAll(() => t.close());

  it('the anonymous view (one page) is the answer the SDK gives', async () => {
    const headers = await open(undefined, '2025-03-26');
    const pages = await walk(headers);
    expect(pages).toHaveLength(1);
    expect(names(pages)).toEqual(['open_a', 'open_b']);
    expect(pages[0]?.tools[1]).toMatchObject({ description: 'Quotes "and" \\ backslashes, ünïcode' });
  });

  it("a token's view over several pages is the answer the SDK gives, page by page", async () => {
    const headers = await open(`Bearer ${t.token(['alpha'], { sub: 'pager' })}`, '2025-03-26');
    const pages = await walk(headers);
    expect(pages.length).toBe(2);
    expect(pages[0]?.nextCursor).toEqual(expect.any(String));
    expect(names(pages)).toEqual(['alpha_a', 'alpha_b', 'alpha_c', 'open_a', 'open_b']);
    const deprecated = pages[0]?.tools.find((tool) => tool.name === 'alpha_b');
    expect(deprecated?.['_meta']).toMatchObject({ 'io.tool-registry/deprecation': { reason: 'use alpha_c' } });
    // A string id is spliced as a string.
    const [answer] = messagesOf(await post(headers, list('the-id')));
    expect(answer?.id).toBe('the-id');
  });

  it('a write changes the bytes: a new tool is listed, a deleted one is not', async () => {
    const headers = await open(`Bearer ${t.token(['beta'], { sub: 'writer-watch' })}`, '2025-03-26');
    expect(names(await walk(headers))).toEqual(['beta_a', 'open_a', 'open_b']);
    await register('beta_b', ['beta']);
    expect(names(await walk(headers))).toEqual(['beta_a', 'beta_b', 'open_a', 'open_b']);
    const removed = await t.app.inject({ method: 'DELETE', url: '/tools/open_a', headers: admin() });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(names(await walk(headers))).toEqual(['beta_a', 'beta_b', 'open_b']);
    const anonymous = await open(undefined, '2025-03-26');
    expect(names(await walk(anonymous))).toEqual(['open_b']);
    await register('open_a', []);
  });

  it('a page asked for again comes from the cache, without walking the listing again; a bad cursor is still refused', async () => {
    const headers = await open(`Bearer ${t.token(['alpha'], { sub: 'cached' })}`, '2025-03-26');
    const first = await walk(headers);
    const walks = vi.spyOn(t.app.listing, 'list');
    try {
      // Once more for each page, alone: each the same bytes, and no walk of the listing.
      for (const cursor of [undefined, first[0]?.nextCursor]) {
        const [again] = messagesOf(await post(headers, list(7, cursor)));
        expect(again?.result).toEqual(first[cursor === undefined ? 0 : 1]);
      }
      expect(walks).not.toHaveBeenCalled();
      const [badCursor] = messagesOf(await post(headers, list(8, 'not-a-cursor')));
      expect(badCursor?.error).toMatchObject({ code: -32602 });
    } finally {
      walks.mockRestore();
    }
  });

  it('refusals stay the SDK’s: a bad cursor, bad params, an unsupported revision header', async () => {
    const headers = await open(`Bearer ${t.token(['alpha'], { sub: 'refused' })}`, '2025-11-25');
    const [badCursor] = messagesOf(await post(headers, list(1, 'not-a-cursor')));
    expect(badCursor?.error).toEqual({ code: -32602, message: 'the cursor is not one this registry gave out' });
    const [badParams] = messagesOf(await post(headers, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: 5 } }));
    expect(badParams?.error).toEqual({ code: -32602, message: 'tools/list: "cursor" must be a string' });
    const unsupported = await post({ ...headers, 'mcp-protocol-version': '1999-01-01' }, list(3));
    expect(unsupported.statusCode).toBe(400);
    const notAcceptable = await post({ ...headers, accept: 'application/json' }, list(4));
    expect(notAcceptable.statusCode).toBe(406);
  });

  it('at 2025-11-25 the answer is primed and has an event id, and Last-Event-ID replays it', async () => {
    const headers = await open(`Bearer ${t.token(['alpha'], { sub: 'resumer' })}`, '2025-11-25');
    const res = await post(headers, list(7));
    const events = eventsOf(res.body);
    expect(events).toHaveLength(2);
    expect(events[0]?.data).toBe('');
    expect(events[0]?.id).toMatch(/^[0-9a-f-]+\/\d+$/);
    const answer = events[1];
    expect(answer?.id).toMatch(/^[0-9a-f-]+\/\d+$/);
    expect(answer?.id?.split('/')[0]).toBe(events[0]?.id?.split('/')[0]);
    const replay = await t.app.inject({
      method: 'GET',
      url: '/mcp',
      headers: { ...headers, 'last-event-id': events[0]?.id ?? '' },
    });
    expect(replay.statusCode, replay.body).toBe(200);
    const replayed = eventsOf(replay.body);
    expect(replayed.map((e) => e.id)).toEqual([answer?.id]);
    expect(replayed[0]?.data).toEqual(answer?.data);
    // At 2025-03-26 the SDK does not prime; the answer still carries its event id.
    const older = eventsOf((await post(await open(`Bearer ${t.token(['alpha'], { sub: 'older' })}`, '2025-03-26'), list(8))).body);
    expect(older).toHaveLength(1);
    expect(older[0]?.id).toMatch(/\/\d+$/);
  });
});
