/**
 * The bridge's contract over a Pulsar WebSocket API, run against the in-process fake (always)
 * and against a real broker (test/bus/broker.test.ts), house style 7. Tool services here are
 * built with the package's own toolkit; the Python reference service has its own interop test.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { topicPath } from '../../src/pulsar/wire.js';
import { runToolService, type RunningToolService, type ToolHandler } from '../../src/toolkit/tool-service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

export interface BusEnvironment {
  wsUrl: string;
}

/** The toolkit logs its state changes to stderr by default; these tests need none of them. */
const QUIET = { info: () => undefined, warn: () => undefined, error: () => undefined };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A raw subscriber on a topic with its own subscription: sees every message published there. */
async function spy(
  wsUrl: string,
  topic: string,
): Promise<{ messages: { body: Record<string, unknown>; properties: Record<string, string> }[]; close(): void }> {
  const ws = new WebSocket(`${wsUrl}/ws/v2/consumer/${topicPath(topic)}/spy-${randomUUID()}?subscriptionType=Exclusive`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const messages: { body: Record<string, unknown>; properties: Record<string, string> }[] = [];
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { messageId: string; payload: string; properties: Record<string, string> };
    ws.send(JSON.stringify({ messageId: frame.messageId }));
    messages.push({ body: JSON.parse(Buffer.from(frame.payload, 'base64').toString('utf8')), properties: frame.properties });
  });
  return { messages, close: () => ws.close() };
}

/** Parses an SSE body into its events. */
function events(body: string): { event: string; data: Record<string, unknown> }[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1] ?? '';
      const data = JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>;
      return { event, data };
    });
}

export function defineBridgeContract(label: string, environment: () => BusEnvironment | undefined): void {
  describe(`call bridge over ${label}`, () => {
    let t: TestApp;
    let admin: Record<string, string>;
    let env: BusEnvironment;
    const services: RunningToolService[] = [];

    const startService = async (topic: string, handler: ToolHandler) => {
      const service = runToolService({ url: env.wsUrl, id: topic, topic, handler, logger: QUIET });
      services.push(service);
      await service.ready;
      return service;
    };

    const registerService = async (
      topic: string,
      tool: Record<string, unknown>,
      configParams: unknown[] = [{ name: 'style', required: false }],
    ) => {
      const service = await t.app.inject({
        method: 'PUT',
        url: `/tool-services/${topic}`,
        headers: admin,
        payload: { id: topic, topic, 'config-params': configParams },
      });
      expect(service.statusCode, service.body).toBe(201);
      const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: { ...tool, service: topic } });
      expect(res.statusCode, res.body).toBe(201);
    };

    const invoke = (name: string, payload: unknown, headers: Record<string, string> = {}) =>
      t.app.inject({
        method: 'POST',
        url: `/tools/${name}/invoke`,
        headers: { 'content-type': 'application/json', ...headers },
        payload: JSON.stringify(payload),
      });

    beforeAll(async () => {
      const found = environment();
      if (!found) throw new Error('no bus environment');
      env = found;
      t = await createTestApp({ PULSAR_WS_URL: env.wsUrl, RATE_LIMIT_MAX: '0', TOOL_CALL_TIMEOUT_MS: '10000' });
      admin = bearer(t.token(['registry:write']));
    });
    afterEach(async () => {
      await Promise.all(services.splice(0).map((s) => s.close()));
    });
    afterAll(async () => {
      await t?.close();
    });

    it('carries tell-joke on the reference wire and returns the observation', async () => {
      const topic = `joke-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: `tell-joke-${topic}` });
      await startService(topic, (user, config, args) => `Hey ${user}! Here's a ${String(config['style'])} about ${String(args['topic'])}`);
      const requests = await spy(env.wsUrl, `non-persistent://tg/request/${topic}`);
      try {
        const res = await invoke(`tell-joke-${topic}`, { topic: 'programming' }, bearer(t.token([], { sub: 'alice' })));
        expect(res.statusCode, res.body).toBe(200);
        const body = res.json();
        expect(body).toMatchObject({ tool: `tell-joke-${topic}`, result: "Hey alice! Here's a pun about programming" });
        expect(body.id).toMatch(UUID);
        expect(typeof body.durationMs).toBe('number');
        const request = await vi.waitUntil(() => requests.messages[0], { timeout: 10_000, interval: 20 });
        // The reference test vector's structure: config and arguments as JSON text, id property.
        expect(Object.keys(request.body).sort()).toEqual(['arguments', 'config', 'user']);
        expect(typeof request.body['config']).toBe('string');
        expect(typeof request.body['arguments']).toBe('string');
        expect(JSON.parse(request.body['config'] as string)).toEqual({ style: 'pun' });
        expect(JSON.parse(request.body['arguments'] as string)).toEqual({ topic: 'programming' });
        expect(request.body['user']).toBe('alice');
        expect(request.properties).toEqual({ id: body.id });
      } finally {
        requests.close();
      }
    });

    it('streams three chunks whole as JSON, and as three chunk events and a result with SSE', async () => {
      const topic = `stream-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic });
      await startService(topic, async function* () {
        yield 'one ';
        await new Promise((r) => setTimeout(r, 20));
        yield 'two ';
        yield 'three';
      });
      const token = bearer(t.token([]));
      const json = await invoke(topic, { topic: 'x' }, token);
      expect(json.statusCode, json.body).toBe(200);
      expect(json.json().result).toBe('one two three');
      const streamed = await invoke(topic, { topic: 'x' }, { ...token, accept: 'text/event-stream' });
      expect(streamed.statusCode).toBe(200);
      expect(streamed.headers['content-type']).toContain('text/event-stream');
      const list = events(streamed.body);
      expect(list.map((e) => e.event)).toEqual(['chunk', 'chunk', 'chunk', 'result']);
      expect(list.slice(0, 3).map((e) => e.data['text'])).toEqual(['one ', 'two ', 'three']);
      expect(list[3]?.data['result']).toBe('one two three');
    });

    it('ends a call with 502 and the service error type when the service fails mid-stream', async () => {
      const topic = `fail-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic });
      const service = runToolService({
        url: env.wsUrl,
        id: topic,
        topic,
        errorType: 'joke-error',
        logger: QUIET,
        handler: async function* () {
          yield 'partial ';
          throw new Error('ran out of jokes');
        },
      });
      services.push(service);
      await service.ready;
      const res = await invoke(topic, { topic: 'x' }, bearer(t.token([])));
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json()).toMatchObject({ code: 'TR_ERR_TOOL_SERVICE', serviceError: { type: 'joke-error', message: 'ran out of jokes' } });
      const streamed = await invoke(topic, { topic: 'x' }, { ...bearer(t.token([])), accept: 'text/event-stream' });
      const list = events(streamed.body);
      expect(list.map((e) => e.event)).toEqual(expect.arrayContaining(['chunk', 'error']));
      expect(list.at(-1)?.data).toMatchObject({ status: 502, serviceError: { type: 'joke-error' } });
    });

    it("answers 504 after the tool's timeoutMs when no service listens, and stays healthy", async () => {
      const topic = `silent-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic, timeoutMs: 300 });
      const started = Date.now();
      const res = await invoke(topic, { topic: 'x' }, bearer(t.token([])));
      expect(res.statusCode, res.body).toBe(504);
      expect(res.json().code).toBe('TR_ERR_TIMEOUT');
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
      expect(Date.now() - started).toBeLessThan(5000);
      expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json().checks).toEqual({ database: 'ok', bridge: 'connected' });
    });

    it('keeps 200 concurrent calls over two services apart', async () => {
      const a = `multi-a-${randomUUID().slice(0, 8)}`;
      const b = `multi-b-${randomUUID().slice(0, 8)}`;
      for (const topic of [a, b]) {
        // `n` is an argument too: calls are checked against the input schema (issue 12).
        const args = [
          ...(seed('tell-joke')['arguments'] as unknown[]),
          { name: 'n', type: 'integer', description: 'The call number', required: false },
        ];
        await registerService(topic, { ...seed('tell-joke'), name: topic, arguments: args });
        await startService(topic, async (_user, _config, args) => {
          await new Promise((r) => setTimeout(r, Math.random() * 30));
          return `${topic}:${String(args['n'])}`;
        });
      }
      // Four agents, 50 calls each: one caller's share of the in-flight calls is 100 by default.
      const tokens = Array.from({ length: 4 }, (_, i) => bearer(t.token([], { sub: `agent-${i}` })));
      const calls = Array.from({ length: 200 }, (_, n) => ({ tool: n % 2 === 0 ? a : b, n }));
      const results = await Promise.all(calls.map(({ tool, n }) => invoke(tool, { topic: 'x', n }, tokens[n % 4])));
      results.forEach((res, i) => {
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().result).toBe(`${calls[i]?.tool}:${calls[i]?.n}`);
      });
      expect(new Set(results.map((r) => r.json().id)).size).toBe(200);
    });

    it('checks scopes at call time: 401 anonymous, 403 without the scope, 200 with it', async () => {
      const topic = `scoped-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic, scopes: ['jokes:tell'] });
      await startService(topic, () => 'ok');
      const anonymous = await invoke(topic, { topic: 'x' });
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.headers['www-authenticate']).toContain('scope="jokes:tell"');
      const wrong = await invoke(topic, { topic: 'x' }, bearer(t.token(['calculator:use'])));
      expect(wrong.statusCode).toBe(403);
      expect(wrong.headers['www-authenticate']).toContain('error="insufficient_scope"');
      expect(wrong.headers['www-authenticate']).toContain('scope="jokes:tell"');
      const right = await invoke(topic, { topic: 'x' }, bearer(t.token(['jokes:tell'])));
      expect(right.statusCode, right.body).toBe(200);
    });

    it('shows calls by two agents in /stats with latency percentiles, also after a restart', async () => {
      const topic = `stats-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic });
      await startService(topic, () => 'ok');
      for (const [agent, times] of [
        ['planner', 3],
        ['hacker', 2],
      ] as const) {
        for (let i = 0; i < times; i++) {
          const res = await invoke(topic, { topic: 'x' }, bearer(t.token([], { sub: agent })));
          expect(res.statusCode, res.body).toBe(200);
        }
      }
      expect((await invoke(topic, { topic: 'x' })).statusCode).toBe(401);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON body walked by path
      const check = (stats: Record<string, any>) => {
        // The refused anonymous call is an error, not a use of the tool.
        expect(stats['usage_by_tool'][topic]).toBe(5);
        expect(stats['usage_by_agent']['planner'][topic]).toBe(3);
        expect(stats['usage_by_agent']['hacker'][topic]).toBe(2);
        expect(Object.keys(stats['usage_by_agent'])).not.toContain('(anonymous)');
        expect(stats['errors_by_class']['denied']).toBeGreaterThanOrEqual(1);
        const latency = stats['latency_ms_by_tool'][topic];
        expect(latency.samples).toBe(5);
        expect(latency.p50).toBeGreaterThanOrEqual(0);
        expect(latency.p99).toBeGreaterThanOrEqual(latency.p50);
        expect(stats['total_tool_calls']).toBeGreaterThanOrEqual(5);
        expect(stats['most_used_tool']).not.toBeNull();
      };
      // Per-agent figures name token subjects: operators only (issue 9).
      const operator = bearer(t.token(['registry:write']));
      expect((await t.app.inject({ method: 'GET', url: '/stats' })).json()['usage_by_agent']).toEqual({});
      check((await t.app.inject({ method: 'GET', url: '/stats', headers: operator })).json());
      const app = await t.restart();
      check((await app.inject({ method: 'GET', url: '/stats', headers: operator })).json());
    });

    it('answers 413 for a call too large for one bus message, before sending it', async () => {
      const topic = `big-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic });
      const requests = await spy(env.wsUrl, `non-persistent://tg/request/${topic}`);
      try {
        // 900 KB of arguments fit the 1 MiB body limit but not a 1 MiB frame once base64-encoded.
        const res = await invoke(topic, { topic: 'x'.repeat(900 * 1024) }, bearer(t.token([])));
        expect(res.statusCode, res.body.slice(0, 300)).toBe(413);
        expect(res.json().code).toBe('TR_ERR_REQUEST_TOO_LARGE');
        await new Promise((r) => setTimeout(r, 200));
        expect(requests.messages).toHaveLength(0);
      } finally {
        requests.close();
      }
    });

    it('refuses arguments that are not an object, and unknown or deleted tools', async () => {
      const topic = `args-${randomUUID().slice(0, 8)}`;
      await registerService(topic, { ...seed('tell-joke'), name: topic });
      const token = bearer(t.token([]));
      expect((await invoke(topic, [1, 2], token)).statusCode).toBe(400);
      expect((await invoke('no-such-tool', {}, token)).statusCode).toBe(404);
      await t.app.inject({ method: 'DELETE', url: `/tools/${topic}`, headers: admin });
      const gone = await invoke(topic, {}, token);
      expect(gone.statusCode).toBe(410);
      expect(gone.json().code).toBe('TR_ERR_GONE');
    });
  });
}
