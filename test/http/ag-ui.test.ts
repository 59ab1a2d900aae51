/**
 * Issue 12: AG-UI. `POST /ag-ui` runs the tool calls of a `RunAgentInput`'s last assistant
 * message through the bridge, and `POST /tools/{name}/invoke?stream=ag-ui` answers one call as
 * an AG-UI run. Checked with the official SDK: @ag-ui/client's HttpAgent and its SSE parsing
 * and event verifier (which reject a stream out of the protocol's order), and @ag-ui/core's
 * event schemas. Real sockets: the registry listens on a loopback port and every stream is read
 * to its end; message-bus tools run on the in-process fake Pulsar.
 */
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HttpAgent, runHttpRequest, transformHttpEventStream, verifyEvents, type BaseEvent, type Message } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { EventEncoder } from '@ag-ui/encoder';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AgUiEventSchema, MAX_AG_UI_TOOL_CALLS } from '../../src/model/ag-ui.js';
import { runToolService } from '../../src/toolkit/tool-service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';
import { seed } from '../helpers/fixtures.js';

/** vi.waitUntil polls every 50 ms for 1 s by default: these waits poll every 10 ms, for up to 5000 ms. */
const polling = { timeout: 5000, interval: 10 };

type Event = BaseEvent & Record<string, unknown>;

const toolCall = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function' as const,
  function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
});

/** A run input whose last assistant message makes `calls`. */
const runInput = (calls: ReturnType<typeof toolCall>[], extra: Record<string, unknown> = {}) => ({
  threadId: 'thread-1',
  runId: `run-${randomUUID()}`,
  messages: [
    { id: 'user-1', role: 'user', content: 'go' },
    { id: 'assistant-1', role: 'assistant', toolCalls: calls },
  ],
  tools: [],
  context: [],
  ...extra,
});

/** The `data` of every event of a whole AG-UI stream, checking its framing on the way. */
function dataOf(text: string): Event[] {
  expect(text.endsWith('\n\n')).toBe(true);
  return text
    .slice(0, -2)
    .split('\n\n')
    .map((block) => {
      expect(block).toMatch(/^data: [^\n]+$/);
      return JSON.parse(block.slice('data: '.length)) as Event;
    });
}

describe('AG-UI', () => {
  const fake = new FakePulsar();
  let t: TestApp;
  let tool: Server;
  let base: string;
  let user: Record<string, string>;
  const services: ReturnType<typeof runToolService>[] = [];

  beforeAll(async () => {
    // HTTP tools: /echo answers its arguments, /fail a 500, /hang never.
    tool = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.url === '/echo')
          return res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ echo: JSON.parse(Buffer.concat(chunks).toString()) }));
        if (req.url === '/fail') return res.writeHead(500, { 'content-type': 'text/plain' }).end('the tool broke');
        // A run that re-sends the arguments of a call the client holds (see the test of that name).
        if (req.url === '/replay') {
          const events = [
            { type: 'RUN_STARTED', threadId: 'thread-1', runId: 'replay' },
            { type: 'TOOL_CALL_START', toolCallId: 'held', toolCallName: 'echo', parentMessageId: 'assistant-1' },
            { type: 'TOOL_CALL_ARGS', toolCallId: 'held', delta: '{"text":"hi"}' },
            { type: 'TOOL_CALL_END', toolCallId: 'held' },
            { type: 'RUN_FINISHED', threadId: 'thread-1', runId: 'replay' },
          ];
          return res
            .writeHead(200, { 'content-type': 'text/event-stream' })
            .end(events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join(''));
        }
        if (req.url !== '/hang') res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    await fake.start();
    t = await createTestApp({ PULSAR_WS_URL: fake.url, RATE_LIMIT_MAX: '0' });
    const admin = bearer(t.token(['registry:write']));
    const put = async (name: string, descriptor: Record<string, unknown>) => {
      const res = await t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: descriptor });
      expect(res.statusCode, res.body).toBe(201);
    };
    const httpTool = (endpoint: string, extra: Record<string, unknown> = {}) => ({
      description: 'a test tool',
      endpoint,
      host: '127.0.0.1',
      port: (tool.address() as AddressInfo).port,
      scopes: ['echo:use'],
      parameters: { text: { type: 'string', required: false } },
      ...extra,
    });
    await put('echo', httpTool('/echo'));
    await put('broken', httpTool('/fail'));
    await put('hang', httpTool('/hang', { timeoutMs: 600_000 }));
    await put('secret', httpTool('/echo', { scopes: ['secret:use'] }));
    // Message-bus tools whose service answers in pieces; the second fails after two.
    const { style: _style, ...joke } = seed('tell-joke');
    for (const [name, fails] of [
      ['streamer', false],
      ['breaks-midway', true],
    ] as const) {
      const topic = `ag-ui-${name}-${randomUUID().slice(0, 8)}`;
      expect(
        (await t.app.inject({ method: 'PUT', url: `/tool-services/${topic}`, headers: admin, payload: { id: topic, topic } })).statusCode,
      ).toBe(201);
      await put(name, { ...joke, name, service: topic, scopes: ['echo:use'] });
      const service = runToolService({
        url: fake.url,
        id: topic,
        topic,
        handler: async function* () {
          yield 'Why did ';
          yield 'the chicken ';
          if (fails) throw new Error('out of jokes');
          yield 'cross the road?';
        },
      });
      services.push(service);
      await service.ready;
    }
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    user = bearer(t.token(['echo:use']));
  });

  afterAll(async () => {
    for (const service of services) await service.close();
    await t?.close();
    await fake.stop();
    tool?.closeAllConnections();
    await new Promise<void>((resolve) => tool?.close(() => resolve()));
  });

  /** What a client that applies the events to the conversation it sent passes (no TOOL_CALL_ARGS). */
  const OMIT_ARGS = { 'tool-registry': { toolCallArgs: 'omit' } };

  /** POSTs to the registry and reads the whole answer. */
  const post = async (path: string, body: unknown, headers: Record<string, string> = user) => {
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };

  /** The same exchange through the client's own SSE parsing and event verifier. */
  const verified = (path: string, body: unknown) =>
    new Promise<Event[]>((resolve, reject) => {
      const events: Event[] = [];
      const init = {
        method: 'POST',
        headers: { ...user, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify(body),
      };
      transformHttpEventStream(runHttpRequest(() => fetch(`${base}${path}`, init)))
        .pipe(verifyEvents())
        .subscribe({ next: (e) => events.push(e as Event), error: reject, complete: () => resolve(events) });
    });

  /** Every event is a valid AG-UI event (@ag-ui/core) and one the OpenAPI document describes. */
  const expectValidEvents = (events: Event[]) => {
    for (const event of events) {
      expect(EventSchemas.safeParse(event).success, JSON.stringify(event)).toBe(true);
      expect(AgUiEventSchema.safeParse(event).success, JSON.stringify(event)).toBe(true);
    }
  };

  describe('POST /ag-ui', () => {
    it('runs the calls of the last assistant message in order, for the official HttpAgent', async () => {
      const calls = [
        toolCall('call-echo', 'echo', { text: 'hi' }),
        toolCall('call-stream', 'streamer', { topic: 'chickens' }),
        toolCall('call-broken', 'broken', {}),
        // The client offers it as a capability; the token lacks its scope.
        toolCall('call-secret', 'secret', { text: 'x' }),
      ];
      const initialMessages = runInput(calls).messages as Message[];
      const agent = new HttpAgent({ url: `${base}/ag-ui`, headers: user, threadId: 'thread-1', initialMessages });
      const events: Event[] = [];
      let pending: string[] | undefined;
      const { newMessages } = await agent.runAgent(
        // The agent applies the events to the conversation it sent, so it asks for no TOOL_CALL_ARGS.
        {
          runId: 'run-agent',
          tools: [{ name: 'secret', description: 'offered by the client', parameters: { type: 'object' } }],
          forwardedProps: OMIT_ARGS,
        },
        {
          onEvent: ({ event }) => void events.push(event as Event),
          onRunFinishedEvent: (params) => void (pending = params.outcome === 'success' ? params.pendingToolCallIds : undefined),
        },
      );
      expectValidEvents(events);
      const perCall = (id: string) =>
        events
          .filter((e) => e['toolCallId'] === id || (e['content'] as { toolCallId?: string } | undefined)?.toolCallId === id)
          .map((e) => e.type);
      expect(events[0]).toMatchObject({ type: 'RUN_STARTED', threadId: 'thread-1', runId: 'run-agent', protocolVersion: '1.0' });
      expect(events.at(-1)).toEqual({ type: 'RUN_FINISHED', threadId: 'thread-1', runId: 'run-agent' });
      expect(
        events.filter((e) => e.type === 'TOOL_CALL_START').map((e) => [e['toolCallId'], e['toolCallName'], e['parentMessageId']]),
      ).toEqual(calls.map((c) => [c.id, c.function.name, 'assistant-1']));
      // No TOOL_CALL_ARGS, as asked: the client holds the arguments, and would append them a second time.
      expect(perCall('call-echo')).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END', 'ACTIVITY_SNAPSHOT', 'TOOL_CALL_RESULT']);
      expect(perCall('call-stream')).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END', 'ACTIVITY_SNAPSHOT', 'TOOL_CALL_RESULT']);
      expect(perCall('call-broken')).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT']);

      // The streamed call: its pieces as a tool-output activity, then the whole answer.
      const snapshot = events.find(
        (e) => e.type === 'ACTIVITY_SNAPSHOT' && (e['content'] as { toolCallId: string }).toolCallId === 'call-stream',
      );
      const deltas = events.filter((e) => e.type === 'ACTIVITY_DELTA' && e['messageId'] === snapshot?.['messageId']);
      expect(snapshot).toMatchObject({ activityType: 'tool-output', content: { chunks: ['Why did '] } });
      expect(deltas.map((e) => e['patch'])).toEqual([
        [{ op: 'add', path: '/chunks/-', value: 'the chicken ' }],
        [{ op: 'add', path: '/chunks/-', value: 'cross the road?' }],
      ]);
      const results = new Map(events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => [e['toolCallId'], e]));
      expect(results.get('call-stream')).toMatchObject({ role: 'tool', content: 'Why did the chicken cross the road?' });
      expect(results.get('call-echo')).toMatchObject({
        content: JSON.stringify({ echo: { text: 'hi' } }),
        metadata: { 'tool-registry': { id: expect.any(String) } },
      });
      // Failed calls are answered, and the run goes on.
      expect(results.get('call-broken')).toMatchObject({
        content: 'Error: broken failed: the tool broke',
        metadata: {
          'tool-registry': {
            error: { status: 502, code: 'TR_ERR_TOOL_SERVICE', serviceError: { type: 'http-500', message: 'the tool broke' } },
          },
        },
      });
      expect(results.get('call-secret')).toMatchObject({
        content: 'Error: calling secret needs scope secret:use',
        metadata: { 'tool-registry': { error: { status: 403 } } },
      });

      // The agent's conversation gets one tool message per call, nothing is left pending, and
      // the assistant message that made the calls is as it was.
      expect(pending).toEqual([]);
      expect(agent.messages.find((m) => m.id === 'assistant-1')).toEqual(initialMessages[1]);
      const toolMessages = newMessages.filter((m) => m.role === 'tool');
      expect(toolMessages.map((m) => [m.toolCallId, m.id])).toEqual(calls.map((c) => [c.id, results.get(c.id)?.['messageId']]));
      expect(toolMessages.find((m) => m.toolCallId === 'call-broken')).toMatchObject({
        metadata: { 'tool-registry': { error: { code: 'TR_ERR_TOOL_SERVICE' } } },
      });
    });

    it("streams each call's arguments as TOOL_CALL_ARGS by default, and leaves them out for a client that holds them", async () => {
      const text = JSON.stringify({ text: `${'x'.repeat(5000)}😀${'y'.repeat(5000)}` });
      const events = await verified('/ag-ui', runInput([toolCall('streamed', 'echo', text), toolCall('empty', 'echo', '')]));
      expectValidEvents(events);
      const perCall = (id: string) => events.filter((e) => e['toolCallId'] === id);
      const streamed = perCall('streamed');
      const args = streamed.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e['delta'] as string);
      expect(streamed.map((e) => e.type).slice(0, args.length + 2)).toEqual([
        'TOOL_CALL_START',
        ...args.map(() => 'TOOL_CALL_ARGS'),
        'TOOL_CALL_END',
      ]);
      expect(args.length).toBeGreaterThan(1);
      expect(args.join('')).toBe(text);
      // Empty arguments text is still one fragment.
      expect(
        perCall('empty')
          .map((e) => e.type)
          .slice(0, 3),
      ).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END']);

      // Why a client that holds the conversation opts out: @ag-ui/client appends the fragments to
      // the call it holds (a stream made by hand).
      const held = runInput([toolCall('held', 'echo', { text: 'hi' })]).messages as Message[];
      const replayed = new HttpAgent({
        url: `http://127.0.0.1:${(tool.address() as AddressInfo).port}/replay`,
        threadId: 'thread-1',
        initialMessages: held,
      });
      await replayed.runAgent({ runId: 'replay' });
      const doubled = replayed.messages.find((m) => m.id === 'assistant-1') as { toolCalls: { function: { arguments: string } }[] };
      expect(doubled.toolCalls[0]?.function.arguments).toBe('{"text":"hi"}{"text":"hi"}');

      // With the option the registry's run leaves it as it was.
      const agent = new HttpAgent({ url: `${base}/ag-ui`, headers: user, threadId: 'thread-1', initialMessages: structuredClone(held) });
      const seen: Event[] = [];
      await agent.runAgent({ runId: 'intact', forwardedProps: OMIT_ARGS }, { onEvent: ({ event }) => void seen.push(event as Event) });
      expect(seen.map((e) => e.type)).not.toContain('TOOL_CALL_ARGS');
      expect(agent.messages.find((m) => m.id === 'assistant-1')).toEqual(held[1]);
      expect(agent.messages.find((m) => m.role === 'tool')).toMatchObject({
        toolCallId: 'held',
        content: JSON.stringify({ echo: { text: 'hi' } }),
      });

      // A wrong option is a 400 naming it; other forwarded props are not read.
      const wrong = await post('/ag-ui', {
        ...runInput([toolCall('w', 'echo', {})]),
        forwardedProps: { 'tool-registry': { toolCallArgs: 'sometimes' } },
      });
      expect(wrong.status).toBe(400);
      expect(JSON.parse(wrong.text)).toMatchObject({
        errors: [expect.objectContaining({ path: 'forwardedProps.tool-registry.toolCallArgs' })],
      });
      const other = await verified('/ag-ui', {
        ...runInput([toolCall('o', 'echo', {})]),
        forwardedProps: { model: 'x', 'tool-registry-x': 1 },
      });
      expect(other.map((e) => e.type)).toContain('TOOL_CALL_ARGS');
    });

    it('is framed as the SDK encodes', async () => {
      const answer = await post('/ag-ui', runInput([toolCall('framed', 'echo', { text: 'hi' })]));
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = dataOf(answer.text);
      expectValidEvents(events);
      const encoder = new EventEncoder();
      expect(events.map((e) => encoder.encodeSSE(e)).join('')).toBe(answer.text);
    });

    it('runs only the calls no tool message answers yet, and finishes a run with none', async () => {
      const input = runInput([toolCall('done', 'echo', { text: 'a' }), toolCall('todo', 'echo', { text: 'b' })]);
      input.messages.push({ id: 'tool-1', role: 'tool', content: 'a', toolCallId: 'done' } as never);
      const events = await verified('/ag-ui', input);
      expect(events.filter((e) => e.type === 'TOOL_CALL_START').map((e) => e['toolCallId'])).toEqual(['todo']);
      const none = await verified('/ag-ui', { ...input, messages: input.messages.slice(0, 1) });
      expect(none.map((e) => e.type)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    });

    it('answers unknown tools, bad arguments and a service failing midway in the call results', async () => {
      const events = await verified(
        '/ag-ui',
        runInput([
          toolCall('a', 'nope', {}),
          toolCall('b', 'echo', '{"text":'),
          toolCall('c', 'echo', [1]),
          toolCall('d', 'breaks-midway', { topic: 'x' }),
          toolCall('e', 'echo', ''),
        ]),
      );
      expectValidEvents(events);
      const results = Object.fromEntries(events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => [e['toolCallId'], e]));
      expect(results['a']).toMatchObject({
        content: 'Error: no tool "nope"',
        metadata: { 'tool-registry': { error: { code: 'TR_ERR_NOT_FOUND' } } },
      });
      expect(results['b']).toMatchObject({
        content: 'Error: the arguments are not valid JSON',
        metadata: { 'tool-registry': { error: { code: 'TR_ERR_INVALID_ARGUMENTS' } } },
      });
      expect(results['c']).toMatchObject({ metadata: { 'tool-registry': { error: { code: 'TR_ERR_INVALID_ARGUMENTS' } } } });
      expect(results['d']).toMatchObject({
        content: expect.stringMatching(/^Error: breaks-midway failed: out of jokes/),
        metadata: { 'tool-registry': { error: { code: 'TR_ERR_TOOL_SERVICE' } } },
      });
      // Empty arguments text is `{}`.
      expect(results['e']).toMatchObject({ content: JSON.stringify({ echo: {} }) });
      expect(
        events.filter((e) => e.type === 'ACTIVITY_DELTA' && (e['patch'] as { value: string }[])[0]?.value === 'the chicken '),
      ).toHaveLength(1);
      expect(events.at(-1)?.type).toBe('RUN_FINISHED');
    });

    it('checks scopes before arguments, and writes failed calls to the audit log', async () => {
      const events = await verified('/ag-ui', runInput([toolCall('s', 'secret', '{not json')]));
      expect(events.find((e) => e.type === 'TOOL_CALL_RESULT')).toMatchObject({
        metadata: { 'tool-registry': { error: { code: 'TR_ERR_INSUFFICIENT_SCOPE' } } },
      });
      const audit = await t.app.inject({
        method: 'GET',
        url: '/audit?action=tool.invoke&target=secret',
        headers: bearer(t.token(['registry:write'])),
      });
      expect(audit.json<{ entries: unknown[] }>().entries[0]).toMatchObject({
        action: 'tool.invoke',
        target: 'secret',
        outcome: 'denied',
        status: 403,
        detail: 'TR_ERR_INSUFFICIENT_SCOPE',
        sub: 'test-agent',
      });
    });

    it('ends the run with RUN_ERROR on a fault of the registry, and runs no more calls', async () => {
      const spy = vi.spyOn(t.app.bridge, 'invoke').mockRejectedValueOnce(new Error('boom'));
      try {
        const events = await verified('/ag-ui', runInput([toolCall('x', 'echo', {}), toolCall('y', 'echo', {})]));
        expect(events.map((e) => e.type)).toEqual(['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_ERROR']);
        expect(events.at(-1)).toEqual({
          type: 'RUN_ERROR',
          message: 'an internal error occurred; it has been logged',
          code: 'TR_ERR_INTERNAL',
        });
        expect(spy).toHaveBeenCalledTimes(1);
      } finally {
        spy.mockRestore();
      }
    });

    it('refuses before the stream: no token (before the body is read), a bad body, too many calls', async () => {
      const anonymous = await fetch(`${base}/ag-ui`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{not json',
      });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(await anonymous.json()).toMatchObject({ code: 'TR_ERR_UNAUTHENTICATED' });

      const bad = await post('/ag-ui', { threadId: 't', messages: [{ id: 'm', role: 'robot' }] });
      expect(bad.status).toBe(400);
      expect(JSON.parse(bad.text)).toMatchObject({
        code: 'TR_ERR_BAD_REQUEST',
        detail: expect.stringMatching(/^invalid AG-UI run input: /),
        errors: expect.arrayContaining([{ path: 'runId', message: expect.any(String) }]),
      });

      const many = Array.from({ length: MAX_AG_UI_TOOL_CALLS + 1 }, (_, i) => toolCall(`c${i}`, 'echo', {}));
      const tooMany = await post('/ag-ui', runInput(many));
      expect(tooMany.status).toBe(400);
      expect(JSON.parse(tooMany.text)).toMatchObject({
        errors: [
          {
            path: 'messages.1.toolCalls',
            message: `${MAX_AG_UI_TOOL_CALLS + 1} tool calls to run; one run makes at most ${MAX_AG_UI_TOOL_CALLS}`,
          },
        ],
      });
      const twice = await post('/ag-ui', runInput([toolCall('same', 'echo', {}), toolCall('same', 'echo', {})]));
      expect(JSON.parse(twice.text)).toMatchObject({
        status: 400,
        errors: [{ path: 'messages.1.toolCalls', message: 'tool call id "same" is given twice' }],
      });

      const huge = await post('/ag-ui', runInput([toolCall('big', 'echo', { text: 'x'.repeat(t.config.bodyLimit) })]));
      expect(huge.status).toBe(413);
    });

    it('cancels the call in flight and the rest of the run when the caller hangs up', async () => {
      const stats = async () =>
        (await t.app.inject({ method: 'GET', url: '/stats', headers: bearer(t.token(['registry:write'])) })).json<{
          errors_by_class: Record<string, number>;
          usage_by_tool: Record<string, number>;
        }>();
      const before = await stats();
      const req = httpRequest(`${base}/ag-ui`, { method: 'POST', headers: { ...user, 'content-type': 'application/json' } });
      req.on('error', () => undefined);
      let received = '';
      req.on('response', (res) => res.on('data', (chunk: Buffer) => (received += chunk.toString())));
      req.end(JSON.stringify(runInput([toolCall('h', 'hang', {}), toolCall('after', 'echo', { text: 'never' })])));
      await vi.waitUntil(() => t.app.bridge.inflight === 1 && received.includes('TOOL_CALL_END'), polling);
      req.destroy();
      await vi.waitUntil(() => t.app.bridge.inflight === 0, polling);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const after = await stats();
      expect((after.errors_by_class['cancelled'] ?? 0) - (before.errors_by_class['cancelled'] ?? 0)).toBe(1);
      expect(after.usage_by_tool['echo']).toBe(before.usage_by_tool['echo']);
    });
  });

  describe('POST /tools/{name}/invoke?stream=ag-ui', () => {
    it('answers one streamed call as a run', async () => {
      const events = await verified('/tools/streamer/invoke?stream=ag-ui', { topic: 'chickens' });
      expectValidEvents(events);
      expect(events.map((e) => e.type)).toEqual([
        'RUN_STARTED',
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
        'ACTIVITY_SNAPSHOT',
        'ACTIVITY_DELTA',
        'ACTIVITY_DELTA',
        'TOOL_CALL_RESULT',
        'RUN_FINISHED',
      ]);
      expect(events[1]).toMatchObject({ toolCallName: 'streamer' });
      expect(events[1]).not.toHaveProperty('parentMessageId');
      expect(events[2]).toMatchObject({ delta: '{"topic":"chickens"}' });
      expect(events[7]).toMatchObject({ toolCallId: events[1]?.['toolCallId'], content: 'Why did the chicken cross the road?' });
    });

    it('streams the arguments as fragments that concatenate to them', async () => {
      const args = { text: `${'x'.repeat(5000)}😀${'y'.repeat(5000)}` };
      const answer = await post('/tools/echo/invoke?stream=ag-ui', args);
      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = dataOf(answer.text);
      expectValidEvents(events);
      const deltas = events.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e['delta'] as string);
      expect(deltas.length).toBeGreaterThan(2);
      expect(deltas.join('')).toBe(JSON.stringify(args));
      expect(events.find((e) => e.type === 'TOOL_CALL_RESULT')?.['content']).toBe(JSON.stringify({ echo: args }));
    });

    it('streams the arguments through the verifier in fragments that never split a surrogate pair', async () => {
      // `{"text":"` is 9 characters: the emoji's two UTF-16 units sit either side of 4096.
      const args = { text: `${'x'.repeat(4096 - 9 - 1)}😀${'y'.repeat(9000)}` };
      const events = await verified('/tools/echo/invoke?stream=ag-ui', args);
      expectValidEvents(events);
      const deltas = events.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e['delta'] as string);
      expect(deltas.length).toBe(4);
      expect(deltas.join('')).toBe(JSON.stringify(args));
      for (const delta of deltas) {
        expect(delta.length).toBeLessThanOrEqual(4096);
        expect(delta).toBe(Buffer.from(delta, 'utf8').toString('utf8'));
      }
      expect(deltas[0]?.endsWith('x')).toBe(true);
      expect(deltas[1]?.startsWith('😀')).toBe(true);
      const start = events.findIndex((e) => e.type === 'TOOL_CALL_START');
      expect(events.slice(start, start + 6).map((e) => e.type)).toEqual([
        'TOOL_CALL_START',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_ARGS',
        'TOOL_CALL_END',
      ]);
    });

    it('keeps the status of a call refused or failed before any output, and answers a later failure in the run', async () => {
      for (const [path, status] of [
        ['/tools/secret/invoke?stream=ag-ui', 403],
        ['/tools/nope/invoke?stream=ag-ui', 404],
        ['/tools/broken/invoke?stream=ag-ui', 502],
      ] as const) {
        const answer = await post(path, {});
        expect(answer.status, path).toBe(status);
        expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      }
      expect((await post('/tools/echo/invoke?stream=ag-ui', {}, {})).status).toBe(401);
      expect((await post('/tools/echo/invoke?stream=other', {})).status).toBe(400);
      const events = await verified('/tools/breaks-midway/invoke?stream=ag-ui', { topic: 'x' });
      expect(events.slice(-2)).toMatchObject([
        { type: 'TOOL_CALL_RESULT', content: expect.stringMatching(/^Error: /) },
        { type: 'RUN_FINISHED' },
      ]);
      // Plain text/event-stream is unchanged.
      const plain = await fetch(`${base}/tools/streamer/invoke`, {
        method: 'POST',
        headers: { ...user, accept: 'text/event-stream', 'content-type': 'application/json' },
        body: '{"topic":"x"}',
      });
      expect(await plain.text()).toMatch(/^event: chunk\ndata: \{"text":"Why did "\}\n\n/);
    });
  });

  it('the verifier used here rejects an out-of-order stream', async () => {
    const bad = ['{"type":"RUN_STARTED","threadId":"t","runId":"r"}', '{"type":"TOOL_CALL_ARGS","toolCallId":"c","delta":"{}"}']
      .map((d) => `data: ${d}\n\n`)
      .join('');
    const outcome = new Promise<unknown>((resolve) => {
      transformHttpEventStream(runHttpRequest(async () => new Response(bad, { headers: { 'content-type': 'text/event-stream' } })))
        .pipe(verifyEvents())
        .subscribe({ error: resolve, complete: () => resolve(null) });
    });
    expect(String(await outcome)).toMatch(/No active tool call found with ID 'c'/);
  });
});
