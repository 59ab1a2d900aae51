/**
 * Issue 31: the article's `parameters` map that GET / derives from a declared `inputSchema`
 * keeps `enum` and `items`, beside `type`, `description` and `required` as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

describe('parameters derived from an inputSchema (issue 31)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(t.token(['registry:write'], { sub: 'operator' })),
      payload: {
        name: 'sorter',
        description: 'Sorts words',
        endpoint: '/sort',
        host: 'localhost',
        port: 8010,
        scopes: [],
        inputSchema: {
          type: 'object',
          properties: {
            order: { type: 'string', enum: ['asc', 'desc'], description: 'Which way' },
            words: { type: 'array', items: { type: 'string', minLength: 1 } },
          },
          required: ['words'],
        },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const refs = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(t.token(['registry:write'], { sub: 'operator' })),
      payload: {
        name: 'picker',
        description: 'Picks by local references',
        endpoint: '/pick',
        host: 'localhost',
        port: 8010,
        scopes: [],
        inputSchema: {
          type: 'object',
          $defs: { Size: { type: 'number' }, 'a/b': { type: 'integer' }, 'with space': { type: 'boolean' } },
          properties: {
            size: { $ref: '#/$defs/Size' },
            slashed: { $ref: '#/$defs/a~1b' },
            spaced: { $ref: '#/$defs/with%20space' },
          },
        },
      },
    });
    expect(refs.statusCode, refs.body).toBe(201);
  });
  afterAll(() => t.close());

  it('carries enum and items into GET /', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    const tool = (res.json() as { tools: { name: string; parameters: unknown }[] }).tools.find((x) => x.name === 'sorter');
    expect(tool?.parameters).toEqual({
      order: { type: 'string', description: 'Which way', enum: ['asc', 'desc'], required: false },
      words: { type: 'array', items: { type: 'string', minLength: 1 } },
    });
  });

  it('types a property by the JSON pointer of its local $ref, escaped and percent-encoded segments too', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    const tool = (res.json() as { tools: { name: string; parameters: Record<string, { type?: string }> }[] }).tools.find(
      (x) => x.name === 'picker',
    );
    expect(tool?.parameters['size']?.type).toBe('number');
    expect(tool?.parameters['slashed']?.type).toBe('integer');
    expect(tool?.parameters['spaced']?.type).toBe('boolean');
  });
});
