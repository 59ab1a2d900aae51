/**
 * Issue 31: `subscriptions/listen` at MCP revision 2026-07-28 (src/http/mcp/listen.ts), over a
 * real socket: the acknowledgment first, `notifications/tools/list_changed` to a listener only
 * when a write changes its own view (a token's, the anonymous one), every message tagged with
 * the subscription id and none with an event id (the revision has no resumption), the held-
 * stream budget, the token's expiry, and the graceful end on shutdown.
 *
 * Through node:http with a connection per request: undici's fetch, once a stream's body was
 * cancelled, opened connections that carried no request and held the server's close for its
 * keep-alive timeout (70 s).
 */
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';

const REVISION = '2026-07-28';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

interface Message {
  jsonrpc: string;
  id?: string | number;
  method?: string;
  params?: { _meta?: Record<string, unknown>; notifications?: Record<string, unknown> };
  result?: Record<string, unknown>;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  response: IncomingMessage;
}

/** A request on a connection of its own; resolves once the head is in. */
function send(url: string, method: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (response) =>
      resolve({ status: response.statusCode ?? 0, headers: response.headers, response }),
    );
    req.once('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

async function text(answer: Answer): Promise<string> {
  let body = '';
  for await (const chunk of answer.response) body += String(chunk);
  return body;
}

/** One listen stream, read as it arrives: its messages, and how many events carried an `id:`. */
class Listening {
  readonly messages: Message[] = [];
  ids = 0;
  done = false;
  readonly #waiters = new Set<() => void>();
  readonly #response: IncomingMessage;

  constructor(answer: Answer) {
    this.#response = answer.response;
    let buffer = '';
    this.#response.setEncoding('utf8');
    this.#response.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const lines = buffer.slice(0, end).split('\n');
        buffer = buffer.slice(end + 2);
        if (lines.some((l) => l.startsWith('id:'))) this.ids++;
        const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
        if (data.length > 0) this.messages.push(JSON.parse(data.join('\n')) as Message);
      }
      this.#wake();
    });
    this.#response.once('close', () => {
      this.done = true;
      this.#wake();
    });
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }

  changes(): Message[] {
    return this.messages.filter((m) => m.method === 'notifications/tools/list_changed');
  }

  /** Resolves once `ready` holds; fails after `ms`. */
  async until(ready: () => boolean, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!ready()) {
      if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms: ${JSON.stringify(this.messages)}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.#waiters.delete(wake);
          resolve();
        };
        this.#waiters.add(wake);
        setTimeout(wake, 50);
      });
    }
  }

  /** Hangs up, as a client that stops listening does. */
  stop(): void {
    this.#response.destroy();
  }
}

const envelope = {
  'io.modelcontextprotocol/protocolVersion': REVISION,
  'io.modelcontextprotocol/clientInfo': { name: 'listen-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** POSTs `subscriptions/listen` with `params` (and the revision's envelope) to the registry at `base`. */
const listenAt = (
  base: string,
  params: Record<string, unknown>,
  options: { token?: string; id?: string | number; accept?: string; origin?: string },
) =>
  send(
    `${base}/mcp`,
    'POST',
    {
      'content-type': 'application/json',
      accept: options.accept ?? 'application/json, text/event-stream',
      'mcp-protocol-version': REVISION,
      'mcp-method': 'subscriptions/listen',
      ...(options.token !== undefined && bearer(options.token)),
      ...(options.origin !== undefined && { origin: options.origin }),
    },
    { jsonrpc: '2.0', id: options.id ?? 1, method: 'subscriptions/listen', params: { ...params, _meta: envelope } },
  );

describe('subscriptions/listen at MCP 2026-07-28 (issue 31)', () => {
  let t: TestApp;
  let base: string;
  let admin: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_MAX: '0',
      MCP_ALLOW_ANONYMOUS: 'true',
      ANONYMOUS_DISCOVERY: 'public',
      MAX_WAITERS_PER_CALLER: '2',
      JWT_CLOCK_TOLERANCE_S: '0',
    });
    admin = bearer(t.token(['registry:write'], { sub: 'operator' }));
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  const post = (
    params: Record<string, unknown>,
    options: { token?: string; id?: string | number; accept?: string; origin?: string } = {},
  ) => listenAt(base, params, options);

  /** A listen stream for tool-list changes, checked for its head and acknowledgment. */
  const listen = async (token: string | undefined, id: string | number): Promise<Listening> => {
    const res = await post({ notifications: { toolsListChanged: true } }, { ...(token !== undefined && { token }), id });
    expect(res.status, res.status === 200 ? '' : await text(res)).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(res.headers['mcp-session-id']).toBeUndefined();
    const stream = new Listening(res);
    await stream.until(() => stream.messages.length > 0);
    expect(stream.messages[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { _meta: { [SUBSCRIPTION_ID]: id }, notifications: { toolsListChanged: true } },
    });
    return stream;
  };

  const register = async (name: string, scopes: string[]) => {
    const res = await send(
      `${base}/tools/register`,
      'POST',
      { ...admin, 'content-type': 'application/json' },
      { name, endpoint: `/${name}`, host: '127.0.0.1', port: 9, scopes, description: `The ${name} tool` },
    );
    expect(res.status, await text(res)).toBe(201);
  };

  it("tells each listener of the writes that change its own view, and of no other's", async () => {
    const alpha = await listen(t.token(['alpha'], { sub: 'alpha-listener' }), 'a-1');
    const beta = await listen(t.token(['beta'], { sub: 'beta-listener' }), 7);
    const anonymous = await listen(undefined, 'anon');

    // Only alpha's view has it. Its notification goes out in the same flush (20 ms after the
    // write) that would have told the others; 200 ms later nothing has reached them.
    await register('alpha_only', ['alpha']);
    await alpha.until(() => alpha.changes().length === 1);
    expect(alpha.changes()[0]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/tools/list_changed',
      params: { _meta: { [SUBSCRIPTION_ID]: 'a-1' } },
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect([beta.changes(), anonymous.changes()]).toEqual([[], []]);

    // A tool that needs no scope is in every view: each is told once, for this write alone.
    await register('open_to_all', []);
    await beta.until(() => beta.changes().length > 0);
    await anonymous.until(() => anonymous.changes().length > 0);
    await alpha.until(() => alpha.changes().length === 2);
    expect(beta.changes()).toEqual([
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { [SUBSCRIPTION_ID]: 7 } } },
    ]);
    expect(anonymous.changes()).toHaveLength(1);
    // No event ids: the revision has no Last-Event-ID resumption.
    expect([alpha.ids, beta.ids, anonymous.ids]).toEqual([0, 0, 0]);
    for (const stream of [alpha, beta, anonymous]) stream.stop();
  });

  it('acknowledges a filter with nothing the registry offers as empty, and ends it gracefully at once', async () => {
    const res = await post({ notifications: { promptsListChanged: true, resourceSubscriptions: ['file:///x'] } }, { id: 3 });
    expect(res.status).toBe(200);
    const stream = new Listening(res);
    await stream.until(() => stream.done);
    expect(stream.messages).toEqual([
      {
        jsonrpc: '2.0',
        method: 'notifications/subscriptions/acknowledged',
        params: { _meta: { [SUBSCRIPTION_ID]: 3 }, notifications: {} },
      },
      { jsonrpc: '2.0', id: 3, result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 3 } } },
    ]);
  });

  it('refuses params that are not the revision’s (-32602) and an Accept without event streams (406)', async () => {
    const missing = await post({}, { id: 4 });
    expect(missing.status).toBe(200);
    expect(JSON.parse(await text(missing))).toEqual({
      jsonrpc: '2.0',
      id: 4,
      error: { code: -32602, message: 'subscriptions/listen: "notifications" is required and must be an object' },
    });
    const json = await post({ notifications: { toolsListChanged: true } }, { id: 5, accept: 'application/json' });
    expect(json.status).toBe(406);
    expect(JSON.parse(await text(json))).toMatchObject({ code: 'TR_ERR_NOT_ACCEPTABLE', jsonrpc: '2.0', id: 5, error: { code: -32600 } });
  });

  it("holds a caller's listeners to its share of MAX_WAITERS_PER_CALLER, and gives a slot back when one ends", async () => {
    const token = t.token(['alpha'], { sub: 'greedy' });
    const first = await listen(token, 'g-1');
    const second = await listen(token, 'g-2');
    const third = await post({ notifications: { toolsListChanged: true } }, { token, id: 'g-3' });
    expect(third.status).toBe(503);
    expect(third.headers['retry-after']).toMatch(/^\d+$/);
    expect(JSON.parse(await text(third))).toMatchObject({ code: 'TR_ERR_UNAVAILABLE', jsonrpc: '2.0', id: 'g-3', error: { code: -32603 } });
    // Another caller has a share of its own.
    const other = await listen(t.token(['alpha'], { sub: 'modest' }), 'm-1');
    first.stop();
    await expect.poll(() => t.app.waiters.heldBy(`sub\u0000\u0000greedy`)).toBe(1);
    const again = await listen(token, 'g-4');
    for (const stream of [second, other, again]) stream.stop();
  });

  it('ends a listener when its token expires, without the graceful result (the client listens again)', async () => {
    const sign = createSigner({ key: TEST_SECRET, header: { alg: 'HS256', typ: 'at+jwt' } });
    const token = sign({ sub: 'short-lived', scope: 'alpha', exp: Math.floor(Date.now() / 1000) + 2 });
    const stream = await listen(token, 'short');
    await stream.until(() => stream.done, 5000);
    expect(stream.messages.map((m) => m.method ?? 'result')).toEqual(['notifications/subscriptions/acknowledged']);
  });

  it('lets a browser client on an allowed origin read the stream (the CORS headers of a hijacked reply)', async () => {
    const origin = t.config.publicUrl.origin;
    const res = await post({ notifications: { toolsListChanged: true } }, { id: 'cors', origin });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(origin);
    const stream = new Listening(res);
    await stream.until(() => stream.messages.length === 1);
    stream.stop();
  });

  it('advertises tools.listChanged in server/discover', async () => {
    const res = await send(
      `${base}/mcp`,
      'POST',
      {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': REVISION,
        'mcp-method': 'server/discover',
      },
      { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope } },
    );
    expect((JSON.parse(await text(res)) as { result: { capabilities: unknown } }).result.capabilities).toEqual({
      tools: { listChanged: true },
    });
  });
});

describe('subscriptions/listen within MAX_WAITERS (issue 31)', () => {
  it('refuses a listener past the total, whoever asks, and takes one again once a stream ends', async () => {
    const t = await createTestApp({ RATE_LIMIT_MAX: '0', MAX_WAITERS: '2' });
    try {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
      const filter = { notifications: { toolsListChanged: true } };
      const open = async (sub: string) => {
        const res = await listenAt(base, filter, { token: t.token(['alpha'], { sub }), id: sub });
        expect(res.status).toBe(200);
        const stream = new Listening(res);
        await stream.until(() => stream.messages.length === 1);
        return stream;
      };
      const first = await open('one');
      const second = await open('two');
      const third = await listenAt(base, filter, { token: t.token(['alpha'], { sub: 'three' }), id: 'three' });
      expect(third.status).toBe(503);
      expect(JSON.parse(await text(third))).toMatchObject({ code: 'TR_ERR_UNAVAILABLE', id: 'three', error: { code: -32603 } });
      first.stop();
      await expect.poll(() => t.app.waiters.size).toBe(1);
      const again = await open('three');
      second.stop();
      again.stop();
    } finally {
      await t.close();
    }
  });
});

describe('subscriptions/listen on shutdown (issue 31)', () => {
  it("ends every listener gracefully, with its listen request's result", async () => {
    const t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    const res = await listenAt(base, { notifications: { toolsListChanged: true } }, { token: t.token(['alpha']), id: 'bye' });
    const stream = new Listening(res);
    await stream.until(() => stream.messages.length === 1);
    await t.close();
    await stream.until(() => stream.done);
    expect(stream.messages.at(-1)).toEqual({
      jsonrpc: '2.0',
      id: 'bye',
      result: { resultType: 'complete', _meta: { [SUBSCRIPTION_ID]: 'bye' } },
    });
  });
});
