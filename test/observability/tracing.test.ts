/**
 * OpenTelemetry spans (issue 13), with the test's own provider and an in-memory exporter: one
 * invoke's span tree (the request's server span -> execute_tool -> the HTTP POST to the tool's
 * host), the `traceparent` the host and a message-bus service receive, an incoming
 * `traceparent` continued, and a group commit linking the writes it committed.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { runToolService } from '../../src/toolkit/tool-service.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { exporter, only, parentOf, provider, spans, TRACEPARENT, tracing } from '../helpers/spans.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';
import { seed } from '../helpers/fixtures.js';

describe('tracing', () => {
  let t: TestApp;
  let host: Server;
  let hostPort: number;
  const received: IncomingHttpHeaders[] = [];
  let admin: Record<string, string>;
  let user: Record<string, string>;

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    host = createServer((req, res) => {
      received.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('traced')));
    });
    await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
    hostPort = (host.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0' }, { tracing });
    admin = bearer(t.token(['registry:write']));
    user = bearer(t.token(['echo:use']));
    const echo = {
      name: 'echo',
      description: 'echoes',
      endpoint: '/echo',
      host: '127.0.0.1',
      port: hostPort,
      scopes: ['echo:use'],
      parameters: {},
    };
    expect((await t.app.inject({ method: 'PUT', url: '/tools/echo', headers: admin, payload: echo })).statusCode).toBe(201);
  });

  beforeEach(async () => {
    await provider.forceFlush();
    exporter.reset();
    received.length = 0;
  });

  afterAll(async () => {
    await t?.close();
    host.closeAllConnections();
    await new Promise((resolve) => host.close(resolve));
    // The provider stays up for the next describe (the services' tracers keep the one they found).
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it("gives one invoke a span tree, server span -> execute_tool -> POST, and the tool's host the trace's traceparent", async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/echo/invoke', headers: user, payload: {} });
    expect(res.statusCode, res.body).toBe(200);
    const found = await spans();
    const server = only(found, 'POST /tools/:name/invoke', SpanKind.SERVER);
    const invoke = only(found, 'execute_tool echo', SpanKind.INTERNAL);
    const call = only(found, 'POST', SpanKind.CLIENT);
    const traceId = server.spanContext().traceId;
    expect(parentOf(server)).toBeUndefined();
    expect([invoke.spanContext().traceId, call.spanContext().traceId]).toEqual([traceId, traceId]);
    expect(parentOf(invoke)).toBe(server.spanContext().spanId);
    expect(parentOf(call)).toBe(invoke.spanContext().spanId);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/tools/:name/invoke',
      'url.path': '/tools/echo/invoke',
      'http.response.status_code': 200,
    });
    expect(invoke.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.type': 'http',
      'gen_ai.tool.call.id': res.json().id,
    });
    expect(call.attributes).toMatchObject({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': hostPort,
      'url.path': '/echo',
      'http.response.status_code': 200,
    });

    // The host got the client span's context: its trace, its span as the parent.
    expect(received).toHaveLength(1);
    const [, hostTraceId, hostParent] = TRACEPARENT.exec(String(received[0]?.['traceparent'])) ?? [];
    expect(hostTraceId).toBe(traceId);
    expect(hostParent).toBe(call.spanContext().spanId);
  });

  it('continues the trace of an incoming traceparent', async () => {
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = '00f067aa0ba902b7';
    // Over a real socket: the body arrives in the socket's async context, not the request's.
    if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/tools/echo/invoke`;
    const headers = { ...user, 'content-type': 'application/json', traceparent: `00-${callerTrace}-${callerSpan}-01` };
    const res = await fetch(url, { method: 'POST', headers, body: '{}' });
    expect(res.status, await res.clone().text()).toBe(200);
    const found = await spans();
    const server = only(found, 'POST /tools/:name/invoke', SpanKind.SERVER);
    expect(server.spanContext().traceId).toBe(callerTrace);
    expect(parentOf(server)).toBe(callerSpan);
    const invoke = only(found, 'execute_tool echo');
    expect(parentOf(invoke)).toBe(server.spanContext().spanId);
    expect(parentOf(only(found, 'POST', SpanKind.CLIENT))).toBe(invoke.spanContext().spanId);
    expect(only(found, 'POST', SpanKind.CLIENT).spanContext().traceId).toBe(callerTrace);
    expect(TRACEPARENT.exec(String(received[0]?.['traceparent']))?.[1]).toBe(callerTrace);
  });

  it('ends the server span of a streamed call, whose answer Fastify no longer sends', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/echo/invoke',
      headers: { ...user, accept: 'text/event-stream' },
      payload: {},
    });
    expect(res.body).toContain('event: result');
    const found = await spans();
    const server = only(found, 'POST /tools/:name/invoke', SpanKind.SERVER);
    expect(server.attributes['http.response.status_code']).toBe(200);
    expect(parentOf(only(found, 'execute_tool echo'))).toBe(server.spanContext().spanId);
  });

  it('records failed calls as errors with their stable code', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/echo/invoke', headers: bearer(t.token(['other:use'])), payload: {} });
    expect(res.statusCode).toBe(403);
    const found = await spans();
    // Refused before it was admitted: named after no tool.
    const invoke = only(found, 'execute_tool');
    expect(invoke.attributes['gen_ai.tool.name']).toBe('echo');
    expect(invoke.status.code).toBe(2);
    expect(invoke.attributes['error.type']).toBe('TR_ERR_INSUFFICIENT_SCOPE');
    // Refused before any call: no client span, nothing reached the host.
    expect(found.filter((s) => s.kind === SpanKind.CLIENT)).toEqual([]);
    expect(received).toEqual([]);
  });

  it('spans discovery, and links each write from the group commit that made it durable', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
    const writes = await Promise.all(
      ['a', 'b'].map((name) =>
        t.app.inject({
          method: 'PUT',
          url: `/tools/${name}`,
          headers: admin,
          payload: { ...seed('calculator'), name, host: '127.0.0.1', port: hostPort },
        }),
      ),
    );
    expect(writes.map((w) => w.statusCode)).toEqual([201, 201]);
    const found = await spans();
    expect(only(found, 'GET /', SpanKind.SERVER).attributes).toMatchObject({ 'http.route': '/', 'http.response.status_code': 200 });
    const puts = found.filter((s) => s.name === 'PUT /tools/:name');
    expect(puts).toHaveLength(2);
    const commits = found.filter((s) => s.name === 'registry.group_commit');
    expect(commits.length).toBeGreaterThanOrEqual(1);
    for (const commit of commits) expect(parentOf(commit), 'a commit is a root span').toBeUndefined();
    const linked = commits.flatMap((c) => c.links.map((l) => l.context.spanId));
    expect(linked.sort()).toEqual(puts.map((p) => p.spanContext().spanId).sort());
    expect(commits.reduce((n, c) => n + Number(c.attributes['tool_registry.commit.writes']), 0)).toBe(2);
  });
});

describe('tracing a message-bus call', () => {
  it('sends the traceparent of its send span as a message property', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const fake = new FakePulsar();
    await fake.start();
    const t = await createTestApp({ RATE_LIMIT_MAX: '0', PULSAR_WS_URL: fake.url }, { tracing });
    const service = runToolService({ url: fake.url, id: 'joke-service', topic: 'joke', handler: () => 'a pun' });
    try {
      await service.ready;
      const admin = bearer(t.token(['registry:write']));
      expect(
        (await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') }))
          .statusCode,
      ).toBe(201);
      expect((await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('tell-joke') })).statusCode).toBe(
        201,
      );
      exporter.reset();
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/tell-joke/invoke',
        headers: bearer(t.token([])),
        payload: { topic: 'x' },
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().result).toBe('a pun');
      const found = await spans();
      const invoke = only(found, 'execute_tool tell-joke');
      const send = only(found, 'send non-persistent://tg/request/joke', SpanKind.CLIENT);
      expect(parentOf(send)).toBe(invoke.spanContext().spanId);
      expect(send.attributes).toMatchObject({
        'messaging.system': 'pulsar',
        'messaging.destination.name': 'non-persistent://tg/request/joke',
        'messaging.message.conversation_id': res.json().id,
      });
      const request = fake.published.find((m) => m.topic.includes('request/joke'));
      expect(request?.properties['id']).toBe(res.json().id);
      const [, traceId, parent] = TRACEPARENT.exec(request?.properties['traceparent'] ?? '') ?? [];
      expect(traceId).toBe(send.spanContext().traceId);
      expect(parent).toBe(send.spanContext().spanId);
    } finally {
      await service.close();
      await t.close();
      await fake.stop();
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    }
  });
});

describe('without tracing', () => {
  it('costs a request no context: no extract, no context.with, no span (the 304 hot path)', async () => {
    const t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const extract = vi.spyOn(propagation, 'extract');
    const enter = vi.spyOn(context, 'with');
    const getTracer = vi.spyOn(trace, 'getTracer');
    try {
      const first = await t.app.inject({
        method: 'GET',
        url: '/',
        headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
      });
      expect(first.statusCode).toBe(200);
      const again = await t.app.inject({ method: 'GET', url: '/', headers: { 'if-none-match': String(first.headers['etag']) } });
      expect(again.statusCode).toBe(304);
      expect(extract).not.toHaveBeenCalled();
      expect(enter).not.toHaveBeenCalled();
      expect(getTracer).not.toHaveBeenCalled();
    } finally {
      vi.restoreAllMocks();
      await t.close();
    }
  });
});
