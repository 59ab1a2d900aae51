/**
 * Group commit: concurrent writes share one transaction (one fsync), each in its own
 * savepoint, so a failing write rolls back alone and every write keeps its own index.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryError } from '../../src/model/errors.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

describe('group commit', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let groups = 0;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    const group = t.app.store.group.bind(t.app.store);
    t.app.store.group = (fn) => {
      groups++;
      return group(fn);
    };
  });
  afterAll(() => t.close());

  it('commits a burst of writes together; the one bad write fails alone', async () => {
    const before = t.app.catalog.index;
    groups = 0;
    const payloads = Array.from({ length: 50 }, (_, i) => ({ ...seed('calculator'), name: i === 25 ? 'bad name' : `burst-${i}` }));
    const results = await Promise.all(
      payloads.map((payload) => t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload })),
    );
    expect(results.filter((r) => r.statusCode === 201)).toHaveLength(49);
    expect(results[25]?.statusCode).toBe(400);
    expect(groups).toBeLessThan(10);
    const indexes = results.filter((r) => r.statusCode === 201).map((r) => r.json().index as number);
    expect(new Set(indexes).size).toBe(49);
    expect(t.app.catalog.index).toBe(before + 49);
    expect(t.app.store.registryIndex()).toBe(before + 49);
  });

  it('lets a tool use a service written earlier in the same batch', async () => {
    const [service, tool] = await Promise.all([
      t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') }),
      t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('tell-joke') }),
    ]);
    expect(service.statusCode, service.body).toBe(201);
    expect(tool.statusCode, tool.body).toBe(201);
  });

  it('keeps the neighbours of a refused write in the same batch committed', async () => {
    const [ok1, refused, ok2] = await Promise.all([
      t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: { ...seed('calculator'), name: 'neighbour-1' } }),
      t.app.inject({ method: 'DELETE', url: '/tool-services/joke-service', headers: admin }),
      t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: { ...seed('calculator'), name: 'neighbour-2' } }),
    ]);
    expect([ok1?.statusCode, refused?.statusCode, ok2?.statusCode]).toEqual([201, 409, 201]);
    expect(t.app.store.getService('joke-service')?.status).toBe('active');
    await t.restart();
    const names = (await t.app.inject({ method: 'GET', url: '/' })).json().tools.map((x: { name: string }) => x.name);
    expect(names).toEqual(expect.arrayContaining(['neighbour-1', 'neighbour-2', 'tell-joke', 'burst-0', 'burst-49']));
    expect(names).not.toContain('bad name');
  });

  it('tells nobody of a batch whose commit fails, refuses it, and puts the catalogue back', async () => {
    const heard: number[] = [];
    const off = t.app.changes.subscribe((index) => heard.push(index));
    const group = t.app.store.group.bind(t.app.store);
    const before = t.app.catalog.index;
    // The writes run, then the commit fails (a full disk, say): the transaction rolls back.
    t.app.store.group = (fn) =>
      group(() => {
        fn();
        throw new RegistryError('TR_ERR_UNAVAILABLE', 'the database cannot take writes right now');
      });
    try {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: { ...seed('calculator'), name: 'phantom' },
      });
      expect(res.statusCode, res.body).toBe(503);
    } finally {
      Reflect.deleteProperty(t.app.store, 'group');
      off();
    }
    expect(heard).toEqual([]);
    expect(t.app.catalog.index).toBe(before);
    expect((await t.app.inject({ method: 'GET', url: '/tools/phantom' })).statusCode).toBe(404);
    const next = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { ...seed('calculator'), name: 'after-failure' },
    });
    expect(next.json().index).toBe(before + 1);
  });
});
