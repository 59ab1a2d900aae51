/**
 * Issue 15's wire gaps, against the in-process fake of Pulsar's WebSocket API (the real broker
 * runs the same cases in test/bus/wire.broker.test.ts):
 * - message size: the limit is exact and follows the broker's frame size; 413 names it;
 * - bytes that are not UTF-8: a caller's body is refused with 400, a service's response is a 502,
 *   and the toolkit answers such a request with an error; nothing becomes U+FFFD;
 * - an error sent as a plain string keeps its text;
 * - the toolkit reconnects with backoff, logs its state, and gives up (exit status 1) only
 *   when told to.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readBrokerLimits } from '../../src/pulsar/broker-limits.js';
import { effectiveLimits, payloadLimit } from '../../src/pulsar/limits.js';
import { publishFrame, topicPath } from '../../src/pulsar/wire.js';
import { runToolService, type ToolServiceLogger } from '../../src/toolkit/tool-service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';
import { seed } from '../helpers/fixtures.js';
import { REPO_ROOT } from '../helpers/process.js';
import { rawService, responseBytes } from './raw-service.js';

const fake = new FakePulsar();
let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  await fake.start();
  t = await createTestApp({ PULSAR_WS_URL: fake.url, RATE_LIMIT_MAX: '0', TOOL_CALL_TIMEOUT_MS: '5000' });
  admin = bearer(t.token(['registry:write']));
});
afterAll(async () => {
  await t?.close();
  await fake.stop();
});

const UUID = '3f2b8c1e-9d4a-4e2b-b6a1-0c5d7e9f1a23';
const quiet: ToolServiceLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A logger that keeps what it is told: level, message and facts. */
function recorder(): ToolServiceLogger & { lines: { level: string; msg: string; obj: Record<string, unknown> }[] } {
  const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, msg, obj: obj as Record<string, unknown> });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** A subscriber of its own on a topic: every message's payload bytes and properties. */
async function spy(
  wsUrl: string,
  topic: string,
): Promise<{ messages: { payload: Buffer; properties: Record<string, string> }[]; close(): void }> {
  const ws = await open(`${wsUrl}/ws/v2/consumer/${topicPath(topic)}/spy-${randomUUID()}?subscriptionType=Exclusive`);
  const messages: { payload: Buffer; properties: Record<string, string> }[] = [];
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { messageId: string; payload: string; properties: Record<string, string> };
    ws.send(JSON.stringify({ messageId: frame.messageId }));
    messages.push({ payload: Buffer.from(frame.payload, 'base64'), properties: frame.properties });
  });
  return { messages, close: () => ws.close() };
}

/** Registers service `topic` and tool `topic` on it (tell-joke's shape, `style` config value). */
async function register(app: TestApp, topic: string, headers = admin): Promise<void> {
  const service = await app.app.inject({
    method: 'PUT',
    url: `/tool-services/${topic}`,
    headers,
    payload: { id: topic, topic, 'config-params': [{ name: 'style', required: false }] },
  });
  expect(service.statusCode, service.body).toBe(201);
  const tool = await app.app.inject({
    method: 'POST',
    url: '/tools/register',
    headers,
    payload: { ...seed('tell-joke'), name: topic, service: topic },
  });
  expect(tool.statusCode, tool.body).toBe(201);
}

const invoke = (app: TestApp, name: string, payload: string | Buffer | object, headers: Record<string, string> = {}) =>
  app.app.inject({
    method: 'POST',
    url: `/tools/${name}/invoke`,
    headers: { 'content-type': 'application/json', ...bearer(app.token([])), ...headers },
    payload: typeof payload === 'object' && !Buffer.isBuffer(payload) ? JSON.stringify(payload) : payload,
  });

/** The bytes of the message the bridge publishes for tell-joke called with `{topic}` by test-agent. */
const messageBytes = (topic: string) =>
  Buffer.byteLength(JSON.stringify({ user: 'test-agent', config: JSON.stringify({ style: 'pun' }), arguments: JSON.stringify({ topic }) }));

describe('message size', () => {
  it('payloadLimit is exact: a frame carrying the limit fits the frame size, one byte more does not', () => {
    for (const frameBytes of [16 * 1024, 1024 * 1024, 1024 * 1024 + 1, 1024 * 1024 + 2, 8 * 1024 * 1024]) {
      const variants: Record<string, string>[] = [
        { id: UUID },
        { id: UUID, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      ];
      for (const properties of variants) {
        for (const context of ['1', '1234567']) {
          const limit = payloadLimit(effectiveLimits(frameBytes, undefined), properties, context);
          expect(limit.boundBy).toBe('frame');
          expect(Buffer.byteLength(publishFrame('a'.repeat(limit.bytes), properties, context))).toBeLessThanOrEqual(frameBytes);
          expect(Buffer.byteLength(publishFrame('a'.repeat(limit.bytes + 1), properties, context))).toBeGreaterThan(frameBytes);
          // Bytes, not characters: two-byte characters carry half as many.
          expect(Buffer.byteLength(publishFrame('é'.repeat(Math.floor(limit.bytes / 2)), properties, context))).toBeLessThanOrEqual(
            frameBytes,
          );
        }
      }
    }
    // About 786 KB at Pulsar's default 1 MiB frame, as issue 15 measured.
    expect(payloadLimit(effectiveLimits(1024 * 1024, undefined), { id: UUID }, '1')).toEqual({ bytes: 786_366, boundBy: 'frame' });
    // The broker's maxMessageSize bounds it too, less room for Pulsar's own message header.
    expect(
      payloadLimit(
        effectiveLimits(16 * 1024 * 1024, { maxTextFrameBytes: 8 * 1024 * 1024, maxMessageBytes: 5 * 1024 * 1024 }),
        { id: UUID },
        '1',
      ),
    ).toEqual({
      bytes: 5 * 1024 * 1024 - 1024,
      boundBy: 'message',
    });
  });

  it('carries a call of exactly the limit through a broker with that frame size, and answers one byte more with a 413 naming the limit', async () => {
    const frameBytes = 64 * 1024;
    const broker = new FakePulsar({ maxTextFrameBytes: frameBytes });
    await broker.start();
    const app = await createTestApp({ PULSAR_WS_URL: broker.url, RATE_LIMIT_MAX: '0', PULSAR_WS_MAX_FRAME_BYTES: String(frameBytes) });
    const topic = `exact-${randomUUID().slice(0, 8)}`;
    const service = runToolService({
      url: broker.url,
      id: topic,
      topic,
      logger: quiet,
      handler: (_u, _c, args) => `${String(args['topic']).length}`,
    });
    try {
      await service.ready;
      await register(app, topic, bearer(app.token(['registry:write'])));
      const limit = payloadLimit(effectiveLimits(frameBytes, undefined), { id: UUID }, '1').bytes;
      const fits = 'x'.repeat(limit - messageBytes(''));
      expect(messageBytes(fits)).toBe(limit);

      const over = await invoke(app, topic, { topic: `${fits}x` });
      expect(over.statusCode, over.body.slice(0, 300)).toBe(413);
      expect(over.json()).toMatchObject({
        code: 'TR_ERR_REQUEST_TOO_LARGE',
        detail: `the call is ${limit + 1} bytes of JSON, more than the ${limit} bytes one message on the bus carries (base64 in one WebSocket frame of at most ${frameBytes} bytes, PULSAR_WS_MAX_FRAME_BYTES)`,
      });

      const exact = await invoke(app, topic, { topic: fits });
      expect(exact.statusCode, exact.body.slice(0, 300)).toBe(200);
      expect(exact.json().result).toBe(String(fits.length));
      // The frame the broker parsed was the largest it takes: the limit is exact, not a guess.
      const sent = broker.published.filter((m) => m.topic === `non-persistent://tg/request/${topic}`);
      expect(sent).toHaveLength(1);
      expect(Buffer.from(sent[0]?.payload ?? '', 'base64').length).toBe(limit);
    } finally {
      await service.close();
      await app.close();
      await broker.stop();
    }
  });

  it('follows a broker whose webSocketMaxTextFrameSize is below PULSAR_WS_MAX_FRAME_BYTES, and says so at startup', async () => {
    const broker = new FakePulsar({ maxTextFrameBytes: 32 * 1024 });
    await broker.start();
    const app = await createTestApp({ PULSAR_WS_URL: broker.url, RATE_LIMIT_MAX: '0' }, { keepLogs: true });
    try {
      const topic = `lower-${randomUUID().slice(0, 8)}`;
      await register(app, topic, bearer(app.token(['registry:write'])));
      const limit = payloadLimit(effectiveLimits(32 * 1024, undefined), { id: UUID }, '1').bytes;
      const res = await invoke(app, topic, { topic: 'x'.repeat(30_000) });
      expect(res.statusCode).toBe(413);
      expect(res.json().detail).toBe(
        `the call is ${messageBytes('x'.repeat(30_000))} bytes of JSON, more than the ${limit} bytes one message on the bus carries (base64 in one WebSocket frame of at most 32768 bytes, the broker's webSocketMaxTextFrameSize)`,
      );
      const warned = app.logs
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .find((line) => line.msg.includes('webSocketMaxTextFrameSize (32768) is below PULSAR_WS_MAX_FRAME_BYTES (1048576)'));
      expect(warned?.level).toBe(40);
      expect(warned?.msg).toContain(`message-bus calls up to ${limit} bytes of JSON`);
    } finally {
      await app.close();
      await broker.stop();
    }
  });

  it('logs that the broker configuration cannot be read and trusts the setting', async () => {
    const app = await createTestApp({ PULSAR_WS_URL: fake.url, RATE_LIMIT_MAX: '0' }, { keepLogs: true });
    try {
      const topic = `unread-${randomUUID().slice(0, 8)}`;
      await register(app, topic, bearer(app.token(['registry:write'])));
      // The first call waits for the check; 900 KB is past the 1 MiB frame's 786 KB.
      const res = await invoke(app, topic, { topic: 'x'.repeat(900 * 1024) });
      expect(res.statusCode).toBe(413);
      expect(res.json().detail).toContain(
        'more than the 786366 bytes one message on the bus carries (base64 in one WebSocket frame of at most 1048576 bytes, PULSAR_WS_MAX_FRAME_BYTES)',
      );
      const line = app.logs
        .map((l) => JSON.parse(l) as { level: number; msg: string; reason?: string })
        .find((l) => l.msg.startsWith("cannot read the broker's webSocketMaxTextFrameSize"));
      expect(line).toMatchObject({ level: 40, reason: expect.stringContaining('HTTP 404') });
      expect(line?.msg).toContain('trusting PULSAR_WS_MAX_FRAME_BYTES=1048576: message-bus calls up to 786366 bytes of JSON');
    } finally {
      await app.close();
    }
  });

  it('readBrokerLimits says why it cannot read the configuration', async () => {
    let answer: (res: ServerResponse) => void = (res) => res.writeHead(403).end();
    const server: Server = createServer((_req, res) => answer(res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      await expect(readBrokerLimits(url, 'a-token', 2000)).rejects.toThrow('answered HTTP 403 (the endpoint needs a superuser token)');
      answer = (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"maxMessageSize":"5242880"}');
      await expect(readBrokerLimits(url, undefined, 2000)).rejects.toThrow('has no webSocketMaxTextFrameSize');
      answer = (res) =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end('{"webSocketMaxTextFrameSize":"2097152","maxMessageSize":"5242880"}');
      await expect(readBrokerLimits(url, undefined, 2000)).resolves.toEqual({ maxTextFrameBytes: 2_097_152, maxMessageBytes: 5_242_880 });
      answer = () => undefined; // never answers
      await expect(readBrokerLimits(url, undefined, 200)).rejects.toThrow('no answer from');
      await expect(readBrokerLimits('ws://127.0.0.1:1', undefined, 2000)).rejects.toThrow('cannot reach 127.0.0.1:1');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('the toolkit answers a response too large for one frame with a response-too-large error', async () => {
    const topic = `bigresp-${randomUUID().slice(0, 8)}`;
    const service = runToolService({
      url: fake.url,
      id: topic,
      topic,
      logger: quiet,
      maxFrameBytes: 16 * 1024,
      handler: () => 'y'.repeat(20_000),
    });
    try {
      await service.ready;
      await register(t, topic);
      const res = await invoke(t, topic, { topic: 'x' });
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json().serviceError).toMatchObject({
        type: 'response-too-large',
        message: expect.stringMatching(/^the message is \d+ bytes of JSON, more than the \d+ one message on the bus carries/),
      });
    } finally {
      await service.close();
    }
  });
});

describe('bytes that are not UTF-8', () => {
  const latin1Body = Buffer.concat([Buffer.from('{"topic":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]);

  it('refuses an invoke body that is not UTF-8 with a 400 naming the byte, and sends nothing', async () => {
    const topic = `latin1-${randomUUID().slice(0, 8)}`;
    await register(t, topic);
    const before = fake.published.length;
    const res = await invoke(t, topic, latin1Body);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      code: 'TR_ERR_INVALID_JSON',
      detail: 'the request body is not valid UTF-8 (at byte offset 13); JSON text must be UTF-8',
    });
    expect(fake.published.length).toBe(before);
  });

  it.each([
    ['a lone continuation byte', Buffer.from([0x80]), 10],
    ['an overlong slash', Buffer.from([0xc0, 0xaf]), 10],
    ['a UTF-16 surrogate', Buffer.from([0xed, 0xa0, 0x80]), 10],
    ['a code point past U+10FFFF', Buffer.from([0xf4, 0x90, 0x80, 0x80]), 10],
  ])('refuses %s on every JSON route: register, and the sliced import', async (_label, bad, offset) => {
    const register = Buffer.concat([Buffer.from('{"topic":"'), bad, Buffer.from('"}')]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: register,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toBe(`the request body is not valid UTF-8 (at byte offset ${offset}); JSON text must be UTF-8`);
    // An import is parsed in slices; the offset is still the body's.
    const tool = JSON.stringify({ ...seed('calculator'), name: `u8-${randomUUID().slice(0, 8)}`, description: '@@' });
    const body = responseBytes(`{"tool-services":[],"tools":[${tool}]}`, bad);
    const imported = await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: body,
    });
    expect(imported.statusCode).toBe(400);
    expect(imported.json().detail).toBe(
      `the request body is not valid UTF-8 (at byte offset ${body.indexOf(bad)}); JSON text must be UTF-8`,
    );
  });

  it('names a character cut off at the end of the body', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: Buffer.from([0x7b, 0x7d, 0xe2, 0x82]),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toBe(
      'the request body is not valid UTF-8 (a character cut off at the end, at byte offset 2); JSON text must be UTF-8',
    );
  });

  it('carries valid UTF-8 through unchanged, both ways', async () => {
    const topic = `utf8-${randomUUID().slice(0, 8)}`;
    const text = 'héllo ✓ 😀 \u00a0 ünïcödé';
    const service = runToolService({
      url: fake.url,
      id: topic,
      topic,
      logger: quiet,
      handler: (_u, _c, args) => `you said: ${String(args['topic'])}`,
    });
    try {
      await service.ready;
      await register(t, topic);
      const res = await invoke(t, topic, Buffer.from(JSON.stringify({ topic: text })));
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().result).toBe(`you said: ${text}`);
    } finally {
      await service.close();
    }
  });

  it('answers 502 when a service sends a response that is not UTF-8, instead of passing U+FFFD on', async () => {
    const topic = `badresp-${randomUUID().slice(0, 8)}`;
    const service = await rawService(fake.url, topic, () =>
      responseBytes('{"error": null, "response": "caf@@", "end_of_stream": true}', Buffer.from([0xe9])),
    );
    try {
      await register(t, topic);
      const res = await invoke(t, topic, { topic: 'x' });
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json()).toMatchObject({
        code: 'TR_ERR_TOOL_SERVICE',
        detail: `${topic} failed: the tool service sent a response that is not valid UTF-8`,
        serviceError: { type: 'invalid-response', message: 'the tool service sent a response that is not valid UTF-8' },
      });
      // Asked for a stream, the same: the error comes before any chunk, so it is the answer.
      const streamed = await invoke(t, topic, { topic: 'x' }, { accept: 'text/event-stream' });
      expect(streamed.statusCode).toBe(502);
      expect(streamed.json().serviceError.type).toBe('invalid-response');
      expect(streamed.body).not.toContain('\ufffd');
    } finally {
      service.close();
    }
  });

  it('the toolkit answers a request that is not UTF-8 with an invalid-request error', async () => {
    const topic = `badreq-${randomUUID().slice(0, 8)}`;
    const handled: unknown[] = [];
    const service = runToolService({
      url: fake.url,
      id: topic,
      topic,
      logger: quiet,
      handler: (_u, _c, args) => (handled.push(args), 'no'),
    });
    const responses = await spy(fake.url, `non-persistent://tg/response/${topic}`);
    const producer = await open(`${fake.url}/ws/v2/producer/${topicPath(`non-persistent://tg/request/${topic}`)}`);
    try {
      await service.ready;
      const payload = responseBytes('{"config": "{}", "arguments": "{\\"topic\\": \\"caf@@\\"}"}', Buffer.from([0xe9])).toString('base64');
      producer.send(JSON.stringify({ payload, properties: { id: 'req-1' }, context: '1' }));
      const answer = await vi.waitUntil(() => responses.messages[0], { timeout: 10_000, interval: 20 });
      expect(answer.properties).toEqual({ id: 'req-1' });
      expect(JSON.parse(answer.payload.toString('utf8'))).toEqual({
        error: { type: 'invalid-request', message: 'the request is not valid UTF-8' },
        response: '',
        end_of_stream: true,
      });
      expect(handled).toEqual([]);
    } finally {
      producer.close();
      responses.close();
      await service.close();
    }
  });
});

describe('an error sent as a plain string', () => {
  it.each([
    ['a plain string', '"the database is down"', { type: 'tool-service-error', message: 'the database is down' }],
    ['the reference shape', '{"type": "quota", "message": "over quota"}', { type: 'quota', message: 'over quota' }],
    ['an object without a type', '{"message": "no type given"}', { type: 'tool-service-error', message: 'no type given' }],
    ['an empty object (still an error)', '{}', { type: 'tool-service-error', message: '' }],
    ['a number', '42', { type: 'tool-service-error', message: '42' }],
    ['a list', '["a", "b"]', { type: 'tool-service-error', message: '["a","b"]' }],
  ])('keeps the text of %s as the service error', async (_label, error, serviceError) => {
    const topic = `strerr-${randomUUID().slice(0, 8)}`;
    const service = await rawService(fake.url, topic, () => Buffer.from(`{"error": ${error}, "response": "", "end_of_stream": true}`));
    try {
      await register(t, topic);
      const res = await invoke(t, topic, { topic: 'x' });
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json()).toMatchObject({ code: 'TR_ERR_TOOL_SERVICE', detail: `${topic} failed: ${serviceError.message}`, serviceError });
    } finally {
      service.close();
    }
  });

  it('answers 502 for a response that is JSON but not an object (it used to throw in the socket handler)', async () => {
    const topic = `nullresp-${randomUUID().slice(0, 8)}`;
    const service = await rawService(fake.url, topic, () => Buffer.from('null'));
    try {
      await register(t, topic);
      const res = await invoke(t, topic, { topic: 'x' });
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json().serviceError).toEqual({
        type: 'invalid-response',
        message: 'the tool service sent a response that is not a JSON object',
      });
    } finally {
      service.close();
    }
  });
});

describe('the toolkit stays up when the broker goes away', () => {
  it('reconnects after every connection drops, logs each state, and answers again', async () => {
    const topic = `survive-${randomUUID().slice(0, 8)}`;
    const logs = recorder();
    const service = runToolService({
      url: fake.url,
      id: topic,
      topic,
      logger: logs,
      retryDelayMs: { min: 50, max: 200 },
      handler: () => 'still here',
    });
    try {
      await service.ready;
      expect(service.state).toBe('listening');
      await register(t, topic);
      expect((await invoke(t, topic, { topic: 'x' })).json().result).toBe('still here');

      fake.dropConnections();
      await vi.waitUntil(() => logs.lines.find((l) => l.msg === `listening again on non-persistent://tg/request/${topic}`), {
        timeout: 10_000,
        interval: 20,
      });
      expect(service.state).toBe('listening');
      expect(logs.lines.map((l) => [l.level, l.msg.replace(/\d+ ms/, 'N ms')])).toEqual([
        ['info', `listening on non-persistent://tg/request/${topic}`],
        ['warn', 'lost the connection to the broker; reconnecting in N ms'],
        ['info', `listening again on non-persistent://tg/request/${topic}`],
      ]);
      // The registry's own subscription reconnects too; the same service answers.
      let again = await invoke(t, topic, { topic: 'x' });
      for (let i = 0; i < 50 && again.statusCode !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        again = await invoke(t, topic, { topic: 'x' });
      }
      expect(again.statusCode, again.body).toBe(200);
      expect(again.json().result).toBe('still here');
    } finally {
      await service.close();
    }
    expect(service.state).toBe('stopped');
    await expect(service.stopped).resolves.toBeUndefined();
  });

  it('keeps retrying while the broker is down, and listens again when it is back on the same port', async () => {
    const broker = new FakePulsar();
    await broker.start();
    const port = broker.port;
    const topic = `restart-${randomUUID().slice(0, 8)}`;
    const logs = recorder();
    const service = runToolService({
      url: broker.url,
      id: topic,
      topic,
      logger: logs,
      retryDelayMs: { min: 20, max: 100 },
      handler: () => 'back',
    });
    try {
      await service.ready;
      await broker.stop();
      await vi.waitUntil(() => logs.lines.filter((l) => l.msg.startsWith('cannot reach the broker; retrying in')).length >= 3, {
        timeout: 10_000,
        interval: 20,
      });
      expect(service.state).toBe('reconnecting');
      await broker.start(port);
      await vi.waitUntil(() => service.state === 'listening', { timeout: 10_000, interval: 20 });
      const app = await createTestApp({ PULSAR_WS_URL: broker.url, RATE_LIMIT_MAX: '0' });
      try {
        await register(app, topic, bearer(app.token(['registry:write'])));
        const res = await invoke(app, topic, { topic: 'x' });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json().result).toBe('back');
      } finally {
        await app.close();
      }
      const retry = logs.lines.find((l) => l.msg.startsWith('cannot reach the broker'));
      expect(retry).toMatchObject({ level: 'warn', obj: { attempt: 1, reason: expect.stringContaining('ECONNREFUSED') } });
    } finally {
      await service.close();
      await broker.stop();
    }
  });

  it('sends a response finished while the broker was away once it is back', async () => {
    const topic = `queued-${randomUUID().slice(0, 8)}`;
    const logs = recorder();
    let release = () => undefined as void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started = false;
    const service = runToolService({
      url: fake.url,
      id: topic,
      topic,
      logger: logs,
      retryDelayMs: { min: 400, max: 400 },
      handler: async () => {
        started = true;
        await gate;
        return 'late but whole';
      },
    });
    const producer = await open(`${fake.url}/ws/v2/producer/${topicPath(`non-persistent://tg/request/${topic}`)}`);
    let responses: Awaited<ReturnType<typeof spy>> | undefined;
    try {
      await service.ready;
      producer.send(
        JSON.stringify({
          payload: Buffer.from('{"config": "{}", "arguments": "{}"}').toString('base64'),
          properties: { id: 'q-1' },
          context: '1',
        }),
      );
      await vi.waitUntil(() => started, { timeout: 10_000, interval: 20 });
      fake.dropConnections();
      await vi.waitUntil(() => service.state === 'reconnecting', { timeout: 10_000, interval: 20 });
      responses = await spy(fake.url, `non-persistent://tg/response/${topic}`);
      release();
      const answer = await vi.waitUntil(() => responses?.messages[0], { timeout: 10_000, interval: 20 });
      expect(answer.properties).toEqual({ id: 'q-1' });
      expect(JSON.parse(answer.payload.toString('utf8'))).toEqual({ error: null, response: 'late but whole', end_of_stream: true });
      expect(logs.lines.find((l) => l.msg.startsWith('listening again'))?.obj).toMatchObject({ queued: 1 });
    } finally {
      producer.close();
      responses?.close();
      await service.close();
    }
  });

  it('gives up after maxRetries failed attempts in a row: logs it, rejects ready and stopped, sets exit status 1', async () => {
    const logs = recorder();
    const exitCode = process.exitCode;
    try {
      const service = runToolService({
        url: 'ws://127.0.0.1:1',
        id: 'nobody',
        topic: 'nobody',
        logger: logs,
        maxRetries: 2,
        retryDelayMs: { min: 10, max: 20 },
        handler: () => '',
      });
      await expect(service.stopped).rejects.toThrow('the tool service nobody gave up connecting to the broker: cannot reach the broker');
      await expect(service.ready).rejects.toThrow('gave up');
      expect(service.state).toBe('stopped');
      expect(process.exitCode).toBe(1);
      expect(logs.lines.map((l) => l.level)).toEqual(['warn', 'warn', 'error']);
      expect(logs.lines[2]?.msg).toBe('gave up connecting to the broker after 3 failed attempts in a row (maxRetries 2)');
      await service.close(); // harmless after giving up
    } finally {
      process.exitCode = exitCode;
    }
  });

  it('stops retrying, cleanly, when closed or when its signal aborts', async () => {
    const exitCode = process.exitCode;
    for (const how of ['close', 'signal'] as const) {
      const logs = recorder();
      const controller = new AbortController();
      const service = runToolService({
        url: 'ws://127.0.0.1:1',
        id: 'stopme',
        topic: 'stopme',
        logger: logs,
        signal: controller.signal,
        retryDelayMs: { min: 10, max: 20 },
        handler: () => '',
      });
      await vi.waitUntil(() => logs.lines.length >= 2, { timeout: 10_000, interval: 20 });
      if (how === 'close') await service.close();
      else controller.abort();
      await expect(service.stopped).resolves.toBeUndefined();
      await expect(service.ready).rejects.toThrow('the tool service stopme was closed before it connected');
      const seen = logs.lines.length;
      await new Promise((r) => setTimeout(r, 100));
      expect(logs.lines.length, how).toBe(seen);
      expect(logs.lines.at(-1)).toMatchObject({ level: 'info', msg: 'stopped' });
      expect(process.exitCode).toBe(exitCode);
    }
  });

  it('a process running only a toolkit service exits with status 1 when it gives up, its log lines on stderr', async () => {
    const script = [
      "import { runToolService } from './src/toolkit/tool-service.ts';",
      "runToolService({ url: 'ws://127.0.0.1:1', id: 'doomed', topic: 'doomed', handler: () => '', maxRetries: 1, retryDelayMs: { min: 10, max: 10 } });",
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code, stderr).toBe(1);
    const lines = stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { level: number; name: string; msg: string });
    expect(lines.map((l) => [l.level, l.name])).toEqual([
      [40, 'tool-service doomed'],
      [50, 'tool-service doomed'],
    ]);
    expect(lines[1]?.msg).toBe('gave up connecting to the broker after 2 failed attempts in a row (maxRetries 1)');
  }, 30_000);
});
