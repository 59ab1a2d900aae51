/**
 * Issue 9, "One caller must not be able to starve the others", through the real HTTP server
 * (port 0 on loopback, real sockets): per-caller caps on held queries and streams, a per-address
 * share of the connections with a headroom that keeps the probes answering, timeouts for
 * header-less and idle sockets, bounded buffers for change streams that are not read, rate
 * limits on unknown paths, and change streams that end with their token.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

/** vi.waitUntil polls every 50 ms for 1 s by default: these waits poll every 10 ms, for up to 5000 ms. */
const polling = { timeout: 5000, interval: 10 };

const LOOPBACK = '127.0.0.1';

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ port: 0, host: LOOPBACK });
  return (t.app.server.address() as AddressInfo).port;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request on a connection of its own; rejects when no answer comes within `timeoutMs`. */
function get(port: number, path: string, headers: Record<string, string> = {}, timeoutMs = 5000): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: LOOPBACK, port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer to ${path} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

/** A request whose answer is not awaited (a held blocking query or stream); returns its drop. */
function hold(port: number, path: string, headers: Record<string, string> = {}): () => void {
  const req = httpRequest({ host: LOOPBACK, port, path, headers, agent: false });
  req.on('error', () => undefined);
  req.end();
  return () => req.destroy();
}

/** A raw socket that records what it receives and when it closed. */
function rawSocket(port: number): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const openedAt = Date.now();
    let data = '';
    const socket = connect(port, LOOPBACK);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', () => undefined);
    const closed = new Promise<number>((r) => socket.once('close', () => r(Date.now() - openedAt)));
    socket.once('connect', () => resolve({ socket, received: () => data, closed }));
    socket.once('error', reject);
  });
}

const tool = (name: string, scopes: string[] = []) => ({ ...seed('calculator'), name, scopes, description: `Tool ${name}` });

describe('held blocking queries and change streams are capped per caller (MAX_WAITERS_PER_CALLER)', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MAX_WAITERS_PER_CALLER: '3' });
    port = await listen(t);
  });
  afterAll(() => t.close());

  it('one address holding its share gets 503 for the next one; a token caller and the probes are unaffected', async () => {
    const index = t.app.catalog.index;
    const drops = [hold(port, `/?index=${index}&wait=60s`), hold(port, `/?index=${index}&wait=60s`), hold(port, '/changes')];
    await vi.waitUntil(() => t.app.waiters.size === 3, polling);

    for (const path of [`/?index=${index}&wait=60s`, '/changes']) {
      const refused = await get(port, path);
      expect(refused.status, path).toBe(503);
      expect(refused.headers['content-type']).toContain('application/problem+json');
      expect(refused.headers['retry-after']).toBe('5');
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'TR_ERR_UNAVAILABLE' });
    }
    expect(t.app.waiters.size).toBe(3);

    // Another caller (a token's subject) still gets a held query: answered by a write.
    const token = bearer(t.token([], { sub: 'patient-agent' }));
    const held = get(port, `/?index=${index}&wait=60s`, token);
    await vi.waitUntil(() => t.app.waiters.size === 4, polling);
    expect((await get(port, '/healthz')).status).toBe(200);
    expect((await get(port, '/readyz')).status).toBe(200);
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(t.token(['registry:write'])), payload: tool('wake-up') });
    expect((await held).status).toBe(200);

    // A slot given back is a slot to use again.
    // The write answered the address's two held queries too; its stream is left.
    expect(t.app.waiters.size).toBe(1);
    drops[2]?.();
    await vi.waitUntil(() => t.app.waiters.size === 0, polling);
    const reopened = await get(port, `/?index=${t.app.catalog.index}&wait=50ms`);
    expect(reopened.status).toBe(200);
    for (const drop of drops) drop();
    await vi.waitUntil(() => t.app.waiters.size === 0, polling);
  });
});

describe('connections: a share per client address, and a headroom where only probes answer', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MAX_CONNECTIONS_PER_ADDRESS: '5', PROBE_CONNECTIONS: '2' });
    port = await listen(t);
  });
  afterAll(() => t.close());

  it('cuts a hog off at its share while /healthz and /readyz keep answering, and serves it again once it lets go', async () => {
    // On loopback every client is 127.0.0.1: the hog is whoever holds the share.
    const hog = await Promise.all(Array.from({ length: 5 }, () => rawSocket(port)));
    await vi.waitUntil(() => t.app.connections.heldBy(LOOPBACK) === 5, polling);

    const refused = await get(port, '/');
    expect(refused.status).toBe(503);
    expect(refused.headers['content-type']).toContain('application/problem+json');
    expect(refused.headers.connection).toBe('close');
    expect(refused.headers['retry-after']).toBe('5');
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'TR_ERR_UNAVAILABLE' });
    for (const probe of ['/healthz', '/readyz']) expect((await get(port, probe)).status, probe).toBe(200);

    // The headroom is bounded too: past it a new connection is closed before a byte is read.
    const headroom = await Promise.all([rawSocket(port), rawSocket(port)]);
    await vi.waitUntil(() => t.app.connections.probeOnly === 2, polling);
    const extra = await rawSocket(port);
    await extra.closed;
    expect(extra.received()).toBe('');
    expect(t.app.connections.heldBy(LOOPBACK)).toBe(5);

    for (const { socket } of [...hog, ...headroom]) socket.destroy();
    await vi.waitUntil(() => t.app.connections.heldBy(LOOPBACK) === 0 && t.app.connections.probeOnly === 0, polling);
    expect((await get(port, '/')).status).toBe(200);
  });
});

describe('socket timeouts (HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, IDLE_TIMEOUT_MS)', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', HEADERS_TIMEOUT_MS: '300', KEEP_ALIVE_TIMEOUT_MS: '300', IDLE_TIMEOUT_MS: '500' });
    port = await listen(t);
  });
  afterAll(() => t.close());

  it('closes a connection that never sends a request, and one that never finishes its headers', async () => {
    const silent = await rawSocket(port);
    const partial = await rawSocket(port);
    partial.socket.write('GET / HTTP/1.1\r\nHost: registry\r\n');
    expect(await silent.closed).toBeLessThan(2000);
    expect(await partial.closed).toBeLessThan(2000);
    expect(partial.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes an idle keep-alive connection after its request', async () => {
    const client = await rawSocket(port);
    client.socket.write('GET /healthz HTTP/1.1\r\nHost: registry\r\nConnection: keep-alive\r\n\r\n');
    await vi.waitUntil(() => client.received().includes('"status":"ok"'), polling);
    const answeredAt = Date.now();
    await client.closed;
    expect(Date.now() - answeredAt).toBeLessThan(1500);
  });

  it('keeps a blocking query held past IDLE_TIMEOUT_MS until its own wait ends', async () => {
    const started = Date.now();
    const answer = await get(port, `/?index=${t.app.catalog.index}&wait=1500ms`);
    expect(answer.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
  });
});

describe('change streams whose client does not read (CHANGE_STREAM_BUFFER_BYTES)', () => {
  const LIMIT = 64 * 1024;
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', CHANGE_STREAM_BUFFER_BYTES: String(LIMIT) });
    port = await listen(t);
  });
  afterAll(() => t.close());

  it('keep the bytes buffered for the stream bounded, and end it', async () => {
    const serverSockets: Socket[] = [];
    const onConnection = (socket: Socket) => serverSockets.push(socket);
    t.app.server.on('connection', onConnection);
    const reader = await rawSocket(port);
    reader.socket.write('GET /changes HTTP/1.1\r\nHost: registry\r\n\r\n');
    await vi.waitUntil(() => reader.received().includes(': connected'), polling);
    // From here on the client reads nothing at all.
    reader.socket.pause();
    t.app.server.off('connection', onConnection);
    const server = serverSockets.at(-1);
    if (!server) throw new Error('no server-side socket');

    // Loopback's kernel buffers take some 4 MB first; real imports would need 30 s to get past
    // them, so the writes are published on the change bus (what the write path does after a
    // commit): 100 changes a write, about 13 KB of events, up to 26 MB in all.
    const name = (w: number, i: number) => `${'slow-reader'.padEnd(48, '-')}-${String(w).padStart(5, '0')}-${String(i).padStart(3, '0')}`;
    let maxBuffered = 0;
    let writes = 0;
    const index = t.app.catalog.index;
    while (!server.destroyed && writes < 2000) {
      writes++;
      t.app.changes.publish(
        index + writes,
        Array.from({ length: 100 }, (_, i) => ({
          kind: 'tool' as const,
          name: name(writes, i),
          op: 'upsert' as const,
          scopesBefore: null,
          scopesAfter: [],
        })),
      );
      maxBuffered = Math.max(maxBuffered, server.writableLength);
      // Lets the socket hand what it can to the kernel, as between real writes.
      if (writes % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(server.destroyed, `the stream was still open after ${writes} writes`).toBe(true);
    // The limit, plus at most one write's events (about 13 KB here).
    expect(maxBuffered).toBeLessThanOrEqual(LIMIT + 16 * 1024);
    await reader.closed;
    await vi.waitUntil(() => t.app.waiters.size === 0, polling);
  }, 30_000);
});

describe('unknown paths are rate-limited like any request', () => {
  let t: TestApp;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_S: '60' });
    port = await listen(t);
  });
  afterAll(() => t.close());

  it("counts 404s against the caller's budget and answers 429 past it", async () => {
    for (let i = 1; i <= 3; i++) {
      const res = await get(port, `/no-such-path-${i}`);
      expect(res.status, `request ${i}`).toBe(404);
      expect(res.headers['ratelimit-remaining']).toBe(String(3 - i));
    }
    const limited = await get(port, '/no-such-path-4');
    expect(limited.status).toBe(429);
    expect(limited.headers['content-type']).toContain('application/problem+json');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // The same budget as the known routes.
    expect((await get(port, '/')).status).toBe(429);
    expect((await get(port, '/healthz')).status).toBe(200);
  });
});

describe('a change stream ends when the token that opened it expires', () => {
  let t: TestApp;
  let port: number;
  const shortLived = (seconds: number) =>
    createSigner({ key: TEST_SECRET, header: { alg: 'HS256', typ: 'at+jwt' } })({
      sub: 'short-lived',
      scope: '',
      exp: Math.floor(Date.now() / 1000) + seconds,
    });
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', JWT_CLOCK_TOLERANCE_S: '0' });
    port = await listen(t);
  });
  afterAll(() => t.close());

  it("delivers until the token's exp, then ends the stream and gives its slot back", async () => {
    const token = shortLived(2);
    const stream = await rawSocket(port);
    stream.socket.write(`GET /changes HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    await vi.waitUntil(() => stream.received().includes(': connected'), polling);
    const admin = bearer(t.token(['registry:write']));
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('before-expiry') });
    await vi.waitUntil(() => stream.received().includes('before-expiry'), polling);
    // The response ends (the last chunk of a chunked body); the connection may stay for keep-alive.
    await vi.waitUntil(() => stream.received().endsWith('0\r\n\r\n'), { ...polling, timeout: 5000 });
    expect(stream.received()).toContain(': the token has expired');
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('after-expiry') });
    expect(stream.received()).not.toContain('after-expiry');
    await vi.waitUntil(() => t.app.waiters.size === 0, polling);
  }, 15_000);

  it('answers a blocking query by the time its token expires', async () => {
    const started = Date.now();
    const answer = await get(port, `/?index=${t.app.catalog.index}&wait=60s`, bearer(shortLived(2)), 8000);
    expect(answer.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(3500);
  }, 15_000);
});

describe('change streams replaying a long log share the event loop with other requests', () => {
  let t: TestApp;
  let port: number;
  let admin: string;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MAX_WAITERS_PER_CALLER: '20' });
    port = await listen(t);
    admin = t.token(['registry:write']);
    // 20,000 change-log rows: four imports of 5,000 tool services (events only admins see).
    for (let round = 0; round < 4; round++) {
      const services = Array.from({ length: 5000 }, (_, k) => ({ id: `svc-${k}`, topic: `round-${round}` }));
      const res = await t.app.inject({
        method: 'POST',
        url: '/import',
        headers: bearer(admin),
        payload: { 'tool-services': services, tools: [] },
      });
      expect(res.statusCode).toBe(200);
    }
  }, 60_000);
  afterAll(() => t.close());

  it('answers /healthz while eight `since=0` replays are still under way', async () => {
    const last = t.app.catalog.index;
    const readers = await Promise.all(Array.from({ length: 8 }, () => rawSocket(port)));
    const events: string[] = [];
    const replayed = readers.map(async (reader) => {
      reader.socket.write(`GET /changes?since=0 HTTP/1.1\r\nHost: registry\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
      await vi.waitUntil(() => reader.received().includes(`id: ${last}\n`), { ...polling, timeout: 30_000 });
      events.push('replayed');
      reader.socket.destroy();
    });
    // Sent after the streams: before, their replays ran in one go and it was answered last.
    const probe = get(port, '/healthz', {}, 30_000).then((res) => {
      events.push('healthz');
      return res.status;
    });
    expect(await probe).toBe(200);
    await Promise.all(replayed);
    expect(events.indexOf('healthz')).toBeLessThan(events.length - 1);
    expect(events.filter((e) => e === 'replayed')).toHaveLength(8);
  }, 60_000);
});
