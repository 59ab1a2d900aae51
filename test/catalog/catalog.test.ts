/**
 * The in-memory catalogue: views per scope set, equal views as equal bytes, the byte-bounded
 * view cache, and invalidation on write.
 */
import { describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.js';
import { lruByteCache } from '../../src/catalog/lru-byte-cache.js';
import { finish } from '../../src/catalog/steps.js';
import { parseTool } from '../../src/model/descriptors.js';
import type { ToolRecord } from '../../src/model/records.js';
import { seed } from '../helpers/fixtures.js';

function record(name: string, index: number, overrides: Record<string, unknown> = {}): ToolRecord {
  const parsed = parseTool({ ...seed('calculator'), name, ...overrides }, () => undefined);
  return { ...parsed, status: 'active', createdIndex: index, index, updatedAt: '2026-11-29T00:00:00.000Z' };
}

function catalogWith(...records: ToolRecord[]) {
  return catalogOf(1 << 20, records);
}

function catalogOf(viewCacheBytes: number, records: ToolRecord[]) {
  const catalog = new Catalog({ publicUrl: new URL('http://127.0.0.1:8006'), serviceName: 'tool-registry', viewCacheBytes });
  catalog.load({ index: records.length, services: [], tools: records });
  return catalog;
}

describe('catalogue views', () => {
  const scopes = (...s: string[]) => ({ kind: 'scopes' as const, scopes: new Set(s) });

  it('serves tokens that differ only in unrelated scopes the same bytes', () => {
    const catalog = catalogWith(record('a', 1, { scopes: ['x'] }), record('b', 2, { scopes: ['y'] }), record('open', 3, { scopes: [] }));
    const one = catalog.view(scopes('x', 'email', 'profile'));
    const two = catalog.view(scopes('x'));
    expect(one).toBe(two);
    expect(JSON.parse(one.body.toString()).tools.map((t: { name: string }) => t.name)).toEqual(['a', 'open']);
    expect(one.hidden).toBe(1);
  });

  it('gives equal views equal ETags, and different views different ones', () => {
    const catalog = catalogWith(record('a', 1, { scopes: ['x'] }), record('b', 2, { scopes: ['y'] }));
    expect(catalog.view(scopes('x')).etag).not.toBe(catalog.view(scopes('y')).etag);
    expect(catalog.view({ kind: 'all' }).etag).toBe(catalog.view(scopes('x', 'y')).etag);
    expect(catalog.view({ kind: 'public' }).body.toString()).toContain('"tools":[]');
  });

  it('rebuilds views after a write, and keeps the ETag of views the write did not touch', () => {
    const catalog = catalogWith(record('a', 1, { scopes: ['x'] }), record('b', 2, { scopes: ['y'] }));
    const xBefore = catalog.view(scopes('x'));
    const yBefore = catalog.view(scopes('y'));
    catalog.apply(3, { tools: [record('b', 3, { scopes: ['y'], description: 'changed' })] });
    const xAfter = catalog.view(scopes('x'));
    expect(xAfter).not.toBe(xBefore);
    expect(xAfter.etag).toBe(xBefore.etag);
    expect(catalog.view(scopes('y')).etag).not.toBe(yBefore.etag);
    expect(xAfter.index).toBe(3);
  });

  it('drops deleted tools from every view', () => {
    const catalog = catalogWith(record('a', 1), record('b', 2));
    catalog.apply(3, { tools: [{ ...record('a', 3), status: 'deleted' }] });
    expect(catalog.tools().map((t) => t.tool.name)).toEqual(['b']);
    expect(catalog.stats({ kind: 'all' }).total_tools).toBe(1);
  });
});

describe('view invalidation (issue 32)', () => {
  it('drops cached views after every change of the catalogue: load, apply, and a prepared write swapped or applied afresh', () => {
    const catalog = catalogWith(record('a', 1));
    const names = () => JSON.parse(catalog.view({ kind: 'all' }).body.toString()).tools.map((t: { name: string }) => t.name);
    const etags = new Set([catalog.view({ kind: 'all' }).etag]);
    catalog.apply(2, { tools: [record('b', 2)] });
    expect(names()).toEqual(['a', 'b']);
    catalog.applyPrepared(finish(catalog.prepareWrite(3, { tools: [record('c', 3)] })));
    expect(names()).toEqual(['a', 'b', 'c']);
    // Prepared on a catalogue that moved on: applied afresh, in place, and still no stale view.
    const stale = finish(catalog.prepareWrite(5, { tools: [record('e', 5)] }));
    catalog.apply(4, { tools: [record('d', 4)] });
    expect(names()).toEqual(['a', 'b', 'c', 'd']);
    expect(catalog.applyPrepared(stale).swapped).toBe(false);
    expect(names()).toEqual(['a', 'b', 'c', 'd', 'e']);
    etags.add(catalog.view({ kind: 'public' }).etag);
    catalog.load({ index: 6, services: [], tools: [record('z', 6)] });
    expect(names()).toEqual(['z']);
    expect(catalog.view({ kind: 'public' }).index).toBe(6);
    expect(etags.has(catalog.view({ kind: 'all' }).etag)).toBe(false);
  });
});

describe('LRU byte cache', () => {
  it('evicts the least recently used entries past its byte bound', () => {
    const cache = lruByteCache<{ bytes: number }>(100, (value) => value.bytes);
    const [a, b, c] = [{ bytes: 40 }, { bytes: 40 }, { bytes: 40 }];
    cache?.set('a', a);
    cache?.set('b', b);
    expect(cache?.get('a')).toBe(a);
    cache?.set('c', c);
    expect(cache?.get('b')).toBeUndefined();
    expect(cache?.get('a')).toBe(a);
    expect(cache?.get('c')).toBe(c);
    expect(cache?.calculatedSize).toBe(80);
  });

  it('does not keep an entry larger than the whole bound, and keeps nothing under a bound of 0', () => {
    const cache = lruByteCache<{ bytes: number }>(10, (value) => value.bytes);
    cache?.set('big', { bytes: 11 });
    expect(cache?.size).toBe(0);
    expect(cache?.calculatedSize).toBe(0);
    expect(lruByteCache(0, () => 1)).toBeUndefined();
  });
});

describe('searchable()', () => {
  it('holds searches while a big write is indexed in slices, and lets them go when it is, or when the catalogue is loaded again', async () => {
    const big = (from: number) => Array.from({ length: 2_500 }, (_, i) => record(`bulk_${from + i}`, 2 + from + i));
    const catalog = catalogWith(record('a', 1));
    expect(catalog.searchable()).toBeNull();

    // More tools than are indexed at once: in slices after the write.
    catalog.apply(3, { tools: big(0) });
    const indexed = catalog.searchable();
    expect(indexed).not.toBeNull();
    expect(catalog.searchBacklog).toBeGreaterThan(0);
    await indexed;
    expect(catalog.searchBacklog).toBe(0);
    expect(catalog.search('bulk_2499', 1, () => true).map((t) => t.tool.name)).toEqual(['bulk_2499']);

    // A load (a replica's resync) replaces the backlog: nobody is left waiting for it.
    catalog.apply(4, { tools: big(10_000) });
    const replaced = catalog.searchable();
    expect(replaced).not.toBeNull();
    catalog.load({ index: 5, services: [], tools: [record('b', 5)] });
    let settled = false;
    void replaced?.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(true);
    expect(catalog.searchable()).toBeNull();
  });
});

describe('view plans and bodies (issue 33)', () => {
  const scopes = (...s: string[]) => ({ kind: 'scopes' as const, scopes: new Set(s) });
  const records = () => [
    ...Array.from({ length: 10 }, (_, i) => record(`x${i}`, i + 1, { scopes: ['x'] })),
    ...Array.from({ length: 10 }, (_, i) => record(`y${i}`, i + 11, { scopes: ['y'] })),
  ];
  /** A budget that holds either view's body but not both (a cached body weighs its length and 256). */
  function tightCatalog() {
    const probe = catalogWith(...records());
    const sizes = [probe.view(scopes('x')).body.length, probe.view(scopes('y')).body.length];
    const budget = Math.max(...sizes) + 256 + 64;
    expect(budget).toBeLessThan(sizes[0]! + sizes[1]! + 512);
    return catalogOf(budget, records());
  }

  it('rebuilds a body pushed out of the byte budget from its kept plan: the same bytes and ETag, no new plan', () => {
    const catalog = tightCatalog();
    const first = catalog.view(scopes('x'));
    expect(catalog.view(scopes('x'))).toBe(first);
    catalog.view(scopes('y'));
    const again = catalog.view(scopes('x'));
    expect(again).not.toBe(first);
    expect(again.plan).toBe(first.plan);
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.body.length).toBe(first.plan.length);
    expect([again.etag, again.index, again.hidden]).toEqual([first.etag, first.index, first.hidden]);
    expect(JSON.parse(again.body.toString()).tools.map((t: { name: string }) => t.name)).toEqual(
      Array.from({ length: 10 }, (_, i) => `x${i}`),
    );
  });

  it('gives a plan without building its body, and the view built later uses that plan', () => {
    const catalog = tightCatalog();
    const plan = catalog.plan(scopes('y'));
    expect(plan.tools.map((t) => t.tool.name)).toEqual(Array.from({ length: 10 }, (_, i) => `y${i}`));
    expect(plan.hidden).toBe(10);
    const view = catalog.view(scopes('y'));
    expect(view.plan).toBe(plan);
    expect(catalog.plan(scopes('y'))).toBe(plan);
    expect(catalog.stats(scopes('y')).total_tools).toBe(10);
  });

  it('empties the plans with the bodies on every write, even one that leaves a view alone', () => {
    const catalog = tightCatalog();
    const before = catalog.view(scopes('x'));
    const yBefore = catalog.plan(scopes('y'));
    catalog.apply(21, { tools: [record('y0', 21, { scopes: ['y'], description: 'changed' })] });
    const after = catalog.view(scopes('x'));
    expect(after.plan).not.toBe(before.plan);
    expect(after.plan.index).toBe(21);
    expect(after.etag).toBe(before.etag);
    expect(after.body.equals(before.body)).toBe(true);
    expect(catalog.changedAt(scopes('x'))).toBe(before.index);
    const yAfter = catalog.view(scopes('y'));
    expect(yAfter.plan).not.toBe(yBefore);
    expect(yAfter.etag).not.toBe(yBefore.etag);
    expect(catalog.changedAt(scopes('y'))).toBe(21);
  });
});
