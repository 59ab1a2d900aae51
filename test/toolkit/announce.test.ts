/**
 * The toolkit's announcements (issues 14 and 29, src/model/announcement.ts), against the
 * in-process fake of Pulsar's WebSocket API: the message format (a compact JWS over the
 * announcement, with a sequence number that counts up), when announcements go out (once the
 * service listens, every heartbeat, at once on announce(tools), again after the broker drops),
 * the goodbye on close(), the checks of the option, and that the private key never reaches a log
 * line.
 * The registry's side, over a real broker, is test/bus/announce.broker.test.ts.
 */
import { createPublicKey, randomUUID } from 'node:crypto';
import { compactVerify, decodeProtectedHeader } from 'jose';
import WebSocket from 'ws';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { topicPath } from '../../src/pulsar/wire.js';
import { ANNOUNCEMENT_TYP, AnnouncementSchema } from '../../src/model/announcement.js';
import {
  runToolService,
  type RunningToolService,
  type ToolServiceLogger,
  type ToolServiceOptions,
} from '../../src/toolkit/tool-service.js';
import { announcerKey } from '../helpers/announcer-keys.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';

/** vi.waitUntil polls every 50 ms for 1 s by default: these waits poll every 10 ms, for up to 5000 ms. */
const polling = { timeout: 5000, interval: 10 };

const fake = new FakePulsar();
beforeAll(() => fake.start());
afterAll(() => fake.stop());

/** The announcer's key pair: the toolkit signs with the private part, never logs it. */
const KEY = announcerKey('toolkit-test-1');
const SUBJECT = 'toolkit-test';
const PRIVATE_PART = String(KEY.privateJwk.d);
const signing = { subject: SUBJECT, privateKey: KEY.privateJwk };

interface Line {
  level: string;
  msg: string;
  obj: Record<string, unknown>;
}

function recorder(): ToolServiceLogger & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, msg, obj: obj as Record<string, unknown> });
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Seen {
  at: number;
  /** The JWS as published. */
  jws: string;
  /** Its payload, decoded (verified where a test says so). */
  message: Record<string, unknown>;
  properties: Record<string, string>;
}

/** A subscriber of its own on the announcement topic; `onMessage` runs as each arrives. */
async function spy(topic: string, onMessage: () => void = () => undefined): Promise<{ seen: Seen[]; close(): void }> {
  const ws = await new Promise<WebSocket>((resolve, reject) => {
    const socket = new WebSocket(`${fake.url}/ws/v2/consumer/${topicPath(topic)}/spy-${randomUUID()}?subscriptionType=Exclusive`);
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
  });
  const seen: Seen[] = [];
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { messageId: string; payload: string; properties: Record<string, string> };
    ws.send(JSON.stringify({ messageId: frame.messageId }));
    const jws = Buffer.from(frame.payload, 'base64').toString('utf8');
    seen.push({
      at: Date.now(),
      jws,
      message: JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>,
      properties: frame.properties,
    });
    onMessage();
  });
  return { seen, close: () => ws.close() };
}

const running: RunningToolService[] = [];
const spies: { close(): void }[] = [];
const loggers: ReturnType<typeof recorder>[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.close()));
  for (const s of spies.splice(0)) s.close();
  // Whatever a test did, the private key never reached a log line.
  for (const log of loggers.splice(0)) expect(JSON.stringify(log.lines)).not.toContain(PRIVATE_PART);
});

function names() {
  const suffix = randomUUID().slice(0, 8);
  return { id: `announcer-${suffix}`, topic: `announcer-${suffix}`, announceTopic: `non-persistent://tg/registry/announce-${suffix}` };
}

function tool(name: string, service: string): Record<string, unknown> {
  return {
    type: 'tool-service',
    name,
    description: `The ${name} tool`,
    service,
    arguments: [{ name: 'topic', type: 'string', description: 'What about' }],
  };
}

function start(options: Partial<ToolServiceOptions> & { id: string; topic: string }): {
  service: RunningToolService;
  log: ReturnType<typeof recorder>;
} {
  const log = recorder();
  loggers.push(log);
  const service = runToolService({ url: fake.url, logger: log, retryDelayMs: { min: 20, max: 100 }, handler: () => 'ok', ...options });
  running.push(service);
  return { service, log };
}

describe('a tool service that announces itself', () => {
  it('publishes the whole announcement once its subscription is ready, then every heartbeat', async () => {
    const { id, topic, announceTopic } = names();
    let state: string | undefined;
    const watcher = await spy(announceTopic, () => void (state ??= service.state));
    spies.push(watcher);
    const serviceDescriptor = { id, topic, 'config-params': [{ name: 'style', required: false }] };
    const tools = [tool(`${id}-a`, id), tool(`${id}-b`, id)];
    const { service, log } = start({
      id,
      topic,
      announce: { topic: announceTopic, ...signing, service: serviceDescriptor, tools, heartbeatIntervalS: 1 },
    });
    await service.ready;
    const first = await vi.waitUntil(() => watcher.seen[0], polling);
    // Published after the subscription was ready, at once (not a heartbeat later).
    expect(state).toBe('listening');
    expect(first.message).toEqual({
      v: 2,
      sub: SUBJECT,
      instance: expect.stringMatching(/^[0-9a-f-]{36}$/),
      seq: 1,
      iat: expect.any(Number),
      service: serviceDescriptor,
      tools,
      heartbeatIntervalS: 1,
      goodbye: false,
    });
    expect(AnnouncementSchema.safeParse(first.message).success).toBe(true);
    expect(Math.abs((first.message['iat'] as number) - Date.now() / 1000)).toBeLessThan(5);
    // Signed with the announcer's key, over exactly this payload, and said to be an announcement.
    const verified = await compactVerify(first.jws, createPublicKey({ key: KEY.publicJwk, format: 'jwk' }), { algorithms: ['EdDSA'] });
    expect(JSON.parse(new TextDecoder().decode(verified.payload))).toEqual(first.message);
    expect(decodeProtectedHeader(first.jws)).toEqual({ alg: 'EdDSA', kid: KEY.kid, typ: ANNOUNCEMENT_TYP });
    // Heartbeats: the same whole message every second.
    await vi.waitUntil(() => watcher.seen.length >= 3, { ...polling, timeout: 4000 });
    const gaps = watcher.seen.slice(1, 3).map((s, i) => s.at - (watcher.seen[i] as Seen).at);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThan(700);
      expect(gap).toBeLessThan(1500);
    }
    // The same whole announcement, each with the next sequence number of this process.
    watcher.seen.forEach((s, i) => expect(s.message).toEqual({ ...first.message, seq: i + 1, iat: s.message['iat'] }));
    // Logged once (not every heartbeat), without the token.
    const announced = log.lines.filter((l) => l.msg.startsWith('announced the service'));
    expect(announced).toHaveLength(1);
    expect(announced[0]?.obj).toMatchObject({ topic: announceTopic, service: id, tools: 2, heartbeatIntervalS: 1 });
  });

  it('publishes changed tools at once with announce(tools), and keeps them in later heartbeats', async () => {
    const { id, topic, announceTopic } = names();
    const watcher = await spy(announceTopic);
    spies.push(watcher);
    const { service } = start({
      id,
      topic,
      announce: { topic: announceTopic, ...signing, service: { id, topic }, tools: [tool(`${id}-a`, id)], heartbeatIntervalS: 60 },
    });
    await service.ready;
    await vi.waitUntil(() => watcher.seen[0], polling);
    const changed = [tool(`${id}-a`, id), tool(`${id}-c`, id)];
    const started = Date.now();
    expect(await service.announce(changed)).toBe(true);
    const second = await vi.waitUntil(() => watcher.seen[1], polling);
    expect(second.at - started).toBeLessThan(1000);
    expect(second.message).toMatchObject({ v: 2, seq: 2, instance: watcher.seen[0]?.message['instance'], tools: changed, goodbye: false });
    expect(() => service.announce('nope' as unknown as Record<string, unknown>[])).toThrow(TypeError);
  });

  it('says goodbye on close(), before it stops, and sends nothing after', async () => {
    const { id, topic, announceTopic } = names();
    const watcher = await spy(announceTopic);
    spies.push(watcher);
    const { service, log } = start({
      id,
      topic,
      announce: { topic: announceTopic, ...signing, service: { id, topic }, tools: [tool(`${id}-a`, id)], heartbeatIntervalS: 1 },
    });
    await service.ready;
    await vi.waitUntil(() => watcher.seen[0], polling);
    await service.close();
    const last = await vi.waitUntil(() => watcher.seen.find((s) => s.message['goodbye'] === true), polling);
    expect(last.message).toEqual({
      v: 2,
      sub: SUBJECT,
      instance: watcher.seen[0]?.message['instance'],
      seq: watcher.seen.length,
      iat: expect.any(Number),
      service: { id, topic },
      tools: [tool(`${id}-a`, id)],
      heartbeatIntervalS: 1,
      goodbye: true,
    });
    expect(service.state).toBe('stopped');
    const count = watcher.seen.length;
    await sleep(1500);
    expect(watcher.seen.length, 'no heartbeat after the goodbye').toBe(count);
    expect(watcher.seen.at(-1)?.message['goodbye']).toBe(true);
    expect(log.lines.some((l) => l.msg.startsWith('said goodbye'))).toBe(true);
  });

  it('says goodbye when its signal aborts', async () => {
    const { id, topic, announceTopic } = names();
    const watcher = await spy(announceTopic);
    spies.push(watcher);
    const controller = new AbortController();
    const { service } = start({
      id,
      topic,
      signal: controller.signal,
      announce: { topic: announceTopic, ...signing, service: { id, topic }, tools: [], heartbeatIntervalS: 30 },
    });
    await service.ready;
    await vi.waitUntil(() => watcher.seen[0], polling);
    controller.abort();
    await service.stopped;
    await vi.waitUntil(() => watcher.seen.find((s) => s.message['goodbye'] === true), polling);
  });

  it('announces again, at once, when it is back after the broker dropped it', async () => {
    const { id, topic, announceTopic } = names();
    const { service, log } = start({
      id,
      topic,
      announce: { topic: announceTopic, ...signing, service: { id, topic }, tools: [tool(`${id}-a`, id)], heartbeatIntervalS: 60 },
    });
    await service.ready;
    const mine = () => fake.published.filter((m) => m.topic === announceTopic);
    await vi.waitUntil(() => mine().length === 1, polling);
    fake.dropConnections();
    await vi.waitUntil(() => service.state === 'reconnecting', polling);
    // Well before the 60 s heartbeat: the announcement follows the service's return.
    await vi.waitUntil(() => mine().length === 2, { ...polling, timeout: 5000 });
    expect(service.state).toBe('listening');
    const jws = Buffer.from((mine()[1] as { payload: string }).payload, 'base64').toString('utf8');
    const message = JSON.parse(Buffer.from(jws.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    // The count goes on over the reconnection: a registry takes only higher numbers.
    expect(message).toMatchObject({ v: 2, sub: SUBJECT, seq: 2, goodbye: false });
    expect(log.lines.some((l) => l.level === 'warn' && l.msg.startsWith('lost the announcement producer'))).toBe(true);
  });

  it('refuses an announce option that does not fit the message format, or a key it cannot sign with, without quoting the key', () => {
    const { id, topic, announceTopic } = names();
    const base = { topic: announceTopic, ...signing, service: { id, topic }, tools: [] };
    const { kid: _kid, ...withoutKid } = KEY.privateJwk;
    const bad: { option: Partial<Record<string, unknown>>; says: RegExp }[] = [
      { option: { heartbeatIntervalS: 0.5 }, says: /announce\.heartbeatIntervalS/ },
      { option: { heartbeatIntervalS: 7200 }, says: /announce\.heartbeatIntervalS/ },
      { option: { subject: '' }, says: /announce\.subject/ },
      { option: { subject: 'two words' }, says: /announce\.subject/ },
      { option: { topic: 'announcements' }, says: /announce\.topic/ },
      { option: { tools: 'x' as unknown as [] }, says: /announce\.tools/ },
      // The public part alone cannot sign.
      { option: { privateKey: KEY.publicJwk }, says: /announce\.privateKey: not a private key/ },
      { option: { privateKey: { kty: 'oct', k: 'c2VjcmV0', kid: 'x' } }, says: /announce\.privateKey/ },
      { option: { privateKey: withoutKid }, says: /announce\.keyId: required/ },
    ];
    for (const { option, says } of bad) {
      let thrown: unknown;
      try {
        runToolService({ url: fake.url, id, topic, handler: () => '', announce: { ...base, ...option } as ToolServiceOptions['announce'] });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(Object.keys(option))).toBeInstanceOf(TypeError);
      expect((thrown as Error).message).toMatch(says);
      expect((thrown as Error).message).not.toContain(PRIVATE_PART);
    }
    // A key without a kid of its own is fine given keyId.
    const service = runToolService({
      url: 'ws://127.0.0.1:1',
      id,
      topic,
      logger: recorder(),
      handler: () => '',
      announce: { ...base, privateKey: withoutKid, keyId: KEY.kid },
    });
    running.push(service);
    expect(service.state).toBe('connecting');
  });

  it('logs an announcement too large for one message, once, and publishes nothing', async () => {
    const { id, topic, announceTopic } = names();
    const huge = [{ ...tool(`${id}-a`, id), description: 'x'.repeat(900_000) }];
    const { service, log } = start({
      id,
      topic,
      announce: { topic: announceTopic, ...signing, service: { id, topic }, tools: huge, heartbeatIntervalS: 1 },
    });
    await service.ready;
    await sleep(1500);
    expect(fake.published.filter((m) => m.topic === announceTopic)).toEqual([]);
    const errors = log.lines.filter((l) => l.level === 'error' && l.msg.startsWith('cannot announce'));
    expect(errors).toHaveLength(1);
    // Smaller tools go out at once.
    expect(await service.announce([tool(`${id}-a`, id)])).toBe(true);
    expect(fake.published.filter((m) => m.topic === announceTopic)).toHaveLength(1);
  });

  it('warns when the announced descriptor names another request queue than the one it listens on', async () => {
    const { id, topic, announceTopic } = names();
    const { service, log } = start({
      id,
      topic,
      announce: { topic: announceTopic, ...signing, service: { id, topic: 'elsewhere' }, tools: [] },
    });
    await service.ready;
    const warning = log.lines.find((l) => l.level === 'warn' && l.msg.includes('non-persistent://tg/request/elsewhere'));
    expect(warning?.obj).toMatchObject({
      requestQueue: `non-persistent://tg/request/${topic}`,
      announced: 'non-persistent://tg/request/elsewhere',
    });
  });

  it('keeps the API of a service that does not announce: announce() throws, close() sends nothing more', async () => {
    const { id, topic } = names();
    const { service } = start({ id, topic });
    await service.ready;
    const before = fake.published.length;
    expect(() => service.announce([])).toThrow(/without the announce option/);
    await service.close();
    expect(fake.published.length).toBe(before);
  });

  it('closes without a goodbye, and without waiting, when it never reached the broker', async () => {
    const log = recorder();
    loggers.push(log);
    const service = runToolService({
      url: 'ws://127.0.0.1:1',
      id: 'nowhere',
      topic: 'nowhere',
      logger: log,
      retryDelayMs: { min: 10, max: 20 },
      handler: () => '',
      announce: {
        topic: 'non-persistent://tg/registry/announcements',
        ...signing,
        service: { id: 'nowhere', topic: 'nowhere' },
        tools: [],
      },
    });
    const started = Date.now();
    await service.close();
    expect(Date.now() - started).toBeLessThan(500);
    expect(log.lines.some((l) => l.msg.includes('goodbye'))).toBe(false);
  });
});
