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
    const capped = lruByteCache<{ bytes: number }>(100, (value) => value.bytes, 30);
    capped?.set('small', { bytes: 30 });
    capped?.set('big', { bytes: 31 });
    expect([capped?.has('small'), capped?.has('big')]).toEqual([true, false]);
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
  const SCOPES = Array.from({ length: 10 }, (_, k) => `s${k}`);
  const records = () =>
    SCOPES.flatMap((scope, k) => Array.from({ length: 10 }, (_, i) => record(`${scope}_${i}`, k * 10 + i + 1, { scopes: [scope] })));
  /** The weight of one scope's cached view (its body and 256), measured on a roomy catalogue. */
  const weight = () => catalogWith(...records()).view(scopes('s0')).body.length + 256;

  it('rebuilds a body pushed out of the byte budget from its kept plan: the same bytes and ETag, no new plan', () => {
    // Nine of the ten views' bodies fit, each within an eighth of the budget.
    const catalog = catalogOf(9 * weight() + 64, records());
    const first = catalog.view(scopes('s0'));
    expect(catalog.view(scopes('s0'))).toBe(first);
    for (const scope of SCOPES.slice(1)) catalog.view(scopes(scope));
    const again = catalog.view(scopes('s0'));
    expect(again).not.toBe(first);
    expect(again.plan).toBe(first.plan);
    expect(again.body.equals(first.body)).toBe(true);
    expect(again.body.length).toBe(first.plan.length);
    expect([again.etag, again.index, again.hidden]).toEqual([first.etag, first.index, first.hidden]);
    expect(JSON.parse(again.body.toString()).tools.map((t: { name: string }) => t.name)).toEqual(
      Array.from({ length: 10 }, (_, i) => `s0_${i}`),
    );
  });

  it('keeps no body over an eighth of the budget, and copies it from the kept plan for each request', () => {
    const catalog = catalogOf(8 * weight() - 64, records());
    const first = catalog.view(scopes('s3'));
    const second = catalog.view(scopes('s3'));
    expect(second).not.toBe(first);
    expect(second.plan).toBe(first.plan);
    expect(second.body.equals(first.body)).toBe(true);
    expect(second.etag).toBe(first.etag);
  });

  it('gives a plan without building its body, and the view built later uses that plan', () => {
    const catalog = catalogWith(...records());
    const plan = catalog.plan(scopes('s1'));
    expect(plan.tools.map((t) => t.tool.name)).toEqual(Array.from({ length: 10 }, (_, i) => `s1_${i}`));
    expect(plan.hidden).toBe(90);
    const view = catalog.view(scopes('s1'));
    expect(view.plan).toBe(plan);
    expect(catalog.plan(scopes('s1'))).toBe(plan);
    expect(catalog.stats(scopes('s1')).total_tools).toBe(10);
  });

  it('empties the plans with the bodies on every write, even one that leaves a view alone', () => {
    const catalog = catalogWith(...records());
    const before = catalog.view(scopes('s0'));
    const yBefore = catalog.plan(scopes('s1'));
    catalog.apply(101, { tools: [record('s1_0', 101, { scopes: ['s1'], description: 'changed' })] });
    const after = catalog.view(scopes('s0'));
    expect(after.plan).not.toBe(before.plan);
    expect(after.plan.index).toBe(101);
    expect(after.etag).toBe(before.etag);
    expect(after.body.equals(before.body)).toBe(true);
    expect(catalog.changedAt(scopes('s0'))).toBe(before.index);
    const yAfter = catalog.view(scopes('s1'));
    expect(yAfter.plan).not.toBe(yBefore);
    expect(yAfter.etag).not.toBe(yBefore.etag);
    expect(catalog.changedAt(scopes('s1'))).toBe(101);
  });
});
