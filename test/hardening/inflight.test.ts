/**
 * Issue 9, "in-flight calls": MAX_INFLIGHT_CALLS is one pool, and each caller (token issuer and
 * subject) gets at most MAX_INFLIGHT_CALLS_PER_CALLER of it; past its share a caller gets 503
 * with Retry-After while others still get through. Real sockets: the registry listens on port 0.
 */
import { createServer, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

/** vi.waitUntil polls every 50 ms for 1 s by default: these waits poll every 10 ms, for up to 3000 ms. */
const polling = { timeout: 3000, interval: 10 };

describe('issue 9: each caller gets a bounded share of the in-flight calls', () => {
  let t: TestApp;
  let tool: Server;
  let base: string;
  /** Calls the tool holds until released. */
  const held: ServerResponse[] = [];

  beforeAll(async () => {
    tool = createServer((req, res) => {
      req.resume();
      held.push(res);
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MAX_INFLIGHT_CALLS: '10', MAX_INFLIGHT_CALLS_PER_CALLER: '2' });
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(t.token(['registry:write'])),
      payload: {
        ...seed('calculator'),
        name: 'held',
        scopes: [],
        parameters: {},
        host: '127.0.0.1',
        port: (tool.address() as AddressInfo).port,
        timeoutMs: 60_000,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const res of held) res.destroy();
    await t?.close();
    tool?.closeAllConnections();
    await new Promise<void>((resolve) => tool?.close(() => resolve()));
  });

  const call = (token: string) =>
    fetch(`${base}/tools/held/invoke`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json' }, body: '{}' });

  const release = () => {
    for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/plain' }).end('done');
  };

  it('refuses a caller past its share with 503 and Retry-After, while other callers get through', async () => {
    const greedy = t.token([], { sub: 'greedy', iss: 'https://issuer.one' });
    const first = [call(greedy), call(greedy)];
    await vi.waitUntil(() => held.length === 2, polling);

    const refused = await call(greedy);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'TR_ERR_TOO_MANY_CALLS', status: 503 });

    // Another subject, and the same subject from another issuer, are other callers.
    const others = [
      call(t.token([], { sub: 'polite', iss: 'https://issuer.one' })),
      call(t.token([], { sub: 'greedy', iss: 'https://issuer.two' })),
    ];
    await vi.waitUntil(() => held.length === 4, polling);
    expect(t.app.bridge.inflight).toBe(4);

    release();
    for (const res of await Promise.all([...first, ...others])) expect(res.status).toBe(200);
    expect(t.app.bridge.inflight).toBe(0);

    // The share is free again once the calls are done.
    const again = call(greedy);
    await vi.waitUntil(() => held.length === 1, polling);
    release();
    expect((await again).status).toBe(200);
  });
});
