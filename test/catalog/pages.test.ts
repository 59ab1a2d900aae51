/**
 * Pages walked from the catalogue's indexes: pinned name-order walks keep their guarantees
 * whatever happens during them (names deleted and registered again any number of times, a
 * restart between pages), views merge their scope indexes without repeats, and `updated_since`
 * walks go in change order across writes that change many tools at once.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.js';
import { CatalogListing } from '../../src/catalog/listing.js';
import type { ToolLifeEvent } from '../../src/catalog/history.js';
import { SortedNames } from '../../src/catalog/sorted-names.js';
import { finish } from '../../src/catalog/steps.js';
import { walkView } from '../../src/catalog/walk.js';
import { parseTool } from '../../src/model/descriptors.js';
import type { ToolRecord } from '../../src/model/records.js';
import type { ViewKey } from '../../src/model/visibility.js';
import { seed } from '../helpers/fixtures.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const PUBLIC_URL = new URL('http://127.0.0.1:8006');
const NAMES = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet'];
/** Each name keeps its scopes, so whether it is in a view never changes during a walk. */
const scopesOf = (name: string): string[] => [[], ['x'], ['y'], ['x', 'y']][name.charCodeAt(0) % 4] as string[];

/** A registry in miniature: records as the store would write them, and the change history. */
class Model {
  index = 0;
  live = new Map<string, ToolRecord>();
  tombstones = new Map<string, ToolRecord>();
  history: ToolLifeEvent[] = [];
  /** Every span during which each name was live. */
  lives = new Map<string, [number, number][]>();

  put(name: string, description = `tool ${name}`): ToolRecord {
    const index = ++this.index;
    const parsed = parseTool({ ...seed('calculator'), name, description, scopes: scopesOf(name) }, () => undefined);
    const createdIndex = this.live.get(name)?.createdIndex ?? index;
    const record: ToolRecord = {
      ...parsed,
      status: 'active',
      createdIndex,
      index,
      updatedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
    };
    if (!this.live.has(name)) this.lives.set(name, [...(this.lives.get(name) ?? []), [index, Infinity]]);
    this.live.set(name, record);
    this.tombstones.delete(name);
    this.history.push({ name, index, op: 'upsert' });
    return record;
  }

  delete(name: string): ToolRecord | undefined {
    const live = this.live.get(name);
    if (!live) return undefined;
    const index = ++this.index;
    const record: ToolRecord = { ...live, status: 'deleted', index, updatedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString() };
    this.live.delete(name);
    this.tombstones.set(name, record);
    const spans = this.lives.get(name) as [number, number][];
    (spans.at(-1) as [number, number])[1] = index;
    this.history.push({ name, index, op: 'delete' });
    return record;
  }

  existedAt(name: string, index: number): boolean {
    return (this.lives.get(name) ?? []).some(([from, until]) => from <= index && index < until);
  }

  /** What the store would load at startup. */
  snapshot() {
    const deleted = new Set(this.history.filter((e) => e.op === 'delete').map((e) => e.name));
    return {
      index: this.index,
      services: [],
      tools: [...this.live.values()],
      tombstones: [...this.tombstones.values()],
      toolHistory: this.history.filter((e) => deleted.has(e.name)),
    };
  }
}

function catalogOf(model: Model) {
  const catalog = new Catalog({ publicUrl: PUBLIC_URL, serviceName: 'tool-registry', viewCacheBytes: 1 << 20 });
  catalog.load(model.snapshot());
  return { catalog, listing: new CatalogListing(catalog, PUBLIC_URL) };
}

const visible = (name: string, key: ViewKey) =>
  key.kind === 'all' || scopesOf(name).length === 0 || (key.kind === 'scopes' && scopesOf(name).some((s) => key.scopes.has(s)));

type Step = { op: 'put'; name: string } | { op: 'delete'; name: string } | { op: 'page'; limit: number } | { op: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant('put' as const), name: fc.constantFrom(...NAMES) }),
  fc.record({ op: fc.constant('delete' as const), name: fc.constantFrom(...NAMES) }),
  fc.record({ op: fc.constant('page' as const), limit: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ op: fc.constant('restart' as const) }),
);

describe('pinned walks in name order', () => {
  it('serve every name that existed at the pin exactly once, in order, whatever happens between pages', () => {
    const keys: ViewKey[] = [
      { kind: 'all' },
      { kind: 'public' },
      { kind: 'scopes', scopes: new Set(['x']) },
      { kind: 'scopes', scopes: new Set(['x', 'y', 'unknown']) },
    ];
    fc.assert(
      fc.property(
        fc.subarray(NAMES, { minLength: 1 }),
        fc.array(step, { maxLength: 60 }),
        fc.constantFrom(...keys),
        (initial, steps, key) => {
          const model = new Model();
          for (const name of initial) model.put(name);
          let { catalog, listing } = catalogOf(model);
          // A walk is pinned to the registry index of its first page.
          let pin: number | undefined;
          const served: { name: string; status: string }[] = [];
          let cursor: string | undefined;
          let done = false;
          const page = (limit: number) => {
            if (done) return;
            pin ??= catalog.index;
            const result = listing.list(key, { limit, cursor });
            // Each as it is when served: live, or a tombstone when deleted since the pin.
            for (const t of result.tools) expect(t.status).toBe(model.live.has(t.name) ? 'active' : 'deleted');
            served.push(...result.tools.map((t) => ({ name: t.name, status: t.status })));
            if (result.nextCursor === null) done = true;
            else cursor = result.nextCursor;
          };
          for (const s of steps) {
            if (s.op === 'put') catalog.apply(model.index + 1, { tools: [model.put(s.name)] });
            else if (s.op === 'delete') {
              const record = model.delete(s.name);
              if (record) catalog.apply(record.index, { tools: [record] });
            } else if (s.op === 'page') page(s.limit);
            else ({ catalog, listing } = catalogOf(model));
          }
          while (!done) page(3);
          const names = served.map((s) => s.name);
          const expected = NAMES.filter((n) => model.existedAt(n, pin as number) && visible(n, key)).sort();
          expect(names).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('merge the scope indexes of a view without repeats, from any name', () => {
    const model = new Model();
    for (const name of NAMES) model.put(name);
    const { catalog } = catalogOf(model);
    const key: ViewKey = { kind: 'scopes', scopes: new Set(['x', 'y']) };
    expect([...walkView(catalog, key)].map((e) => e.tool.name)).toEqual([...NAMES].sort());
    expect([...walkView(catalog, key, { after: 'delta' })].map((e) => e.tool.name)).toEqual(NAMES.filter((n) => n > 'delta').sort());
    expect([...walkView(catalog, key, { scope: 'y' })].map((e) => e.tool.name)).toEqual(
      NAMES.filter((n) => scopesOf(n).includes('y')).sort(),
    );
    expect([...walkView(catalog, { kind: 'public' }, { scope: 'x' })]).toEqual([]);
  });
});

describe('name indexes', () => {
  it('stay sorted and exact under single and bulk changes', () => {
    const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    // Blocks of 2 and 4 names split, shrink and join at every few changes; 256 is the default.
    for (const blockSize of [2, 4, 256]) {
      fc.assert(
        fc.property(
          fc.array(fc.string({ maxLength: 3 })),
          fc.array(
            fc.tuple(fc.array(fc.string({ maxLength: 3 }), { maxLength: 80 }), fc.array(fc.string({ maxLength: 3 }), { maxLength: 80 })),
          ),
          fc.array(fc.string({ maxLength: 3 }), { maxLength: 10 }),
          (start, changes, probes) => {
            const names = new SortedNames(start, { blockSize });
            const model = new Set(start);
            for (const [added, removed] of changes) {
              names.update(added, removed);
              for (const r of removed) model.delete(r);
              for (const a of added) model.add(a);
              const expected = [...model].sort(byCodeUnit);
              expect([...names.values()]).toEqual(expected);
              expect(names.size).toBe(expected.length);
              // Read by position in order (a walk), then out of order.
              expect(expected.map((_, i) => names.at(i))).toEqual(expected);
              for (let i = expected.length - 1; i >= 0; i -= 3) expect(names.at(i)).toBe(expected[i]);
              expect(names.at(expected.length)).toBeUndefined();
              for (const probe of probes) {
                expect(names.firstAfter(probe)).toBe(expected.filter((n) => n <= probe).length);
                expect(names.has(probe)).toBe(model.has(probe));
              }
            }
          },
        ),
      );
    }
  });

  it('merge a big write beside the index, step by step', () => {
    const names = SortedNames.ofAscending(['b', 'd', 'f', 'h'], { blockSize: 2 });
    const merged = finish(names.mergedSteps(['a', 'd', 'e', 'z'], new Set(['f', 'd'])));
    // An added name stays even when it is also removed; the index itself is unchanged.
    expect([...merged.values()]).toEqual(['a', 'b', 'd', 'e', 'h', 'z']);
    expect([...names.values()]).toEqual(['b', 'd', 'f', 'h']);
  });
});

describe('walks over HTTP', () => {
  let t: TestApp;
  afterEach(async () => t?.close());
  const tool = (name: string, description = `Tool ${name}`) => ({ ...seed('calculator'), name, description, scopes: [] });

  it('carry a cursor across a restart, through a name deleted and registered twice', async () => {
    t = await createTestApp();
    const admin = bearer(t.token(['registry:write']));
    const names = Array.from({ length: 20 }, (_, i) => `t${String(i).padStart(2, '0')}`);
    await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: admin,
      payload: { 'tool-services': [], tools: names.map((n) => tool(n)) },
    });
    const first = (await t.app.inject({ method: 'GET', url: '/?limit=5' })).json();
    expect(first.tools.map((x: { name: string }) => x.name)).toEqual(names.slice(0, 5));
    for (let i = 0; i < 2; i++) {
      expect((await t.app.inject({ method: 'DELETE', url: '/tools/t10', headers: admin })).statusCode).toBe(200);
      expect(
        (await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('t10', `again ${i}`) })).statusCode,
      ).toBe(201);
    }
    await t.app.inject({ method: 'DELETE', url: '/tools/t15', headers: admin });
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('t12b') });
    await t.restart();
    const seen: { name: string; status: string; description: string }[] = [];
    let cursor: string | null = first.nextCursor;
    while (cursor) {
      const res = await t.app.inject({ method: 'GET', url: `/?limit=4&cursor=${cursor}` });
      expect(res.statusCode, res.body).toBe(200);
      seen.push(...res.json().tools);
      cursor = res.json().nextCursor;
    }
    expect(seen.map((x) => x.name)).toEqual(names.slice(5));
    expect(seen.find((x) => x.name === 't10')).toMatchObject({ status: 'active', description: 'again 1' });
    expect(seen.find((x) => x.name === 't15')).toMatchObject({ status: 'deleted' });
  });

  it('walk updated_since in change order, through a write that changed many tools at one index', async () => {
    t = await createTestApp();
    const admin = bearer(t.token(['registry:write']));
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('zulu') });
    const names = Array.from({ length: 250 }, (_, i) => `imp-${String(i).padStart(3, '0')}`);
    await t.app.inject({
      method: 'POST',
      url: '/import',
      headers: admin,
      payload: { 'tool-services': [], tools: names.map((n) => tool(n)) },
    });
    await t.app.inject({ method: 'PUT', url: '/tools/zulu', headers: admin, payload: tool('zulu', 'changed last') });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const url: string = `/?updated_since=2000-01-01T00:00:00Z&limit=100${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, res.body).toBe(200);
      seen.push(...res.json().tools.map((x: { name: string }) => x.name));
      cursor = res.json().nextCursor;
      // A tool served already and changed during the walk comes again, at the end.
      if (pages++ === 0)
        await t.app.inject({ method: 'PUT', url: '/tools/imp-000', headers: admin, payload: tool('imp-000', 'changed during the walk') });
    } while (cursor);
    expect(seen).toEqual([...names, 'zulu', 'imp-000']);
    // A cursor of one kind of walk is refused by the other.
    const named = (await t.app.inject({ method: 'GET', url: '/?limit=1' })).json().nextCursor;
    const res = await t.app.inject({ method: 'GET', url: `/?updated_since=2000-01-01T00:00:00Z&cursor=${named}` });
    expect(res.statusCode).toBe(400);
  });

  it("finds tools by words inside names and by inflections, best match first, in the caller's view", async () => {
    t = await createTestApp({ ANONYMOUS_DISCOVERY: 'public' });
    const admin = bearer(t.token(['registry:write']));
    const tools = [
      { ...tool('adding_numbers', 'Adds numbers together and returns the sum'), scopes: [] },
      { ...tool('subtract', 'Subtracts one number from another'), scopes: [] },
      { ...tool('secret_adder', 'Adds two numbers, for finance only'), scopes: ['finance'] },
      { ...tool('weather', 'Forecast for a city'), scopes: [] },
    ];
    await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: { 'tool-services': [], tools } });
    const names = async (q: string, headers = {}) =>
      ((await t.app.inject({ method: 'GET', url: `/?q=${encodeURIComponent(q)}`, headers })).json().tools as { name: string }[]).map(
        (x) => x.name,
      );
    expect((await names('add two numbers'))[0]).toBe('adding_numbers');
    expect(await names('add two numbers')).not.toContain('secret_adder');
    // Matching all three words ranks above matching two.
    expect((await names('add two numbers', bearer(t.token(['finance'])))).slice(0, 2)).toEqual(['secret_adder', 'adding_numbers']);
    expect(await names('weath')).toEqual(['weather']);
    expect(await names('!!! ...')).toEqual([]);
    await t.app.inject({ method: 'DELETE', url: '/tools/adding_numbers', headers: admin });
    expect(await names('add two numbers')).not.toContain('adding_numbers');
  });

  it('answers one tool with a strong ETag and 304 on revalidation, changing with the tool', async () => {
    t = await createTestApp();
    const admin = bearer(t.token(['registry:write']));
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: tool('one') });
    const res = await t.app.inject({ method: 'GET', url: '/tools/one' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ name: 'one', description: 'Tool one' });
    const etag = res.headers.etag as string;
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(res.headers['cache-control']).toContain('public');
    expect((await t.app.inject({ method: 'GET', url: '/tools/one', headers: { 'if-none-match': etag } })).statusCode).toBe(304);
    const asAdmin = await t.app.inject({ method: 'GET', url: '/tools/one', headers: admin });
    expect(asAdmin.headers.etag).not.toBe(etag);
    expect(asAdmin.json().descriptor.name).toBe('one');
    await t.app.inject({ method: 'PUT', url: '/tools/one', headers: admin, payload: tool('one', 'new text') });
    const after = await t.app.inject({ method: 'GET', url: '/tools/one', headers: { 'if-none-match': etag } });
    expect(after.statusCode).toBe(200);
    expect(after.json().description).toBe('new text');
  });
});
