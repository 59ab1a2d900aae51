/**
 * Bulk import: one transaction, all or nothing, and the seed bundle in examples/ imports as given.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bearer, createTestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

describe('POST /import', () => {
  it('imports services and tools under one registry index, and export gives them back', async () => {
    const t = await createTestApp();
    try {
      const admin = bearer(t.token(['registry:write']));
      const bundle = {
        'tool-services': [seed('joke-service.topic-form'), seed('custom-rag')],
        tools: [
          'tell-joke',
          'query-customers',
          'query-products',
          'calculator',
          'file_reader',
          'database_query',
          'simulation_data',
          'weather_forecast',
        ].map(seed),
      };
      const res = await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: bundle });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ index: 1, toolServices: { created: 2, replaced: 0 }, tools: { created: 8, replaced: 0 } });
      const view = (await t.app.inject({ method: 'GET', url: '/' })).json();
      expect(view.tools).toHaveLength(8);
      expect(new Set(view.tools.map((x: { index: number }) => x.index))).toEqual(new Set([1]));
      const exported = (await t.app.inject({ method: 'GET', url: '/export', headers: admin })).json();
      expect(exported['tool-services']).toEqual([seed('custom-rag'), seed('joke-service')]);
      expect(exported.tools.map((x: { name: string }) => x.name)).toEqual([
        'calculator',
        'database_query',
        'file_reader',
        'query-customers',
        'query-products',
        'simulation_data',
        'tell-joke',
        'weather_forecast',
      ]);
      const again = await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: exported });
      expect(again.json()).toMatchObject({ index: 2, toolServices: { created: 0, replaced: 2 }, tools: { created: 0, replaced: 8 } });
      // An import with nothing in it writes nothing: the index and the view's ETag stay.
      const etag = (await t.app.inject({ method: 'GET', url: '/' })).headers['etag'];
      for (const empty of [{}, { tools: [], 'tool-services': [] }]) {
        const none = await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: empty });
        expect(none.json()).toEqual({ index: 2, toolServices: { created: 0, replaced: 0 }, tools: { created: 0, replaced: 0 } });
      }
      const after = await t.app.inject({ method: 'GET', url: '/' });
      expect(after.headers['etag']).toBe(etag);
      expect(after.headers['x-registry-index']).toBe('2');
    } finally {
      await t.close();
    }
  });

  it('writes nothing when one entry is bad, and reports every problem with its path', async () => {
    const t = await createTestApp();
    try {
      const admin = bearer(t.token(['registry:write']));
      const { collection: _c, ...noCollection } = seed('query-products');
      const res = await t.app.inject({
        method: 'POST',
        url: '/import',
        headers: admin,
        payload: {
          'tool-services': [seed('custom-rag')],
          tools: [seed('calculator'), seed('query-customers'), noCollection, seed('calculator')],
        },
      });
      expect(res.statusCode).toBe(400);
      const paths = res.json().errors.map((e: { path: string }) => e.path);
      expect(paths).toEqual(['tools.2.collection', 'tools.3.name']);
      const view = (await t.app.inject({ method: 'GET', url: '/' })).json();
      expect(view.tools).toEqual([]);
      expect((await t.app.inject({ method: 'GET', url: '/tool-services', headers: admin })).json().toolServices).toEqual([]);
    } finally {
      await t.close();
    }
  });

  it('imports examples/seed.json, the seed descriptors ready to import', async () => {
    const t = await createTestApp();
    try {
      const bundle = JSON.parse(readFileSync(new URL('../../examples/seed.json', import.meta.url), 'utf8'));
      const res = await t.app.inject({ method: 'POST', url: '/import', headers: bearer(t.token(['registry:write'])), payload: bundle });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ toolServices: { created: 2 }, tools: { created: 8 } });
    } finally {
      await t.close();
    }
  });

  it('needs the admin scope', async () => {
    const t = await createTestApp();
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/import',
        headers: bearer(t.token(['calculator:use'])),
        payload: { tools: [seed('calculator')] },
      });
      expect(res.statusCode).toBe(403);
      expect((await t.app.inject({ method: 'GET', url: '/' })).json().tools).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
