/**
 * HTTP tools called through the registry: arguments POSTed to the tool's endpoint with the
 * caller's token forwarded where the descriptor turns that on (issue 30: off by default), and
 * the error mapping.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

interface Seen {
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

describe('HTTP tools through POST /tools/{name}/invoke', () => {
  let t: TestApp;
  let server: Server;
  let port: number;
  const seen: Seen[] = [];
  let admin: Record<string, string>;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString() || 'null');
        seen.push({ url: req.url ?? '', headers: req.headers, body });
        if (req.url === '/tools/calculator') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('42'));
        if (req.url === '/tools/structured')
          return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ rows: [1, 2] }));
        if (req.url === '/tools/plain') return res.writeHead(200, { 'content-type': 'text/plain' }).end('plain text');
        if (req.url === '/tools/broken') return res.writeHead(500, { 'content-type': 'text/plain' }).end('kaputt');
        if (req.url === '/tools/slow') return void setTimeout(() => res.writeHead(200).end('late'), 2000);
        if (req.url === '/tools/cut') {
          // Promise a long answer, send part of it, then drop the connection.
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' });
          res.write('partial');
          return void setTimeout(() => res.socket?.destroy(), 20);
        }
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    t = await createTestApp({ RATE_LIMIT_MAX: '0', MAX_INFLIGHT_CALLS: '2' }, { keepLogs: true });
    admin = bearer(t.token(['registry:write']));
    const register = async (extra: Record<string, unknown>) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: { ...seed('calculator'), host: '127.0.0.1', port, ...extra },
      });
      expect(res.statusCode, res.body).toBe(201);
    };
    // The one tool here that forwards the caller's token: an operator said so (issue 30).
    await register({ forwardAuthorization: true });
    // Tools called with no arguments take none: calls are checked against the input schema (issue 12).
    const none = { scopes: [], parameters: {} };
    await register({ ...none, name: 'structured', endpoint: '/tools/structured' });
    await register({ ...none, name: 'plain', endpoint: '/tools/plain', forwardAuthorization: false });
    await register({ ...none, name: 'broken', endpoint: '/tools/broken' });
    await register({ ...none, name: 'slow', endpoint: '/tools/slow', timeoutMs: 300 });
    await register({ ...none, name: 'unreachable', endpoint: '/x', port: 1 });
    await register({ ...none, name: 'cut', endpoint: '/tools/cut' });
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const invoke = (name: string, payload: unknown, headers: Record<string, string> = {}) =>
    t.app.inject({
      method: 'POST',
      url: `/tools/${name}/invoke`,
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(payload),
    });

  it("POSTs the arguments to the endpoint with the caller's token and returns the observation", async () => {
    const token = t.token(['calculator:use'], { sub: 'safecracker' });
    const res = await invoke('calculator', { expression: '6*7' }, bearer(token));
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ tool: 'calculator', result: '42' });
    const request = seen.at(-1);
    expect(request).toMatchObject({ url: '/tools/calculator', body: { expression: '6*7' } });
    expect(request?.headers['authorization']).toBe(`Bearer ${token}`);
  });

  it('never forwards a token that carries the admin scope', async () => {
    const res = await invoke('calculator', { expression: '1' }, bearer(t.token(['calculator:use', 'registry:write'])));
    expect(res.statusCode, res.body).toBe(200);
    expect(seen.at(-1)?.headers['authorization']).toBeUndefined();
  });

  it('does not forward the token of a tool registered without forwardAuthorization (issue 30)', async () => {
    const res = await invoke('structured', {}, bearer(t.token([])));
    expect(res.statusCode, res.body).toBe(200);
    expect(seen.at(-1)?.url).toBe('/tools/structured');
    expect(seen.at(-1)?.headers['authorization']).toBeUndefined();
  });

  it('does not forward the token when the descriptor says so, and passes plain text through', async () => {
    const res = await invoke('plain', {}, bearer(t.token([])));
    expect(res.statusCode).toBe(200);
    expect(res.json().result).toBe('plain text');
    expect(seen.at(-1)?.headers['authorization']).toBeUndefined();
  });

  it('turns a JSON answer that is not a string into JSON text', async () => {
    const res = await invoke('structured', {}, bearer(t.token([])));
    expect(res.json().result).toBe('{"rows":[1,2]}');
  });

  it('maps a 5xx and an unreachable tool to 502, and a slow one to 504', async () => {
    const broken = await invoke('broken', {}, bearer(t.token([])));
    expect(broken.statusCode).toBe(502);
    expect(broken.json().serviceError).toEqual({ type: 'http-500', message: 'kaputt' });
    const unreachable = await invoke('unreachable', {}, bearer(t.token([])));
    expect(unreachable.statusCode).toBe(502);
    expect(unreachable.json().serviceError.type).toBe('tool-unreachable');
    const slow = await invoke('slow', {}, bearer(t.token([])));
    expect(slow.statusCode).toBe(504);
    const cut = await invoke('cut', {}, bearer(t.token([])));
    expect(cut.statusCode, cut.body).toBe(502);
    expect(cut.json().serviceError.type).toBe('tool-unreachable');
    // Expected in operation: warnings naming the code and the cause, without a stack.
    const failed = t.logs
      .map((line) => JSON.parse(line) as { level: number; msg: string; code?: string; detail?: string; err?: unknown })
      .filter((entry) => entry.msg === 'request failed');
    expect(failed.map((entry) => entry.code)).toEqual(expect.arrayContaining(['TR_ERR_TOOL_SERVICE', 'TR_ERR_TIMEOUT']));
    for (const entry of failed) {
      expect(entry.level, JSON.stringify(entry)).toBe(40);
      expect(entry.err).toBeUndefined();
      expect(entry.detail).toMatch(/failed: |no answer within/);
    }
  });

  it('refuses calls past MAX_INFLIGHT_CALLS with 503 and Retry-After', async () => {
    const token = bearer(t.token([]));
    const results = await Promise.all([invoke('slow', {}, token), invoke('slow', {}, token), invoke('slow', {}, token)]);
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([503, 504, 504]);
    const refused = results.find((r) => r.statusCode === 503);
    expect(refused?.headers['retry-after']).toBe('1');
    expect(refused?.json().code).toBe('TR_ERR_TOO_MANY_CALLS');
  });

  it('checks scopes at call time for HTTP tools too', async () => {
    expect((await invoke('calculator', { expression: '1' })).statusCode).toBe(401);
    expect((await invoke('calculator', { expression: '1' }, bearer(t.token(['file_reader:use'])))).statusCode).toBe(403);
  });
});
