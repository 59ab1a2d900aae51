/**
 * Issue 31: MCP revision 2026-07-28 on /mcp (src/http/mcp/modern.ts). Requests are
 * self-contained POSTs (no initialize, no session) whose `_meta` names the revision as the
 * `MCP-Protocol-Version` header does: `server/discover`, `tools/list` with `resultType`,
 * `ttlMs` and `cacheScope` (`public` for the anonymous view only), `tools/call` through the SDK
 * with `resultType`, and the revision's refusals. Older revisions' answers are unchanged.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const REVISION = '2026-07-28';

interface Rpc {
  jsonrpc: string;
  id: number | string | null;
  result?: Record<string, unknown> & { tools?: { name: string }[]; nextCursor?: string };
  error?: { code: number; message: string; data?: unknown };
}

const meta = (version = REVISION) => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientInfo': { name: 'revision-test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
});

/** The JSON-RPC message of an answer: a JSON body, or the last `data` of an event stream. */
function rpcOf(contentType: string | undefined, body: string): Rpc {
  if (contentType?.startsWith('text/event-stream')) {
    const data = [...body.matchAll(/^data: (.+)$/gm)].map((m) => m[1] ?? '');
    return JSON.parse(data.at(-1) ?? 'null') as Rpc;
  }
  return JSON.parse(body) as Rpc;
}

describe('MCP revision 2026-07-28 (issue 31)', () => {
  let t: TestApp;
  let toolHost: Server;

  const post = async (
    method: string,
    params: Record<string, unknown> = {},
    options: {
      token?: string;
      headers?: Record<string, string>;
      version?: string;
      id?: number;
      /** In place of the revision's `_meta`: `{}` for none, or a `_meta` of the test's own. */
      meta?: Record<string, unknown>;
    } = {},
  ) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': REVISION,
        'mcp-method': method,
        // As a conforming client mirrors it (the revision's "Standard Request Headers").
        ...(method === 'tools/call' && typeof params['name'] === 'string' && { 'mcp-name': params['name'] }),
        ...(options.token !== undefined && bearer(options.token)),
        ...options.headers,
      },
      payload: {
        jsonrpc: '2.0',
        id: options.id ?? 1,
        method,
        params: options.meta === undefined ? { ...params, _meta: meta(options.version) } : { ...params, ...options.meta },
      },
    });
    return { res, rpc: res.body === '' ? undefined : rpcOf(res.headers['content-type'] as string | undefined, res.body) };
  };

  /** Every page of tools/list, each checked for the revision's fields. */
  const listAll = async (token?: string) => {
    const pages: Rpc['result'][] = [];
    let cursor: string | undefined;
    do {
      const { res, rpc } = await post('tools/list', cursor === undefined ? {} : { cursor }, { ...(token !== undefined && { token }) });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers['content-type']).toBe('application/json');
      expect(res.headers['mcp-session-id']).toBeUndefined();
      expect(rpc?.result?.['resultType']).toBe('complete');
      pages.push(rpc?.result);
      cursor = rpc?.result?.nextCursor;
    } while (cursor !== undefined);
    return pages;
  };
  const names = (pages: Rpc['result'][]) => pages.flatMap((p) => (p?.tools ?? []).map((tool) => tool.name));

  beforeAll(async () => {
    toolHost = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`echo ${body}`));
    });
    await new Promise<void>((resolve) => toolHost.listen(0, '127.0.0.1', resolve));
    const port = (toolHost.address() as AddressInfo).port;
    t = await createTestApp({
      RATE_LIMIT_MAX: '0',
      MCP_PAGE_SIZE: '2',
      MCP_ALLOW_ANONYMOUS: 'true',
      ANONYMOUS_DISCOVERY: 'public',
      ANONYMOUS_MAX_AGE_S: '30',
    });
    const admin = bearer(t.token(['registry:write'], { sub: 'operator' }));
    for (const [name, scopes] of [
      ['open_one', []],
      ['open_two', []],
      ['open_three', []],
      ['alpha_echo', ['alpha']],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: {
          name,
          endpoint: `/${name}`,
          scopes,
          description: `The ${name} tool`,
          parameters: { text: { type: 'string', description: 'Anything' } },
          host: '127.0.0.1',
          port,
        },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(async () => {
    await t.close();
    await new Promise((resolve) => toolHost.close(resolve));
  });

  it('answers server/discover: the revisions served, the capabilities, the server, cacheable for everyone', async () => {
    const { res, rpc } = await post('server/discover');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(rpc?.id).toBe(1);
    expect(rpc?.result).toMatchObject({
      resultType: 'complete',
      // Tool-list changes reach 2026-07-28 clients through subscriptions/listen (issue-31-listen.test.ts).
      capabilities: { tools: { listChanged: true } },
      ttlMs: 30_000,
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'tool-registry', version: expect.any(String) } },
    });
    expect(rpc?.result?.['supportedVersions']).toEqual(expect.arrayContaining([REVISION, '2025-11-25', '2025-06-18', '2025-03-26']));
    expect(String(rpc?.result?.['instructions'])).toContain('tools/list');
  });

  it('lists the anonymous view as public, with ANONYMOUS_MAX_AGE_S as ttlMs, over pages', async () => {
    const pages = await listAll();
    expect(pages.length).toBe(2);
    expect(names(pages)).toEqual(['open_one', 'open_three', 'open_two']);
    for (const page of pages) expect(page).toMatchObject({ cacheScope: 'public', ttlMs: 30_000 });
  });

  it("lists a token's view as private, with ttlMs 0 (its view changes with any write, and is its own)", async () => {
    const pages = await listAll(t.token(['alpha'], { sub: 'lister' }));
    expect(names(pages)).toEqual(['alpha_echo', 'open_one', 'open_three', 'open_two']);
    for (const page of pages) expect(page).toMatchObject({ cacheScope: 'private', ttlMs: 0 });
    // The same page asked for anonymously and with a token: two answers, never one shared.
    const anonymous = await post('tools/list');
    expect(anonymous.rpc?.result?.['cacheScope']).toBe('public');
  });

  it('calls a tool through the SDK, statelessly, with resultType; a hidden tool is unknown', async () => {
    const token = t.token(['alpha'], { sub: 'caller' });
    const { res, rpc } = await post('tools/call', { name: 'alpha_echo', arguments: { text: 'hi' } }, { token });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['mcp-session-id']).toBeUndefined();
    expect(rpc?.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'echo {"text":"hi"}' }] });
    expect(rpc?.result?.['isError']).toBeUndefined();
    // A tool the token may not see is as unknown as one never registered (ANONYMOUS_DISCOVERY=public).
    const hidden = await post(
      'tools/call',
      { name: 'alpha_echo', arguments: { text: 'hi' } },
      { token: t.token(['beta'], { sub: 'other' }) },
    );
    expect(hidden.res.statusCode).toBe(200);
    expect(hidden.rpc?.error).toEqual({ code: -32602, message: 'Unknown tool: alpha_echo' });
    const unknown = await post('tools/call', { name: 'no_such_tool', arguments: {} }, { token });
    expect(unknown.rpc?.error).toEqual({ code: -32602, message: 'Unknown tool: no_such_tool' });
  });

  /** A refusal of the revision: its status, and its body both the problem and the JSON-RPC error, in application/json. */
  const expectRefused = (answer: Awaited<ReturnType<typeof post>>, status: number, code: number, id: number | string = 1) => {
    expect(answer.res.statusCode, answer.res.body).toBe(status);
    // The revision's transport answers a request with application/json or an event stream only.
    expect(answer.res.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(answer.res.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      jsonrpc: '2.0',
      id,
      error: { code, message: expect.any(String) },
      status,
      code: expect.stringMatching(/^TR_ERR_/),
    });
    return String((body['error'] as { message: string }).message);
  };

  it('refuses a request whose _meta lacks the revision or the client capabilities: -32602, 400', async () => {
    // basic/index, "Per-request protocol fields": both are required; a request without them is malformed.
    expect(expectRefused(await post('server/discover', {}, { meta: {}, id: 101 }), 400, -32602, 101)).toContain(
      'io.modelcontextprotocol/protocolVersion',
    );
    const { 'io.modelcontextprotocol/protocolVersion': _version, ...withoutVersion } = meta();
    expect(expectRefused(await post('tools/list', {}, { meta: { _meta: withoutVersion } }), 400, -32602)).toContain(
      'io.modelcontextprotocol/protocolVersion',
    );
    const { 'io.modelcontextprotocol/clientCapabilities': _capabilities, ...withoutCapabilities } = meta();
    expect(expectRefused(await post('server/discover', {}, { meta: { _meta: withoutCapabilities } }), 400, -32602)).toContain(
      'io.modelcontextprotocol/clientCapabilities',
    );
    const notObject = { _meta: { ...meta(), 'io.modelcontextprotocol/clientCapabilities': 'all' } };
    expectRefused(await post('server/discover', {}, { meta: notObject }), 400, -32602);
    // clientInfo is a SHOULD: a request without it is served.
    const { 'io.modelcontextprotocol/clientInfo': _info, ...withoutInfo } = meta();
    const served = await post('server/discover', {}, { meta: { _meta: withoutInfo } });
    expect(served.res.statusCode, served.res.body).toBe(200);
  });

  it('refuses a missing Mcp-Method, and a missing or other Mcp-Name on tools/call: -32020, 400', async () => {
    const token = t.token(['alpha'], { sub: 'header-caller' });
    const call = { name: 'alpha_echo', arguments: { text: 'hi' } };
    const res = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': REVISION },
      payload: { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: meta() } },
    });
    expectRefused({ res, rpc: undefined }, 400, -32020, 7);
    expect(res.body).toContain('Mcp-Method header is required');
    // Values are case-sensitive.
    expectRefused(await post('tools/list', {}, { headers: { 'mcp-method': 'TOOLS/LIST' } }), 400, -32020);
    expect(expectRefused(await post('tools/call', call, { token, headers: { 'mcp-name': 'open_one' } }), 400, -32020)).toContain(
      'Mcp-Name',
    );
    // Without Mcp-Name (the helper sends it for tools/call; an explicit empty one is "other").
    const bare = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': REVISION,
        'mcp-method': 'tools/call',
        ...bearer(token),
      },
      payload: { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { ...call, _meta: meta() } },
    });
    expect(expectRefused({ res: bare, rpc: undefined }, 400, -32020, 8)).toContain('needs the Mcp-Name header');
    // The Base64 sentinel is decoded before comparing; a malformed one matches nothing.
    const encoded = `=?base64?${Buffer.from('alpha_echo').toString('base64')}?=`;
    const decoded = await post('tools/call', call, { token, headers: { 'mcp-name': encoded } });
    expect(decoded.res.statusCode, decoded.res.body).toBe(200);
    expect(decoded.rpc?.result).toMatchObject({ resultType: 'complete' });
    expectRefused(await post('tools/call', call, { token, headers: { 'mcp-name': '=?base64?YWxwaGFfZWNobw?=' } }), 400, -32020);
  });

  it('answers ping, which the revision removed, as a method not found: 404 with -32601', async () => {
    // Changelog, major change 5: "Remove ping"; transports: an RPC method not implemented is 404 with -32601.
    expectRefused(await post('ping', {}, { id: 9 }), 404, -32601, 9);
    expectRefused(await post('logging/setLevel', { level: 'info' }, { id: 10 }), 404, -32601, 10);
  });

  it("refuses what the revision's transport rules refuse, with its JSON-RPC errors", async () => {
    const mismatch = await post('tools/list', {}, { version: '2025-11-25' });
    expect(mismatch.res.statusCode).toBe(400);
    expect(mismatch.rpc?.error?.code).toBe(-32020);
    const method = await post('tools/list', {}, { headers: { 'mcp-method': 'tools/call' } });
    expect(method.res.statusCode).toBe(400);
    expect(method.rpc?.error?.code).toBe(-32020);
    const unsupported = await post('tools/list', {}, { version: '2099-01-01', headers: { 'mcp-protocol-version': '2099-01-01' } });
    expect(unsupported.res.statusCode).toBe(400);
    expect(unsupported.rpc?.error).toMatchObject({
      code: -32022,
      data: { requested: '2099-01-01', supported: expect.arrayContaining([REVISION]) },
    });
    // A method the revision has but the registry does not offer (it has no resources).
    const unknown = await post('resources/list', {});
    expect(unknown.res.statusCode).toBe(404);
    expect(unknown.rpc?.error?.code).toBe(-32601);
    expect(unknown.res.headers['content-type']).toMatch(/^application\/json/);
    const cursor = await post('tools/list', { cursor: 'nope' });
    expect(cursor.rpc?.error).toEqual({ code: -32602, message: 'the cursor is not one this registry gave out' });
    const note = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': REVISION },
      payload: { jsonrpc: '2.0', method: 'notifications/whatever' },
    });
    expect(note.statusCode).toBe(202);
  });

  it('leaves older revisions as they were: no resultType, ttlMs or cacheScope at 2025-11-25', async () => {
    const base = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: base,
      payload: {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: REVISION, capabilities: {}, clientInfo: { name: 'older', version: '1' } },
      },
    });
    expect(init.statusCode, init.body).toBe(200);
    // initialize does not exist at 2026-07-28: a client that sends it is negotiated down to the SDK's newest.
    expect(rpcOf(init.headers['content-type'] as string, init.body).result?.['protocolVersion']).toBe('2025-11-25');
    const headers = { ...base, 'mcp-session-id': String(init.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const listed = await t.app.inject({ method: 'POST', url: '/mcp', headers, payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });
    const result = rpcOf(listed.headers['content-type'] as string, listed.body).result;
    expect(result?.tools?.length).toBe(2);
    expect(Object.keys(result ?? {}).sort()).toEqual(['nextCursor', 'tools']);
    const discover = await t.app.inject({
      method: 'POST',
      url: '/mcp',
      headers,
      payload: { jsonrpc: '2.0', id: 2, method: 'server/discover' },
    });
    // In a 2025-11-25 session, server/discover is the SDK's unknown method, as before.
    expect(rpcOf(discover.headers['content-type'] as string, discover.body).error?.code).toBe(-32601);
  });
});
