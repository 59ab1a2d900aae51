/**
 * The tool-services specification's two-tier examples: services with queues, tools on them
 * with config values, validation across kinds, and what discovery shows of them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

describe('two-tier message-bus tools', () => {
  let t: TestApp;
  let admin: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ PUBLIC_URL: 'https://registry.example.test:9443/api' });
    admin = bearer(t.token(['registry:write']));
  });
  afterAll(() => t.close());

  const put = (url: string, payload: unknown) => t.app.inject({ method: 'PUT', url, headers: admin, payload: payload as object });
  const register = (payload: unknown) =>
    t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: payload as object });

  it('expands the short topic form to the tg request and response queues', async () => {
    const res = await put('/tool-services/joke-service', seed('joke-service.topic-form'));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().descriptor).toEqual(seed('joke-service'));
    const again = await put('/tool-services/joke-service', seed('joke-service'));
    expect(again.statusCode).toBe(200);
  });

  it('registers tell-joke with its style config value, shown without queues or config', async () => {
    const res = await register(seed('tell-joke'));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().descriptor).toMatchObject({ style: 'pun', service: 'joke-service' });
    const discovery = await t.app.inject({ method: 'GET', url: '/' });
    const text = discovery.body;
    expect(text).not.toContain('non-persistent://');
    expect(text).not.toContain('"style"');
    const tool = discovery.json().tools.find((x: { name: string }) => x.name === 'tell-joke');
    expect(tool).toMatchObject({
      kind: 'tool-service',
      endpoint: '/api/tools/tell-joke/invoke',
      host: 'registry.example.test',
      port: 9443,
      scopes: [],
      parameters: { topic: { type: 'string' } },
      inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
    });
  });

  it('registers two tools on one service with different collection values', async () => {
    expect((await put('/tool-services/custom-rag', seed('custom-rag'))).statusCode).toBe(201);
    for (const name of ['query-customers', 'query-products']) {
      const res = await register(seed(name));
      expect(res.statusCode, res.body).toBe(201);
    }
    const customers = await t.app.inject({ method: 'GET', url: '/tools/query-customers', headers: admin });
    const products = await t.app.inject({ method: 'GET', url: '/tools/query-products', headers: admin });
    expect(customers.json().descriptor.collection).toBe('customers');
    expect(products.json().descriptor.collection).toBe('products');
  });

  it('refuses a tool that omits the required collection, naming it', async () => {
    const { collection: _omitted, ...withoutCollection } = seed('query-customers');
    const res = await register({ ...withoutCollection, name: 'query-orders' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json().errors).toEqual([expect.objectContaining({ path: 'collection' })]);
    expect(res.json().detail).toContain('collection');
  });

  it('requires a config param even when its name is an Object.prototype member', async () => {
    expect(
      (await put('/tool-services/proto', { id: 'proto', topic: 'proto', 'config-params': [{ name: 'constructor', required: true }] }))
        .statusCode,
    ).toBe(201);
    const res = await register({ type: 'tool-service', name: 'proto-tool', description: 'x', service: 'proto', arguments: [] });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ path: 'constructor' });
    expect((await t.app.inject({ method: 'DELETE', url: '/tool-services/proto', headers: admin })).statusCode).toBe(200);
  });

  it('refuses an unknown service', async () => {
    const res = await register({ ...seed('tell-joke'), name: 'orphan', service: 'no-such-service' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ path: 'service' });
    expect(res.json().detail).toContain('no-such-service');
  });

  it('refuses a typo in a config key instead of passing it silently', async () => {
    const { style: _s, ...rest } = seed('tell-joke');
    const res = await register({ ...rest, name: 'typo-joke', stlye: 'pun' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0]).toMatchObject({ path: 'stlye' });
  });

  it('keeps group, state and applicable-states as given and shows them', async () => {
    const res = await register({
      ...seed('tell-joke'),
      name: 'stateful-joke',
      group: ['fun'],
      state: 'joking',
      'applicable-states': ['idle'],
    });
    expect(res.statusCode, res.body).toBe(201);
    const one = (await t.app.inject({ method: 'GET', url: '/tools/stateful-joke' })).json();
    expect(one).toMatchObject({ group: ['fun'], state: 'joking', 'applicable-states': ['idle'] });
  });

  it('keeps names unique across both kinds', async () => {
    const res = await register({ ...seed('calculator'), name: 'tell-joke' });
    expect(res.statusCode).toBe(200);
    const one = (await t.app.inject({ method: 'GET', url: '/tools/tell-joke', headers: admin })).json();
    expect(one.kind).toBe('http');
    const all = (await t.app.inject({ method: 'GET', url: '/' })).json().tools.filter((x: { name: string }) => x.name === 'tell-joke');
    expect(all).toHaveLength(1);
    expect((await register(seed('tell-joke'))).statusCode).toBe(200);
  });

  it('refuses to delete a service that tools still use, naming them', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/tool-services/custom-rag', headers: admin });
    expect(res.statusCode).toBe(409);
    expect(res.json().tools).toEqual(['query-customers', 'query-products']);
    expect(res.json().detail).toContain('query-customers');
  });

  it('refuses a service change that would break its tools, and changes nothing', async () => {
    const stricter = {
      ...seed('joke-service'),
      'config-params': [
        { name: 'style', required: false },
        { name: 'language', required: true },
      ],
    };
    const res = await put('/tool-services/joke-service', stricter);
    expect(res.statusCode).toBe(409);
    const stored = (await t.app.inject({ method: 'GET', url: '/tool-services/joke-service', headers: admin })).json();
    expect(stored.descriptor).toEqual(seed('joke-service'));
  });

  it('deletes tools then the service, leaving nothing listed', async () => {
    for (const name of ['query-customers', 'query-products']) {
      const res = await t.app.inject({ method: 'DELETE', url: `/tools/${name}`, headers: admin });
      expect(res.statusCode).toBe(200);
      expect(res.json().status).toBe('deleted');
    }
    const res = await t.app.inject({ method: 'DELETE', url: '/tool-services/custom-rag', headers: admin });
    expect(res.statusCode).toBe(200);
    const services = (await t.app.inject({ method: 'GET', url: '/tool-services', headers: admin })).json();
    expect(services.toolServices.map((s: { id: string }) => s.id)).toEqual(['joke-service']);
    expect((await t.app.inject({ method: 'GET', url: '/tools/query-customers' })).statusCode).toBe(404);
  });

  it('accepts bare-string config params as not required', async () => {
    const res = await put('/tool-services/lenient', { id: 'lenient', topic: 'lenient', 'config-params': ['collection'] });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().descriptor['config-params']).toEqual([{ name: 'collection', required: false }]);
    const tool = await register({ type: 'tool-service', name: 'lenient-tool', description: 'x', service: 'lenient', arguments: [] });
    expect(tool.statusCode, tool.body).toBe(201);
  });

  it('hides tool services from callers without the admin scope', async () => {
    const anonymous = await t.app.inject({ method: 'GET', url: '/tool-services' });
    expect(anonymous.statusCode).toBe(401);
    const user = await t.app.inject({ method: 'GET', url: '/tool-services/joke-service', headers: bearer(t.token(['calculator:use'])) });
    expect(user.statusCode).toBe(403);
    expect(user.body).not.toContain('non-persistent://');
  });
});
