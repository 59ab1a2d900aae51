/**
 * Issue 30's "`deprecated` carried through", on issue 34's deprecation: an operation the document
 * marks deprecated is a deprecated tool (status, record, `Deprecation` header) that still works;
 * the document dropping the mark lifts it; a deprecation an operator set stays across rewrites.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const ok = { '200': { description: 'ok' } };
const document = (oldDeprecated: boolean) => ({
  openapi: '3.1.0',
  info: { title: 'Versions', version: '1' },
  servers: [{ url: 'https://api.example.com' }],
  paths: {
    '/v1/items': { get: { operationId: 'listItemsV1', ...(oldDeprecated && { deprecated: true }), responses: ok } },
    '/v2/items': { get: { operationId: 'listItems', responses: ok } },
  },
});

describe('OpenAPI sources: deprecated operations (issues 30 and 34)', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
  });
  afterAll(() => t.close());

  const put = (oldDeprecated: boolean) =>
    t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/items',
      headers: admin,
      payload: { prefix: 'it_', document: document(oldDeprecated) },
    });
  const tool = (name: string) => t.app.inject({ method: 'GET', url: `/tools/${name}`, headers: admin });

  it('deprecates the tool of a deprecated operation, and lifts it when the document no longer says so', async () => {
    expect((await put(true)).statusCode).toBe(201);
    const old = await tool('it_listItemsV1');
    expect(old.json()).toMatchObject({
      status: 'deprecated',
      deprecation: { reason: 'The OpenAPI document marks this operation deprecated.' },
    });
    expect(old.headers['deprecation']).toMatch(/^@\d+$/);
    expect((await tool('it_listItems')).json().status).toBe('active');
    // The same document again writes the source only: its tools are as they were.
    const index = t.app.catalog.index;
    const written = old.json().index as number;
    expect((await put(true)).statusCode).toBe(200);
    expect((await tool('it_listItemsV1')).json().index).toBe(written);
    expect(t.app.catalog.index).toBe(index + 1);
    expect((await put(false)).statusCode).toBe(200);
    const lifted = await tool('it_listItemsV1');
    expect(lifted.json().status).toBe('active');
    expect(lifted.headers['deprecation']).toBeUndefined();
  });

  it("keeps an operator's deprecation of a source's tool across the source's rewrites", async () => {
    const set = await t.app.inject({
      method: 'PUT',
      url: '/tools/it_listItemsV1/deprecation',
      headers: admin,
      payload: { replacement: 'it_listItems', reason: 'use v2' },
    });
    expect(set.statusCode, set.body).toBe(200);
    expect((await put(false)).statusCode).toBe(200);
    expect((await put(true)).statusCode).toBe(200);
    expect((await tool('it_listItemsV1')).json()).toMatchObject({
      status: 'deprecated',
      deprecation: { replacement: 'it_listItems', reason: 'use v2' },
    });
  });
});
