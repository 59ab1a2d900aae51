/**
 * Issue 34: a deprecated tool still answers calls until its sunset, with the deprecation headers,
 * and /stats counts those calls; past the sunset a call is 410.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

let server: Server;
let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify('ok')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  admin = bearer(t.token(['registry:write']));
  for (const name of ['echo', 'echo_v2']) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { name, description: `The ${name} tool`, host: '127.0.0.1', port, endpoint: '/echo', scopes: [], parameters: {} },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
});
afterAll(async () => {
  await t.close();
  server.close();
});

const invoke = (name: string) => t.app.inject({ method: 'POST', url: `/tools/${name}/invoke`, headers: bearer(t.token([])), payload: {} });

describe('calls to a deprecated tool', () => {
  it('work until the sunset, carry the headers and count in /stats; then 410', async () => {
    const sunset = new Date(Date.now() + 1500).toISOString();
    const set = await t.app.inject({
      method: 'PUT',
      url: '/tools/echo/deprecation',
      headers: admin,
      payload: { sunset, replacement: 'echo_v2' },
    });
    expect(set.statusCode, set.body).toBe(200);
    const call = await invoke('echo');
    expect(call.statusCode, call.body).toBe(200);
    expect(call.headers['deprecation']).toMatch(/^@\d+$/);
    expect(call.headers['sunset']).toBe(new Date(sunset).toUTCString());
    expect(call.headers['link']).toMatch(/\/tools\/echo_v2>; rel="successor-version"$/);
    expect((await invoke('echo_v2')).headers['deprecation']).toBeUndefined();
    const stats = (await t.app.inject({ method: 'GET', url: '/stats', headers: admin })).json();
    expect(stats.deprecated_tool_calls).toBe(1);
    expect(stats.deprecated_calls_by_tool).toEqual({ echo: 1 });
    expect(stats.total_tool_calls).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const gone = await invoke('echo');
    expect(gone.statusCode).toBe(410);
    expect(gone.json().code).toBe('TR_ERR_GONE');
  });
});
