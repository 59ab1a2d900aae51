/**
 * Issue 11: `/mcp` driven by the official SDK client over Streamable HTTP against a registry on
 * a loopback port: per-token tool lists with paging, calls through the bridge, scope refusals
 * as the MCP authorization rules say, list_changed only to the sessions whose view changed,
 * session bounds and the 401 with the metadata link.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { connect, listAll, mcpUrl, untilStreamsOpen, type McpTestClient } from './support.js';

const names = (tools: { name: string }[]) => tools.map((t) => t.name).sort();

describe('the MCP endpoint', () => {
  let t: TestApp;
  let url: URL;
  let toolHost: Server;
  let toolPort: number;
  const seenHeaders: IncomingHttpHeaders[] = [];
  const clients: McpTestClient[] = [];
  let admin: string;

  const register = async (name: string, scopes: string[], endpoint = '/echo') => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(admin),
      payload: {
        name,
        endpoint,
        scopes,
        description: `The ${name} tool`,
        parameters: { text: { type: 'string', description: 'What to echo' } },
        host: '127.0.0.1',
        port: toolPort,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  const open = async (scopes: string[], sub = `agent-${scopes.join('-') || 'none'}`) => {
    const c = await connect(url, t.token(scopes, { sub }));
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    toolHost = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seenHeaders.push(req.headers);
        const args = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { text?: string };
        if (req.url === '/fail') return res.writeHead(500, { 'content-type': 'text/plain' }).end('the tool broke');
        if (req.url === '/slow') return void setTimeout(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('late'), 300);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: args.text ?? null }));
      });
    });
    await new Promise<void>((resolve) => toolHost.listen(0, '127.0.0.1', resolve));
    toolPort = (toolHost.address() as AddressInfo).port;
    // The 403 step-up challenge is opt-in since issue 31 (in-band refusals: issue-31-refusals.test.ts).
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MCP_PAGE_SIZE: '2', MCP_SESSIONS_PER_CALLER: '3', MCP_SCOPE_CHALLENGE: 'true' });
    admin = t.token(['registry:write'], { sub: 'operator' });
    await register('public_echo', []);
    await register('alpha_echo', ['alpha']);
    await register('beta_echo', ['beta']);
    await register('alpha_beta_echo', ['alpha', 'beta']);
    await register('failing', [], '/fail');
    await register('slow_tool', [], '/slow');
    url = await mcpUrl(t.app);
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await t?.close();
    await new Promise((resolve) => toolHost?.close(resolve));
  });

  it('negotiates the newest protocol revision and advertises list_changed', async () => {
    const c = await open(['alpha']);
    expect(c.transport.protocolVersion).toBe(LATEST_PROTOCOL_VERSION);
    expect(c.client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    expect(c.client.getServerVersion()?.name).toBe('tool-registry');
  });

  it('answers a client on an older protocol revision in that revision', async () => {
    for (const revision of ['2025-06-18', '2025-03-26', '2024-11-05']) {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${t.token(['alpha'], { sub: `old-${revision}` })}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'old', version: '1' } },
        }),
      });
      expect(res.status).toBe(200);
      const data = /^data: (.*)$/m.exec(await res.text())?.[1] ?? '{}';
      expect((JSON.parse(data) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(revision);
    }
  });

  it('three tokens with different scopes list exactly what GET / shows each, over pages', async () => {
    for (const scopes of [['alpha'], ['beta'], ['registry:write']]) {
      const c = await open(scopes);
      const { tools, pages } = await listAll(c.client);
      const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(t.token(scopes)) });
      const expected = (res.json() as { tools: { name: string }[] }).tools;
      expect(names(tools)).toEqual(names(expected));
      expect(pages).toBe(Math.ceil(expected.length / 2));
    }
    const alpha = await listAll((await open(['alpha'])).client);
    expect(names(alpha.tools)).toEqual(['alpha_beta_echo', 'alpha_echo', 'failing', 'public_echo', 'slow_tool']);
    const one = alpha.tools.find((tool) => tool.name === 'alpha_echo');
    expect(one).toMatchObject({
      description: 'The alpha_echo tool',
      inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    });
  });

  it('a call goes through the bridge: the JSON answer is its text once, not a JSON string of it', async () => {
    const c = await open(['alpha']);
    const result = await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'hi' } });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: '{"echoed":"hi"}' }]);
    // The MCP client's token is not passed through to the tool host by default.
    expect(seenHeaders.at(-1)?.authorization).toBeUndefined();
    const stats = await t.app.inject({ method: 'GET', url: '/stats', headers: bearer(admin) });
    expect((stats.json() as { usage_by_tool: Record<string, number> }).usage_by_tool['alpha_echo']).toBeGreaterThanOrEqual(1);
  });

  it('streamed output reaches the client as progress notifications when it sent a progress token', async () => {
    const c = await open(['alpha']);
    const progress: { progress: number; message?: string }[] = [];
    const result = await c.client.callTool({ name: 'public_echo', arguments: { text: 'streamed' } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    expect(result.isError).toBeFalsy();
    expect(progress).toEqual([{ progress: 1, message: '{"echoed":"streamed"}' }]);
  });

  it('a tool that fails gives isError with a readable message, and the failure is audited', async () => {
    const c = await open(['alpha']);
    const result = await c.client.callTool({ name: 'failing', arguments: { text: 'x' } });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: 'text', text: 'failing failed: the tool broke' }]);
    const audit = await t.app.inject({ method: 'GET', url: '/audit?action=tool.invoke', headers: bearer(admin) });
    expect(audit.body).toContain('failing');
  });

  it("a call outside the token's scopes is HTTP 403 insufficient_scope with the scopes that would do", async () => {
    const c = await open(['alpha']);
    const err = await c.client.callTool({ name: 'beta_echo', arguments: { text: 'x' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(403);
    // The same over plain HTTP, to read the challenge.
    const sessionId = c.transport.sessionId ?? '';
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.token(['alpha'], { sub: 'agent-alpha' })}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'beta_echo', arguments: {} } }),
    });
    expect(res.status).toBe(403);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="beta"');
    expect(challenge).toMatch(/resource_metadata="[^"]*\/\.well-known\/oauth-protected-resource\/mcp"/);
  });

  it('a batch: refused from 2025-06-18 on (and when empty); before that, a call in it outside the scopes is 403 as alone', async () => {
    const c = await open(['alpha'], 'batcher');
    const headers = (version: string) => ({
      authorization: `Bearer ${t.token(['alpha'], { sub: 'batcher' })}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': c.transport.sessionId ?? '',
      'mcp-protocol-version': version,
    });
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const call = { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'beta_echo', arguments: {} } };
    for (const version of ['2025-06-18', '2025-11-25']) {
      const res = await fetch(url, { method: 'POST', headers: headers(version), body: JSON.stringify([list]) });
      expect(res.status, version).toBe(400);
      expect(((await res.json()) as { detail: string }).detail).toContain('no JSON-RPC batches');
    }
    const empty = await fetch(url, { method: 'POST', headers: headers('2025-03-26'), body: '[]' });
    expect(empty.status).toBe(400);
    const older = await fetch(url, { method: 'POST', headers: headers('2025-03-26'), body: JSON.stringify([list, call]) });
    expect(older.status).toBe(403);
    expect(older.headers.get('www-authenticate')).toContain('scope="beta"');
  });

  it('a request reusing the id of one still being answered is refused, not left hanging', async () => {
    const c = await open(['alpha'], 'id-reuser');
    const headers = {
      authorization: `Bearer ${t.token(['alpha'], { sub: 'id-reuser' })}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': c.transport.sessionId ?? '',
    };
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 'same',
      method: 'tools/call',
      params: { name: 'slow_tool', arguments: { text: 'x' } },
    });
    const first = fetch(url, { method: 'POST', headers, body });
    await new Promise((r) => setTimeout(r, 50));
    const second = await fetch(url, { method: 'POST', headers, body });
    expect(second.status).toBe(409);
    expect(((await second.json()) as { code: string }).code).toBe('TR_ERR_CONFLICT');
    const answered = await first;
    expect(answered.status).toBe(200);
    expect(await answered.text()).toContain('"text":"late"');
    // Once answered, the id is free again.
    const again = await fetch(url, { method: 'POST', headers, body });
    expect(again.status).toBe(200);
    await again.text();
  });

  it('an unknown tool is the protocol error for unknown tools', async () => {
    const c = await open(['alpha']);
    await expect(c.client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool: no_such_tool/);
  });

  it('list_changed reaches the sessions whose view a write changed, and no other', async () => {
    const alpha = await open(['alpha'], 'watcher-alpha');
    const beta = await open(['beta'], 'watcher-beta');
    // The notification stream opens once the client is connected; wait until both are held.
    await untilStreamsOpen(t.app, 2);
    const alphaNotified = alpha.nextListChanged();
    await register('alpha_only_new', ['alpha']);
    await alphaNotified;
    // A later write beta sees: beta's first notification must be for it, not for alpha's write.
    const betaNotified = beta.nextListChanged();
    await register('beta_only_new', ['beta']);
    await betaNotified;
    expect(beta.listChanged).toBe(1);
    expect(alpha.listChanged).toBe(1);
    const listed = await listAll(alpha.client);
    expect(names(listed.tools)).toContain('alpha_only_new');
    expect(names(listed.tools)).not.toContain('beta_only_new');
  });

  it('DELETE ends a session; a caller holding its share loses its least recently used session', async () => {
    const sub = 'session-hog';
    const first = await open(['alpha'], sub);
    await open(['alpha'], sub);
    await open(['alpha'], sub);
    await first.client.listTools();
    // A fourth session past MCP_SESSIONS_PER_CALLER=3 ends the least recently used: the second.
    const fourth = await open(['alpha'], sub);
    await expect(clients.at(-3)?.client.listTools()).rejects.toThrow(/404/);
    await expect(first.client.listTools()).resolves.toBeDefined();
    await fourth.transport.terminateSession();
    await expect(fourth.client.listTools()).rejects.toThrow();
  });

  it('a session answers only the caller that opened it', async () => {
    const c = await open(['alpha'], 'owner-a');
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.token(['alpha'], { sub: 'intruder' })}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': c.transport.sessionId ?? '',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it('no token or a bad token is HTTP 401 with the MCP resource-metadata link', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    for (const authorization of [undefined, 'Bearer not-a-token', `Bearer ${t.token(['alpha'])}x`]) {
      const res = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(authorization && { authorization }),
        },
        body: JSON.stringify(init),
      });
      expect(res.status).toBe(401);
      const challenge = res.headers.get('www-authenticate') ?? '';
      expect(challenge).toMatch(/^Bearer /);
      const link = /resource_metadata="([^"]+)"/.exec(challenge)?.[1] ?? '';
      expect(new URL(link).pathname).toBe('/.well-known/oauth-protected-resource/mcp');
    }
    const metadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
    expect(metadata.json()).toMatchObject({ resource: `${t.config.resource}/mcp`, scopes_supported: ['alpha', 'beta'] });
    // The SDK client surfaces it as an HTTP 401.
    await expect(connect(url, undefined)).rejects.toThrow(/401|Unauthorized/);
  });

  it('a browser origin other than the allowed ones is refused', async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.token(['alpha'])}`,
        origin: 'http://evil.example',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe('TR_ERR_ORIGIN_NOT_ALLOWED');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('a browser on an allowed origin gets CORS answers it can read, the session id included', async () => {
    const origin = t.config.publicUrl.origin;
    const preflight = await fetch(url, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, mcp-session-id' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(origin);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('Mcp-Session-Id');
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.token(['alpha'], { sub: 'browser' })}`,
        origin,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'browser', version: '1' } },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(origin);
    expect(res.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id');
    expect(res.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
    await res.text();
  });

  it("the SDK's own refusals are problem details that keep the JSON-RPC error", async () => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.token(['alpha'])}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(res.status).toBe(406);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(await res.json()).toMatchObject({ status: 406, code: 'TR_ERR_NOT_ACCEPTABLE', jsonrpc: '2.0', error: { code: -32000 } });
  });
});
