import { once } from 'node:events';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { eventStreams, type EventStream } from '../../src/http/event-stream.js';

/** Slots as MAX_WAITERS_PER_CALLER counts them, with a limit of `max` per holder. */
function slots(max = 1) {
  const held = new Map<string, number>();
  return {
    held: (holder: string) => held.get(holder) ?? 0,
    reserve(holder: string) {
      const now = held.get(holder) ?? 0;
      if (now >= max) throw Object.assign(new Error('no slot'), { statusCode: 503 });
      held.set(holder, now + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        held.set(holder, (held.get(holder) ?? 1) - 1);
      };
    },
  };
}

interface Setup {
  expiresInMs?: number;
  maxBufferedBytes?: number;
  heartbeat?: { everyMs: number; text: string };
  /** What the handler does once the stream has started. */
  body?: (stream: EventStream, raw: ServerResponse) => void | Promise<void>;
}

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function serve(setup: Setup = {}) {
  const pool = slots();
  const streams: EventStream[] = [];
  const ended: EventStream[] = [];
  app = Fastify();
  const registry = eventStreams(app, { endOnClose: true, ...(setup.heartbeat && { heartbeat: setup.heartbeat }) });
  app.get('/stream', async (request, reply) => {
    const stream = registry.open(request, reply, {
      hold: {
        slots: pool,
        holder: 'caller',
        expiresAt: setup.expiresInMs === undefined ? undefined : Date.now() + setup.expiresInMs,
        onExpired: (expired) => expired.end(': expired\n\n', 1000),
      },
      ...(setup.maxBufferedBytes !== undefined && { maxBufferedBytes: setup.maxBufferedBytes }),
    });
    streams.push(stream);
    stream.onEnd(() => ended.push(stream));
    stream.start({ 'x-extra': 'yes' });
    stream.write(': connected\n\n');
    await setup.body?.(stream, reply.raw);
    return reply;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const open = async (): Promise<IncomingMessage> => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/stream' });
    req.end();
    const [response] = (await once(req, 'response')) as [IncomingMessage];
    return response;
  };
  return { pool, streams, ended, open };
}

const text = async (response: IncomingMessage): Promise<string> => {
  let body = '';
  response.setEncoding('utf8');
  for await (const chunk of response) body += chunk as string;
  return body;
};

const until = (check: () => boolean) => vi.waitUntil(check, { interval: 10, timeout: 2000 });

describe('event streams (src/http/event-stream.ts)', () => {
  it("answers 200 with the event-stream and security headers that hijacking skips Fastify's hooks for", async () => {
    const { open } = await serve();
    const response = await open();
    expect(response.statusCode).toBe(200);
    expect(response.headers).toMatchObject({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
      'x-extra': 'yes',
    });
    expect(response.headers['x-request-id']).toMatch(/.+/);
    response.destroy();
  });

  it('writes the heartbeat to every open stream, so that an idle one stays open (the MCP listen keep-alive)', async () => {
    const { open } = await serve({ heartbeat: { everyMs: 30, text: ': keepalive\n\n' } });
    const response = await open();
    let received = '';
    response.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
    await until(() => received.split(': keepalive\n\n').length > 2);
    expect(received.startsWith(': connected\n\n: keepalive\n\n')).toBe(true);
    response.destroy();
  });

  it('holds the slot while open and gives it back when the client hangs up, once', async () => {
    const { pool, streams, ended, open } = await serve();
    const response = await open();
    expect(pool.held('caller')).toBe(1);
    // The caller's one slot is taken: a second stream is refused before it starts.
    const refused = await open();
    expect(refused.statusCode).toBe(503);
    await text(refused);
    response.destroy();
    await until(() => pool.held('caller') === 0);
    expect(ended).toHaveLength(1);
    expect(streams[0]?.ended).toBe(true);
    expect(streams[0]?.signal.aborted).toBe(true);
  });

  it('ends the stream with its closing text when the token expires, and frees the slot', async () => {
    const { pool, open } = await serve({ expiresInMs: 100 });
    const started = Date.now();
    const body = await text(await open());
    expect(body).toBe(': connected\n\n: expired\n\n');
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    await until(() => pool.held('caller') === 0);
  });

  it('writes nothing once ended, and runs a cleanup added afterwards at once', async () => {
    const { open } = await serve({
      body: (stream) => {
        stream.end('event: last\ndata: 1\n\n');
        stream.write('event: late\ndata: 2\n\n');
        let ran = false;
        stream.onEnd(() => (ran = true));
        expect(ran).toBe(true);
      },
    });
    expect(await text(await open())).toBe(': connected\n\nevent: last\ndata: 1\n\n');
  });

  it('cuts off a client that stops reading once the buffer would pass its limit', async () => {
    const piece = 'x'.repeat(256 * 1024);
    const { pool, streams, open } = await serve({
      maxBufferedBytes: 1024 * 1024,
      body: async (stream) => {
        // Far more than the socket buffers take: the response's own buffer fills.
        for (let i = 0; i < 200 && !stream.ended; i++) {
          stream.write(`data: ${piece}\n\n`);
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
    });
    const response = await open();
    response.pause();
    await until(() => streams[0]?.ended === true);
    await until(() => pool.held('caller') === 0);
    response.destroy();
  });

  it('tells a writer of its own (admits) to stop, and cuts it off, once the buffer would pass its limit', async () => {
    const piece = 'x'.repeat(256 * 1024);
    const answers: boolean[] = [];
    const { pool, streams, open } = await serve({
      maxBufferedBytes: 1024 * 1024,
      body: async (stream, raw) => {
        // What the MCP SDK's transport does: it writes to the response itself, asking first.
        for (let i = 0; i < 200 && !stream.ended; i++) {
          answers.push(stream.admits(100));
          if (!stream.ended) raw.write(`data: ${piece}\n\n`);
          await new Promise((resolve) => setImmediate(resolve));
        }
      },
    });
    const response = await open();
    response.pause();
    await until(() => streams[0]?.ended === true);
    expect(answers.at(-1)).toBe(false);
    expect(streams[0]?.admits(1)).toBe(false);
    await until(() => pool.held('caller') === 0);
    response.destroy();
  });

  it('does not abort a stream that ended before the client went away', async () => {
    const { streams, open } = await serve({ body: (stream) => stream.end() });
    await text(await open());
    await until(() => streams[0]?.ended === true);
    expect(streams[0]?.signal.aborted).toBe(false);
  });

  it('holds a stream whose head another writes (held), and gives back the slot of one that never started (release)', async () => {
    const pool = slots();
    app = Fastify();
    const registry = eventStreams(app);
    const hold = { slots: pool, holder: 'caller', expiresAt: undefined, onExpired: () => undefined };
    app.get('/refused', async (request, reply) => {
      const stream = registry.open(request, reply, { hold });
      // As GET /mcp does when the SDK refuses: an ordinary reply, and the slot back.
      stream.release();
      return reply.code(409).send({ refused: true });
    });
    app.get('/sent', async (request, reply) => {
      const stream = registry.open(request, reply, { hold });
      stream.held();
      expect(stream.started).toBe(true);
      return reply.header('content-type', 'text/event-stream').send(': sent by another\n\n');
    });
    const refused = await app.inject({ method: 'GET', url: '/refused' });
    expect(refused.statusCode).toBe(409);
    expect(pool.held('caller')).toBe(0);
    const sent = await app.inject({ method: 'GET', url: '/sent' });
    expect(sent.body).toBe(': sent by another\n\n');
    await until(() => pool.held('caller') === 0);
  });

  it('ends open streams when the server closes', async () => {
    const { pool, open } = await serve();
    const response = await open();
    const body = text(response);
    await app?.close();
    app = undefined;
    expect(await body).toBe(': connected\n\n');
    expect(pool.held('caller')).toBe(0);
  });
});
