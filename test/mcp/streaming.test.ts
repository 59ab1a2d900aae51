/**
 * Issue 11: a message-bus tool whose service streams its answer in pieces, called through
 * `/mcp` with a progress token: each piece arrives as a `notifications/progress` before the
 * result, whose text is the whole answer. The broker is the in-process fake of Pulsar's
 * WebSocket API; the service is the package's own toolkit.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToolService } from '../../src/toolkit/tool-service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';
import { seed } from '../helpers/fixtures.js';
import { connect, mcpUrl, type McpTestClient } from './support.js';

describe('a streamed message-bus call over /mcp', () => {
  const fake = new FakePulsar();
  let t: TestApp;
  let service: ReturnType<typeof runToolService>;
  let client: McpTestClient;
  const topic = `mcp-stream-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    await fake.start();
    t = await createTestApp({ PULSAR_WS_URL: fake.url, RATE_LIMIT_MAX: '0' });
    const admin = bearer(t.token(['registry:write']));
    expect(
      (await t.app.inject({ method: 'PUT', url: `/tool-services/${topic}`, headers: admin, payload: { id: topic, topic } })).statusCode,
    ).toBe(201);
    const { style: _style, ...tool } = seed('tell-joke');
    expect(
      (
        await t.app.inject({
          method: 'POST',
          url: '/tools/register',
          headers: admin,
          payload: { ...tool, name: 'streamer', service: topic },
        })
      ).statusCode,
    ).toBe(201);
    service = runToolService({
      url: fake.url,
      id: topic,
      topic,
      handler: async function* () {
        yield 'Why did ';
        yield 'the chicken ';
        yield 'cross the road?';
      },
    });
    await service.ready;
    client = await connect(await mcpUrl(t.app), t.token([], { sub: 'listener' }));
  });

  afterAll(async () => {
    await client?.close();
    await service?.close();
    await t?.close();
    await fake.stop();
  });

  it('each piece is a progress notification, in order, before the whole answer', async () => {
    const progress: { progress: number; message?: string }[] = [];
    const result = await client.client.callTool({ name: 'streamer', arguments: { topic: 'chickens' } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'Why did the chicken cross the road?' }]);
    expect(progress).toEqual([
      { progress: 1, message: 'Why did ' },
      { progress: 2, message: 'the chicken ' },
      { progress: 3, message: 'cross the road?' },
    ]);
  });

  it('without a progress token the client gets the result alone', async () => {
    const result = await client.client.callTool({ name: 'streamer', arguments: { topic: 'chickens' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Why did the chicken cross the road?' }]);
  });
});
