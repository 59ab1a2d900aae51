/**
 * OpenTelemetry spans of calls to tools of upstream MCP servers (issue 13), with the test's own
 * provider and an in-memory exporter, against a real MCP server (the SDK's, on 127.0.0.1): the
 * MCP conventions' client span `tools/call {tool}` under `execute_tool`, its trace context in the
 * request's `params._meta` (SEP-414), and `error.type` for a tool error and a JSON-RPC error.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { exporter, only, parentOf, provider, spans, TRACEPARENT, tracing } from '../helpers/spans.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';

describe('tracing a call to an upstream MCP server', () => {
  let t: TestApp;
  let upstream: McpUpstream;
  let caller: Record<string, string>;
  /** The `params._meta` of every tools/call the upstream received. */
  const metas: (Record<string, unknown> | undefined)[] = [];

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
    upstream = await startMcpUpstream({
      tools: [
        {
          tool: { name: 'search', description: 'Searches.', inputSchema: { type: 'object' } },
          handler: (_args, _signal, meta) => {
            metas.push(meta);
            return text('found');
          },
        },
        {
          tool: { name: 'fail', description: 'Fails.', inputSchema: { type: 'object' } },
          handler: () => ({ ...text('upstream says no'), isError: true }),
        },
        {
          tool: { name: 'refuse', description: 'Refuses its arguments.', inputSchema: { type: 'object' } },
          handler: () => {
            throw new McpError(ErrorCode.InvalidParams, 'no such argument');
          },
        },
      ],
    });
    t = await createTestApp({ RATE_LIMIT_MAX: '0' }, { tracing });
    const admin = bearer(t.token(['registry:write']));
    const put = await t.app.inject({
      method: 'PUT',
      url: '/mcp-servers/github',
      headers: admin,
      payload: { url: upstream.url, policy: 'auto', prefix: 'gh_' },
    });
    expect(put.statusCode, put.body).toBe(201);
    // The registry lists the server's tools once it has connected.
    await vi.waitFor(async () => expect((await t.app.inject({ method: 'GET', url: '/tools/gh_refuse' })).statusCode).toBe(200), {
      timeout: 10_000,
      interval: 50,
    });
    caller = bearer(t.token([]));
  });

  beforeEach(async () => {
    await provider.forceFlush();
    exporter.reset();
  });

  afterAll(async () => {
    await t?.close();
    await upstream?.stop();
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it('makes tools/call a client span under execute_tool, and sends its trace context in params._meta', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/gh_search/invoke', headers: caller, payload: {} });
    expect(res.statusCode, res.body).toBe(200);
    const found = await spans();
    const invoke = only(found, 'execute_tool gh_search', SpanKind.INTERNAL);
    const call = only(found, 'tools/call search', SpanKind.CLIENT);
    expect(parentOf(call)).toBe(invoke.spanContext().spanId);
    expect(call.spanContext().traceId).toBe(invoke.spanContext().traceId);
    expect(invoke.attributes).toMatchObject({ 'gen_ai.tool.name': 'gh_search', 'gen_ai.tool.type': 'mcp' });
    expect(call.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'search',
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
      'server.address': '127.0.0.1',
      'server.port': upstream.port,
      'mcp.session.id': expect.stringMatching(/.+/),
      'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
    });
    expect(call.status.code).not.toBe(SpanStatusCode.ERROR);
    // The upstream got the client span's context: its trace, its span as the parent.
    const [, traceId, parent] = TRACEPARENT.exec(String(metas.at(-1)?.['traceparent'])) ?? [];
    expect(traceId).toBe(call.spanContext().traceId);
    expect(parent).toBe(call.spanContext().spanId);
  });

  it('names an answer with isError tool_error, and a JSON-RPC error by its code', async () => {
    const failed = await t.app.inject({ method: 'POST', url: '/tools/gh_fail/invoke', headers: caller, payload: {} });
    expect(failed.statusCode).toBe(502);
    const refused = await t.app.inject({ method: 'POST', url: '/tools/gh_refuse/invoke', headers: caller, payload: {} });
    expect(refused.statusCode).toBe(502);
    const found = await spans();
    const fail = only(found, 'tools/call fail', SpanKind.CLIENT);
    expect(fail.status.code).toBe(SpanStatusCode.ERROR);
    expect(fail.attributes['error.type']).toBe('tool_error');
    const refuse = only(found, 'tools/call refuse', SpanKind.CLIENT);
    expect(refuse.status.code).toBe(SpanStatusCode.ERROR);
    expect(refuse.attributes).toMatchObject({
      'error.type': String(ErrorCode.InvalidParams),
      'rpc.response.status_code': String(ErrorCode.InvalidParams),
    });
    // The invoke span keeps the registry's own code for the failure.
    expect(only(found, 'execute_tool gh_refuse').attributes['error.type']).toBe('TR_ERR_TOOL_SERVICE');
  });

  it('makes no client span when the server is down: nothing was sent', async () => {
    await upstream.stop();
    const invoke = () => t.app.inject({ method: 'POST', url: '/tools/gh_search/invoke', headers: caller, payload: {} });
    // The first call after the crash may still try, and mark the connection lost.
    await expect.poll(async () => (await invoke()).statusCode, { timeout: 10_000 }).toBe(503);
    await provider.forceFlush();
    exporter.reset();
    expect((await invoke()).statusCode).toBe(503);
    const found = await spans();
    expect(only(found, 'execute_tool gh_search').attributes['error.type']).toBe('TR_ERR_UPSTREAM_UNAVAILABLE');
    expect(found.filter((s) => s.kind === SpanKind.CLIENT)).toEqual([]);
  });
});
