/**
 * A caller that hangs up cancels its call (architecture.md, the call path): the bridge aborts
 * the call to the tool, frees its in-flight slot at once rather than at the tool's timeout, and
 * records the call as cancelled. Real sockets: the registry listens on port 0.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

/** vi.waitUntil polls every 50 ms for 1 s by default: these waits poll every 10 ms, for up to 3000 ms. */
const polling = { timeout: 3000, interval: 10 };

describe('a caller that hangs up', () => {
  let t: TestApp;
  let tool: Server;
  let registryPort: number;

  beforeAll(async () => {
    // A tool that never answers.
    tool = createServer(() => undefined);
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const admin = bearer(t.token(['registry:write']));
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: {
        ...seed('calculator'),
        name: 'forever',
        endpoint: '/forever',
        scopes: [],
        parameters: {},
        host: '127.0.0.1',
        port: (tool.address() as AddressInfo).port,
        timeoutMs: 600_000,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    registryPort = (t.app.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await t.close();
    tool.closeAllConnections();
    await new Promise<void>((resolve) => tool.close(() => resolve()));
  });

  it('frees the in-flight slot at once and counts the call as cancelled', async () => {
    const req = httpRequest({
      host: '127.0.0.1',
      port: registryPort,
      method: 'POST',
      path: '/tools/forever/invoke',
      headers: { ...bearer(t.token([])), 'content-type': 'application/json' },
    });
    req.on('error', () => undefined);
    req.end('{}');
    await vi.waitUntil(() => t.app.bridge.inflight === 1, polling);
    req.destroy();
    await vi.waitUntil(() => t.app.bridge.inflight === 0, polling);
    const stats = await t.app.inject({ method: 'GET', url: '/stats' });
    expect(stats.json().errors_by_class).toEqual({ cancelled: 1 });
  });
});
