/**
 * Issue 12: `POST /tools/{name}/invoke` checks the arguments against the input schema discovery
 * serves, after the caller's checks (401/403/404/410 first) and before anything reaches the
 * tool: a 400 listing every failing field by its JSON pointer, not counted as a call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTool } from '../../src/model/descriptors.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { ORDER_INPUT, ORDER_OUTPUT, startToolHost, VALID_ORDER, type ToolHost } from '../schemas/support.js';

describe('arguments checked against the input schema (issue 12)', () => {
  let t: TestApp;
  let host: ToolHost;
  let admin: Record<string, string>;
  let agent: Record<string, string>;

  beforeAll(async () => {
    host = await startToolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    agent = bearer(t.token(['orders:write', 'calculator:use'], { sub: 'agent-7' }));
    const register = async (payload: Record<string, unknown>) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: { host: '127.0.0.1', port: host.port, ...payload },
      });
      expect(res.statusCode, res.body).toBe(201);
    };
    await register({
      name: 'place_order',
      endpoint: '/tools/order',
      description: 'Places an order',
      scopes: ['orders:write'],
      inputSchema: ORDER_INPUT,
      outputSchema: ORDER_OUTPUT,
    });
    await register({ ...seed('calculator') });
    await register({ ...seed('calculator'), name: 'retired', scopes: [] });
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/retired', headers: admin })).statusCode).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    await host.close();
  });

  const invoke = (name: string, args: unknown, headers: Record<string, string> = agent) =>
    t.app.inject({
      method: 'POST',
      url: `/tools/${name}/invoke`,
      headers: { 'content-type': 'application/json', ...headers },
      payload: JSON.stringify(args),
    });
  const calls = async () =>
    ((await t.app.inject({ method: 'GET', url: '/stats', headers: admin })).json() as { total_tool_calls: number }).total_tool_calls;

  it('forwards arguments that fit, unchanged', async () => {
    const res = await invoke('place_order', VALID_ORDER);
    expect(res.statusCode, res.body).toBe(200);
    expect(host.received.at(-1)).toEqual({ url: '/tools/order', body: VALID_ORDER });
    // Optional fields may be left out; the $ref'd customer needs only its id.
    const minimal = {
      customer: { id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70' },
      items: [{ name: 'nut', quantity: 1 }],
      contact: 'https://example.com/ada',
    };
    expect((await invoke('place_order', minimal)).statusCode).toBe(200);
    expect(host.received.at(-1)?.body).toEqual(minimal);
  });

  it('refuses arguments that do not fit with a 400 listing every failing field, and the host receives nothing', async () => {
    const received = host.received.length;
    const before = await calls();
    const res = await invoke('place_order', {
      customer: { id: 'not-a-uuid' },
      items: [
        { name: 7, quantity: 2 },
        { name: 'washer', quantity: 0, colour: 'red' },
      ],
      priority: 'urgent',
      contact: 'nobody',
      discount: 10,
    });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({
      code: 'TR_ERR_INVALID_ARGUMENTS',
      title: "The arguments do not fit the tool's input schema",
      status: 400,
    });
    expect(body.errors).toEqual([
      { path: '/discount', message: 'is not in the input schema, which allows no other properties here' },
      { path: '/customer/id', message: 'must match format "uuid"' },
      { path: '/items/0/name', message: 'must be string' },
      { path: '/items/1/colour', message: 'is not in the input schema, which allows no other properties here' },
      { path: '/items/1/quantity', message: 'must be >= 1' },
      { path: '/priority', message: 'must be one of "low", "normal", "high"' },
      { path: '/contact', message: 'must match format "email"; must match format "uri"' },
    ]);
    expect(body.detail).toContain('/items/0/name: must be string');
    expect(host.received.length).toBe(received);
    // Not a call: like arguments that are not an object, the refusal does not count.
    expect(await calls()).toBe(before);
  });

  it('names a missing required field by its own path', async () => {
    const res = await invoke('place_order', { items: [] });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      { path: '/customer', message: 'is required' },
      { path: '/items', message: 'must NOT have fewer than 1 items' },
    ]);
  });

  it('enforces the closed schema made from parameters, as served: a key it does not list is refused', async () => {
    const received = host.received.length;
    const served = (await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: agent })).json().inputSchema;
    expect(served).toMatchObject({ required: ['expression'], additionalProperties: false });
    const extra = await invoke('calculator', { expression: '1+1', precision: 2 });
    expect(extra.statusCode).toBe(400);
    expect(extra.json().errors).toEqual([
      { path: '/precision', message: 'is not in the input schema, which allows no other properties here' },
    ]);
    const wrong = await invoke('calculator', { expression: 2 });
    expect(wrong.json().errors).toEqual([{ path: '/expression', message: 'must be string' }]);
    expect((await invoke('calculator', {})).json().errors).toEqual([{ path: '/expression', message: 'is required' }]);
    expect(host.received.length).toBe(received);
    expect((await invoke('calculator', { expression: '1+1' })).statusCode).toBe(200);
  });

  it('escapes "/" and "~" in the JSON pointers of property names', async () => {
    const inputSchema = {
      type: 'object',
      properties: { 'a/b': { type: 'string' }, 'c~d': { type: 'integer' } },
      additionalProperties: false,
    };
    const put = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { name: 'odd_names', endpoint: '/x', description: 'Odd names', host: '127.0.0.1', port: host.port, inputSchema },
    });
    expect(put.statusCode, put.body).toBe(201);
    const res = await invoke('odd_names', { 'a/b': 1, 'c~d': 'x' });
    expect(res.json().errors).toEqual([
      { path: '/a~1b', message: 'must be string' },
      { path: '/c~0d', message: 'must be integer' },
    ]);
  });

  it('answers 401, 403, 404 and 410 before it looks at the arguments', async () => {
    const bad = { expression: 42, extra: true };
    expect((await invoke('calculator', bad, {})).statusCode).toBe(401);
    expect((await invoke('calculator', bad, bearer(t.token(['other:scope'])))).statusCode).toBe(403);
    expect((await invoke('no_such_tool', bad)).statusCode).toBe(404);
    expect((await invoke('retired', bad)).statusCode).toBe(410);
    expect((await invoke('calculator', bad)).statusCode).toBe(400);
  });

  it('refuses before a stream starts: the 400 is a problem, not an event', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/calculator/invoke',
      headers: { ...agent, 'content-type': 'application/json', accept: 'text/event-stream' },
      payload: JSON.stringify({ expression: [] }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().errors).toEqual([{ path: '/expression', message: 'must be string' }]);
  });

  it('checks message-bus tools against the schema made from their arguments, before the bus', async () => {
    expect(
      (await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') })).statusCode,
    ).toBe(201);
    expect(
      (await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: { ...seed('tell-joke'), scopes: [] } }))
        .statusCode,
    ).toBe(201);
    const bad = await invoke('tell-joke', { topic: ['cats'] });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([{ path: '/topic', message: 'must be string' }]);
    // Arguments that fit go on to the bus, which this registry has none of.
    expect((await invoke('tell-joke', { topic: 'cats' })).statusCode).toBe(503);
  });

  it('answers 502 for a schema stored before the check, which cannot be compiled, and forwards nothing', async () => {
    // Written straight to the store, as a registry before issue 12 would have.
    const legacy = parseTool(
      {
        ...seed('calculator'),
        name: 'legacy',
        scopes: [],
        host: '127.0.0.1',
        port: host.port,
        parameters: { tags: { type: 'array', items: { type: 'strnig' } } },
      },
      () => undefined,
    );
    t.app.store.putTool(legacy, new Date().toISOString());
    await t.restart();
    const received = host.received.length;
    const res = await invoke('legacy', { tags: ['a'] });
    expect(res.statusCode).toBe(502);
    expect(res.json().serviceError).toEqual({
      type: 'invalid-input-schema',
      message: expect.stringContaining('/properties/tags/items/type: must be one of'),
    });
    expect(host.received.length).toBe(received);
  });
});
