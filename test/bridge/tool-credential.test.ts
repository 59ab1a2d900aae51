/**
 * Issue 30's "outbound credentials per tool": `PUT /tools/{name}/credential` on an HTTP tool
 * registered by hand. The host (a real HTTP server on loopback) gets the registry's credential,
 * never the caller's token, even where the tool forwards authorization; the secret is never in a
 * read, an export, the log or the database file in clear; it goes only to the origin it was set
 * for, and leaves with the tool.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const SECRET = 'tool-own-secret-4711';

async function recordingHost(): Promise<{ server: Server; url: string; seen: IncomingHttpHeaders[] }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

describe("an HTTP tool's own credential (issue 30)", () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let host: Awaited<ReturnType<typeof recordingHost>>;
  let other: Awaited<ReturnType<typeof recordingHost>>;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' }, { keepLogs: true });
    admin = bearer(t.token(['registry:write'], { sub: 'operator' }));
    host = await recordingHost();
    other = await recordingHost();
  });
  afterAll(async () => {
    await t.close();
    for (const h of [host, other]) await new Promise<void>((r) => h.server.close(() => r()));
  });

  const register = async (baseUrl: string) => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/tools/weather',
      headers: admin,
      payload: {
        description: 'The weather.',
        scopes: [],
        forwardAuthorization: true,
        target: { baseUrl, method: 'GET', path: '/weather' },
      },
    });
    expect(res.statusCode, res.body).toBeLessThan(300);
  };
  const invoke = (token: string) => t.app.inject({ method: 'POST', url: '/tools/weather/invoke', headers: bearer(token), payload: {} });
  const credential = (method: 'PUT' | 'GET' | 'DELETE', payload?: object, headers = admin) =>
    t.app.inject({ method, url: '/tools/weather/credential', headers, ...(payload && { payload }) });

  it('sends the registry’s key to the tool’s host instead of the caller’s token, and shows it masked', async () => {
    await register(host.url);
    const caller = t.token([], { sub: 'agent' });
    // Before: the tool forwards the caller's token (the operator turned that on).
    await invoke(caller);
    expect(host.seen.at(-1)?.authorization).toBe(`Bearer ${caller}`);

    const set = await credential('PUT', { apiKey: SECRET, in: 'header', name: 'X-API-Key' });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toEqual({
      tool: 'weather',
      credential: { kind: 'apiKey', in: 'header', name: 'X-API-Key', set: true },
      origin: host.url,
      updatedAt: expect.any(String),
    });
    const called = await invoke(caller);
    expect(called.statusCode, called.body).toBe(200);
    const headers = host.seen.at(-1);
    expect(headers?.['x-api-key']).toBe(SECRET);
    expect(headers?.authorization).toBeUndefined();
    expect(JSON.stringify(host.seen.at(-1))).not.toContain(caller);

    // Never in a read, an export, the log, the audit or the database file in clear.
    const reads = [
      await credential('GET'),
      await t.app.inject({ method: 'GET', url: '/tools/weather', headers: admin }),
      await t.app.inject({ method: 'GET', url: '/', headers: admin }),
      await t.app.inject({ method: 'GET', url: '/export', headers: admin }),
      await t.app.inject({ method: 'GET', url: '/audit?limit=50', headers: admin }),
    ];
    expect(reads[0]?.json().credential).toEqual({ kind: 'apiKey', in: 'header', name: 'X-API-Key', set: true });
    for (const read of reads) expect(read.body).not.toContain(SECRET);
    expect(t.logs.join('\n')).not.toContain(SECRET);
    const files = ['registry.db', 'registry.db-wal'].map((f) => {
      try {
        return readFileSync(`${t.dir}/${f}`).toString('latin1');
      } catch {
        return '';
      }
    });
    expect(files.join('')).not.toContain(SECRET);
    const audit = (reads[4]?.json().entries as { action: string; detail: string | null }[]).find((e) => e.action === 'tool.credential.put');
    expect(audit?.detail).toBe(`apiKey for ${host.url}`);
  });

  it('sends it nowhere once the tool points at another origin, until it is set again', async () => {
    await register(other.url);
    const before = other.seen.length;
    const refused = await invoke(t.token([]));
    expect(refused.statusCode).toBe(502);
    expect(refused.json().code).toBe('TR_ERR_UPSTREAM_CREDENTIAL');
    expect(refused.json().detail).toContain(`not ${host.url}`);
    expect(other.seen.length).toBe(before);
    expect((await credential('PUT', { bearer: SECRET })).json().origin).toBe(other.url);
    expect((await invoke(t.token([]))).statusCode).toBe(200);
    expect(other.seen.at(-1)?.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('leaves with the tool, needs the admin scope, and is only for HTTP tools not of a source', async () => {
    expect((await credential('GET', undefined, bearer(t.token([])))).statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/tools/weather/credential' })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/weather', headers: admin })).statusCode).toBe(200);
    expect((await credential('GET')).statusCode).toBe(404);
    await register(other.url);
    expect((await credential('GET')).statusCode).toBe(404);
    expect((await credential('DELETE')).statusCode).toBe(404);
    expect((await credential('PUT', { bearer: SECRET })).statusCode).toBe(200);
    expect((await credential('DELETE')).json()).toEqual({ tool: 'weather', deleted: true });
    expect((await invoke(t.token([]))).statusCode).toBe(200);
    expect(other.seen.at(-1)?.authorization).toMatch(/^Bearer ey/);

    const source = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/src',
      headers: admin,
      payload: {
        prefix: 'src_',
        document: {
          openapi: '3.1.0',
          info: { title: 'S', version: '1' },
          servers: [{ url: other.url }],
          paths: { '/a': { get: { operationId: 'a', responses: { '200': { description: 'ok' } } } } },
        },
      },
    });
    expect(source.statusCode, source.body).toBe(201);
    const ofSource = await t.app.inject({ method: 'PUT', url: '/tools/src_a/credential', headers: admin, payload: { bearer: SECRET } });
    expect(ofSource.statusCode).toBe(409);
    expect(ofSource.json().detail).toContain('OpenAPI source "src"');
    expect(
      (await t.app.inject({ method: 'PUT', url: '/tools/nope/credential', headers: admin, payload: { bearer: 'x' } })).statusCode,
    ).toBe(404);
    const bad = await credential('PUT', { apiKey: SECRET, in: 'body', name: 'k' });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).not.toContain(SECRET);
  });
});
