/**
 * The bridge contract against the in-process fake of Pulsar's WebSocket API, plus the
 * connection-loss cases that are quick to stage on a fake.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PulsarWsClient } from '../../src/bridge/pulsar-ws.js';
import { runToolService } from '../../src/toolkit/tool-service.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';
import { bearer, createTestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { defineBridgeContract } from './contract.js';

const fake = new FakePulsar();
beforeAll(() => fake.start());
afterAll(() => fake.stop());

defineBridgeContract('the in-process fake', () => ({ wsUrl: fake.url }));

describe('PulsarWsClient', () => {
  it('ends a call at its abort while the broker has not acknowledged the publish (regression: unhandled rejection)', async () => {
    const client = new PulsarWsClient({ url: fake.url, connectTimeoutMs: 2000 });
    fake.ackPublishes = false;
    try {
      const topic = `noack-${randomUUID().slice(0, 8)}`;
      const started = Date.now();
      const call = client.call(
        {
          id: randomUUID(),
          requestQueue: `non-persistent://tg/request/${topic}`,
          responseQueue: `non-persistent://tg/response/${topic}`,
          body: {},
        },
        AbortSignal.timeout(300),
      );
      await expect(call).rejects.toThrow();
      expect(Date.now() - started).toBeLessThan(2000);
      expect(client.pendingCalls).toBe(0);
      await new Promise((r) => setTimeout(r, 50));
    } finally {
      fake.ackPublishes = true;
      client.close();
    }
  });
});

describe('connection loss (fake broker)', () => {
  it('fails waiting calls at once with 503 when the connection drops, then recovers without a restart', async () => {
    const t = await createTestApp({ PULSAR_WS_URL: fake.url, RATE_LIMIT_MAX: '0', TOOL_CALL_TIMEOUT_MS: '20000' });
    try {
      const admin = bearer(t.token(['registry:write']));
      const topic = `drop-${randomUUID().slice(0, 8)}`;
      await t.app.inject({ method: 'PUT', url: `/tool-services/${topic}`, headers: admin, payload: { id: topic, topic } });
      const { style: _s, ...tool } = seed('tell-joke');
      expect(
        (await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: { ...tool, name: topic, service: topic } }))
          .statusCode,
      ).toBe(201);
      // A service that never answers: the call can only end by the drop or its 20 s timeout.
      const silent = runToolService({ url: fake.url, id: topic, topic, handler: () => new Promise<string>(() => undefined) });
      await silent.ready;
      const token = bearer(t.token([]));
      const started = Date.now();
      const pending = t.app.inject({ method: 'POST', url: `/tools/${topic}/invoke`, headers: token, payload: { topic: 'x' } });
      await new Promise((r) => setTimeout(r, 200));
      fake.dropConnections();
      const res = await pending;
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().code).toBe('TR_ERR_BUS_UNAVAILABLE');
      expect(Date.now() - started).toBeLessThan(3000);
      // Discovery does not depend on the bus.
      expect((await t.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);

      const answering = runToolService({ url: fake.url, id: `${topic}-2`, topic, handler: () => 'back again' });
      await answering.ready;
      const again = await vi.waitFor(
        async () => {
          const res = await t.app.inject({ method: 'POST', url: `/tools/${topic}/invoke`, headers: token, payload: { topic: 'x' } });
          expect(res.statusCode, res.body).toBe(200);
          return res;
        },
        { interval: 100, timeout: 5000 },
      );
      expect(again.json().result).toBe('back again');
      await Promise.all([silent.close(), answering.close()]);
    } finally {
      await t.close();
    }
  });

  it('answers 503 quickly when no bus is configured, and when the broker is unreachable', async () => {
    for (const settings of [{}, { PULSAR_WS_URL: 'ws://127.0.0.1:1' }]) {
      const t = await createTestApp({ ...settings, RATE_LIMIT_MAX: '0' });
      try {
        const admin = bearer(t.token(['registry:write']));
        await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') });
        await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('tell-joke') });
        const started = Date.now();
        const res = await t.app.inject({
          method: 'POST',
          url: '/tools/tell-joke/invoke',
          headers: bearer(t.token([])),
          payload: { topic: 'x' },
        });
        expect(res.statusCode, res.body).toBe(503);
        expect(res.headers['retry-after']).toBeDefined();
        expect(Date.now() - started).toBeLessThan(3000);
        const ready = (await t.app.inject({ method: 'GET', url: '/readyz' })).json();
        expect(ready.checks.bridge).toBe('PULSAR_WS_URL' in settings ? 'disconnected' : 'not-configured');
      } finally {
        await t.close();
      }
    }
  });
});
