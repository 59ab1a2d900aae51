/**
 * Issue 28, "an outbound address policy", over HTTP: HTTP tool hosts and MCP server URLs that
 * point at link-local, cloud metadata, unspecified, multicast or broadcast addresses are
 * refused at registration (400, the field's path and the rule) in every spelling, through
 * POST /tools/register, PUT /tools/{name}, POST /import and PUT /mcp-servers/{id}; a name that
 * resolves to such an address (a test resolver) is refused at call time with
 * TR_ERR_TARGET_REFUSED, counted and audited; a tool pointing at the registry itself is refused
 * over a real listening server; OUTBOUND_ALLOW and OUTBOUND_DENY widen and narrow it; and
 * loopback tool hosts keep working.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Resolver } from '../../src/bridge/outbound-policy.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';

/** Names the tests make resolve where they like; anything else does not resolve. */
const names = new Map<string, string[]>();
const resolve: Resolver = async (name) => {
  const addresses = names.get(name);
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

/** Spellings of refused addresses, each with what the refusal names. */
const REFUSED: [host: string, rule: RegExp][] = [
  ['169.254.169.254', /cloud metadata \(169\.254\.169\.254\/32\)/],
  ['2852039166', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['0xa9fea9fe', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['0251.0376.0251.0376', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['169.254.43518', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['[::ffff:169.254.169.254]', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['[::169.254.169.254]', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['[64:ff9b::169.254.169.254]', /169\.254\.169\.254\)? port \d+ is refused.*cloud metadata/],
  ['[fd00:ec2::254]', /cloud metadata \(AWS\)/],
  ['100.100.100.200', /Alibaba/],
  ['metadata.google.internal', /cloud metadata \(Google Cloud\) \(metadata\.google\.internal\)/],
  ['METADATA.GOOGLE.INTERNAL', /metadata\.google\.internal/],
  ['metadata.goog', /metadata\.goog/],
  ['169.254.10.1', /link-local \(169\.254\.0\.0\/16\)/],
  ['[fe80::1]', /link-local \(fe80::\/10\)/],
  ['0.0.0.0', /unspecified/],
  ['0', /0\.0\.0\.0\)? port \d+ is refused.*unspecified/],
  ['[::]', /unspecified/],
  ['224.0.0.251', /multicast \(224\.0\.0\.0\/4\)/],
  ['[ff02::1]', /multicast \(ff00::\/8\)/],
  ['255.255.255.255', /broadcast/],
];

/** The loopback spellings that are the registry itself when the port is its own. */
const LOOPBACK = ['127.0.0.1', '2130706433', '0x7f.1', '017700000001', '127.1', '[::ffff:127.0.0.1]', '[::1]', 'localhost'];

interface Problem {
  code: string;
  detail: string;
  errors?: { path: string; message: string }[];
}

describe('the outbound address policy (issue 28)', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let tool: Server;
  let toolPort: number;
  let registryPort: number;
  let upstream: McpUpstream;
  let toolCalls = 0;

  beforeAll(async () => {
    tool = createServer((req, res) => {
      toolCalls++;
      req.resume();
      // A new connection each call, so that each one is checked where the name points then.
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify('42')));
    });
    await new Promise<void>((done) => tool.listen(0, '127.0.0.1', done));
    toolPort = (tool.address() as AddressInfo).port;
    upstream = await startMcpUpstream({
      tools: [
        {
          tool: { name: 'echo', description: 'Echoes.', inputSchema: { type: 'object' } },
          handler: () => ({ content: [{ type: 'text', text: 'echo' }] }),
        },
      ],
    });
    t = await createTestApp({ RATE_LIMIT_MAX: '0', RATE_LIMIT_WRITE_MAX: '0' }, { resolve });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    registryPort = (t.app.server.address() as AddressInfo).port;
    admin = bearer(t.token(['registry:write']));
  });
  afterAll(async () => {
    await t.close();
    await upstream.stop();
    await new Promise<void>((done) => tool.close(() => done()));
  });

  const httpTool = (name: string, host: string, port = toolPort) => ({
    ...seed('calculator'),
    name,
    scopes: [],
    parameters: {},
    host,
    port,
  });
  const register = (body: unknown) => t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: body as object });
  const put = (name: string, body: unknown) =>
    t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: body as object });
  const invoke = (name: string) =>
    t.app.inject({
      method: 'POST',
      url: `/tools/${name}/invoke`,
      headers: { ...bearer(t.token([], { sub: 'prober' })), 'content-type': 'application/json' },
      payload: '{}',
    });

  const expectRefused = (res: { statusCode: number; json(): unknown }, path: string, rule: RegExp) => {
    expect(res.statusCode).toBe(400);
    const problem = res.json() as Problem;
    expect(problem.code).toBe('TR_ERR_VALIDATION');
    expect(problem.errors?.[0]?.path).toBe(path);
    expect(problem.errors?.[0]?.message).toMatch(/is refused by the outbound address policy/);
    expect(problem.errors?.[0]?.message).toMatch(rule);
  };

  it.each(REFUSED)('refuses an HTTP tool on %s at registration, naming the field and the rule', async (host, rule) => {
    const res = await register(httpTool('probe', host));
    expectRefused(res, 'host', rule);
    expectRefused(await put('probe', httpTool('probe', host)), 'host', rule);
    // What was written first, then the address it was read as when that differs.
    const message = (res.json() as Problem).errors?.[0]?.message ?? '';
    expect(message.startsWith(`${host} `)).toBe(true);
    if (/^(\d+|0x[0-9a-f]+|0\d.*|169\.254\.43518|\[.*\.)$/i.test(host))
      expect(message).toMatch(/^\S+ \(read as (169\.254\.169\.254|0\.0\.0\.0)\) port/);
  });

  it.each(REFUSED)('refuses an MCP server on %s at registration', async (host, rule) => {
    const res = await t.app.inject({ method: 'PUT', url: '/mcp-servers/probe', headers: admin, payload: { url: `http://${host}/mcp` } });
    expectRefused(res, 'url', rule);
  });

  it('reads MCP URLs as the URL parser does: trailing dots, case, percent-escapes, default ports', async () => {
    for (const url of [
      'http://METADATA.google.internal./mcp',
      'https://169.254.169.254./mcp',
      'http://%31%36%39.254.169.254/mcp',
      'http://[::FFFF:A9FE:A9FE]:8080/mcp',
    ]) {
      const res = await t.app.inject({ method: 'PUT', url: '/mcp-servers/probe', headers: admin, payload: { url } });
      expectRefused(res, 'url', /metadata/);
    }
    const fine = await t.app.inject({ method: 'PUT', url: '/mcp-servers/fine', headers: admin, payload: { url: 'http://10.9.8.7:9/mcp' } });
    expect(fine.statusCode, fine.body).toBe(201);
    await t.app.inject({ method: 'DELETE', url: '/mcp-servers/fine', headers: admin });
  });

  it('refuses such tools in an import, each at its path, and writes none of the bundle', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: admin,
      payload: {
        'tool-services': [],
        tools: [httpTool('fine', '127.0.0.1'), httpTool('meta', '[::ffff:169.254.169.254]'), httpTool('gce', 'metadata.google.internal')],
      },
    });
    expect(res.statusCode).toBe(400);
    const problem = res.json() as Problem;
    expect(problem.errors?.map((e) => e.path)).toEqual(['tools.1.host', 'tools.2.host']);
    expect(problem.errors?.[1]?.message).toMatch(/cloud metadata \(Google Cloud\)/);
    expect((await t.app.inject({ method: 'GET', url: '/tools/fine', headers: admin })).statusCode).toBe(404);
  });

  it('keeps loopback and private tool hosts working', async () => {
    expect((await register(httpTool('loopback', '127.0.0.1'))).statusCode).toBe(201);
    const res = await invoke('loopback');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ result: '42' });
    // A decimal spelling of loopback on a port that is not the registry's is a tool host too.
    expect((await register(httpTool('decimal', '2130706433'))).statusCode).toBe(201);
    expect((await invoke('decimal')).statusCode).toBe(200);
    expect((await register(httpTool('private', '10.20.30.40', 9))).statusCode).toBe(201);
  });

  it("refuses a tool pointing at the registry's own listening port, in every loopback spelling", async () => {
    for (const host of LOOPBACK) {
      expectRefused(await register(httpTool('loop', host, registryPort)), 'host', /the registry's own address and port/);
    }
    expectRefused(
      await register({ ...httpTool('loop', '127.0.0.1', registryPort), endpoint: '/tools/loop/invoke' }),
      'host',
      /call the registry itself/,
    );
    const res = await t.app.inject({
      method: 'PUT',
      url: '/mcp-servers/loop',
      headers: admin,
      payload: { url: `http://localhost:${registryPort}/mcp` },
    });
    expectRefused(res, 'url', /own address/);
  });

  it('refuses at call time a name that resolves to the registry itself: one call, not a hundred nested ones', async () => {
    names.set('registry.test', ['127.0.0.1']);
    expect(
      (await register({ ...httpTool('loop', 'registry.test', registryPort), endpoint: '/tools/loop/invoke', forwardAuthorization: true }))
        .statusCode,
    ).toBe(201);
    const res = await invoke('loop');
    expect(res.statusCode, res.body).toBe(502);
    const problem = res.json() as Problem;
    expect(problem.code).toBe('TR_ERR_TARGET_REFUSED');
    expect(problem.detail).toMatch(
      /^loop cannot be called: registry\.test resolved to 127\.0\.0\.1, and port \d+ there is refused by the outbound address policy: that is the registry's own address and port/,
    );
    await vi.waitFor(async () => {
      const audit = (await t.app.inject({ method: 'GET', url: '/audit?action=tool.invoke&target=loop', headers: admin })).json() as {
        entries: { detail: string | null; status: number }[];
      };
      expect(audit.entries).toHaveLength(1);
      expect(audit.entries[0]).toMatchObject({ status: 502, detail: 'TR_ERR_TARGET_REFUSED' });
    });
  });

  it('refuses at call time a name that resolves to a refused address, and follows it when it changes (DNS rebinding)', async () => {
    names.set('tools.test', ['127.0.0.1']);
    expect((await register(httpTool('rebound', 'tools.test'))).statusCode).toBe(201);
    const before = toolCalls;
    expect((await invoke('rebound')).statusCode).toBe(200);
    expect(toolCalls).toBe(before + 1);
    names.set('tools.test', ['169.254.169.254']);
    const res = await invoke('rebound');
    expect(res.statusCode).toBe(502);
    expect(res.json()).toMatchObject({
      code: 'TR_ERR_TARGET_REFUSED',
      type: 'urn:tool-registry:error:target-refused',
      detail: expect.stringMatching(
        /tools\.test resolved to 169\.254\.169\.254, and port \d+ there is refused by the outbound address policy: cloud metadata/,
      ),
    });
    names.set('tools.test', ['::ffff:169.254.169.254']);
    expect((await invoke('rebound')).json()).toMatchObject({ code: 'TR_ERR_TARGET_REFUSED' });
    // Nothing reached the tool's host; the refusals count as failed calls.
    expect(toolCalls).toBe(before + 1);
    const stats = (await t.app.inject({ method: 'GET', url: '/stats', headers: admin })).json() as {
      errors_by_class: Record<string, unknown>;
      usage_by_tool: Record<string, unknown>;
    };
    expect(stats.errors_by_class['service-error']).toBeDefined();
    expect(stats.usage_by_tool['rebound']).toBeDefined();
  });

  it('reports an MCP server whose name resolves to a refused address as its last error, and refuses calls to its tools', async () => {
    const port = Number(new URL(upstream.url).port);
    names.set('mcp.test', ['127.0.0.1']);
    const putServer = await t.app.inject({
      method: 'PUT',
      url: '/mcp-servers/rebound',
      headers: admin,
      payload: { url: `http://mcp.test:${port}/mcp`, policy: 'auto', prefix: 'rb_' },
    });
    expect(putServer.statusCode, putServer.body).toBe(201);
    const state = async () =>
      (
        (await t.app.inject({ method: 'GET', url: '/mcp-servers/rebound', headers: admin })).json() as {
          upstream: { state: string; lastError: string | null; tools: number };
        }
      ).upstream;
    await vi.waitFor(async () => expect(await state()).toMatchObject({ state: 'connected', tools: 1 }), { timeout: 10_000 });
    expect((await invoke('rb_echo')).statusCode).toBe(200);
    // The name moves to the metadata address and the server restarts: reconnecting is refused.
    names.set('mcp.test', ['169.254.169.254']);
    await upstream.stop();
    await upstream.start();
    await vi.waitFor(
      async () => {
        const now = await state();
        expect(now.state).toBe('down');
        expect(now.lastError).toMatch(
          /mcp\.test resolved to 169\.254\.169\.254, and port \d+ there is refused by the outbound address policy: cloud metadata/,
        );
      },
      { timeout: 10_000 },
    );
    const res = await invoke('rb_echo');
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({
      code: 'TR_ERR_TARGET_REFUSED',
      detail: expect.stringMatching(/MCP server "rebound": mcp\.test resolved to 169\.254\.169\.254/),
    });
  });
});

describe('OUTBOUND_ALLOW and OUTBOUND_DENY', () => {
  const admin = (t: TestApp) => bearer(t.token(['registry:write']));
  const registerOn = (t: TestApp, host: string, name = 'probe') =>
    t.app.inject({ method: 'POST', url: '/tools/register', headers: admin(t), payload: { ...seed('calculator'), name, host, port: 8080 } });

  it('widen it: an ECS task-metadata-style host let through, the metadata address beside it still refused', async () => {
    const t = await createTestApp({ OUTBOUND_ALLOW: '169.254.170.2/32,metadata.google.internal' });
    try {
      expect((await registerOn(t, '169.254.170.2')).statusCode).toBe(201);
      expect((await registerOn(t, 'metadata.google.internal', 'gce')).statusCode).toBe(201);
      const res = await registerOn(t, '169.254.169.254', 'aws');
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ errors: [{ path: 'host', message: expect.stringMatching(/cloud metadata/) }] });
    } finally {
      await t.close();
    }
  });

  it('narrow it: only one network, at registration and at call time', async () => {
    names.set('elsewhere.test', ['127.0.0.1']);
    const t = await createTestApp({ OUTBOUND_DENY: '0.0.0.0/0,::/0,*.evil.test', OUTBOUND_ALLOW: '10.20.0.0/16' }, { resolve });
    try {
      expect((await registerOn(t, '10.20.1.2')).statusCode).toBe(201);
      const outside = await registerOn(t, '10.21.1.2', 'outside');
      expect(outside.statusCode).toBe(400);
      expect(outside.json()).toMatchObject({
        errors: [{ path: 'host', message: '10.21.1.2 port 8080 is refused by the outbound address policy: OUTBOUND_DENY has 0.0.0.0/0' }],
      });
      expect((await registerOn(t, '[::1]', 'six')).json()).toMatchObject({
        errors: [{ message: expect.stringMatching(/OUTBOUND_DENY has ::\/0/) }],
      });
      expect((await registerOn(t, 'api.evil.test', 'evil')).json()).toMatchObject({
        errors: [{ message: expect.stringMatching(/OUTBOUND_DENY has \*\.evil\.test/) }],
      });
      // A name passes registration (names are not resolved while writing); its address is checked at the call.
      expect((await registerOn(t, 'elsewhere.test', 'elsewhere')).statusCode).toBe(201);
      const call = await t.app.inject({
        method: 'POST',
        url: '/tools/elsewhere/invoke',
        headers: { ...bearer(t.token(['calculator:use'])), 'content-type': 'application/json' },
        payload: '{"expression":"1"}',
      });
      expect(call.statusCode).toBe(502);
      expect(call.json()).toMatchObject({
        code: 'TR_ERR_TARGET_REFUSED',
        detail: expect.stringMatching(
          /elsewhere\.test resolved to 127\.0\.0\.1, and port 8080 there is refused by the outbound address policy: OUTBOUND_DENY has 0\.0\.0\.0\/0/,
        ),
      });
    } finally {
      await t.close();
    }
  });
});
