/**
 * One write plan serves every write (issue 32): a name written more than once in one write is
 * resolved against its own earlier step, so the catalogue ends as if the records had come in
 * writes of their own, one after the other. Before, the name indexes noted every step: a tool
 * stored twice stayed listed under its first scopes, and one stored then deleted stayed in the
 * name order with no entry, which failed tools().
 */
import { describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.js';
import type { ToolRecord } from '../../src/model/records.js';
import { parseTool } from '../../src/model/descriptors.js';
import { seed } from '../helpers/fixtures.js';

function record(name: string, index: number, status: 'active' | 'deleted', scopes: string[], createdIndex = 1): ToolRecord {
  const parsed = parseTool({ ...seed('calculator'), name, scopes }, () => undefined);
  return { ...parsed, status, createdIndex, index, updatedAt: `2026-11-29T00:00:0${index}.000Z` };
}

function catalog(): Catalog {
  const c = new Catalog({ publicUrl: new URL('http://127.0.0.1:8006'), serviceName: 'tool-registry', viewCacheBytes: 1 << 20 });
  c.load({ index: 1, services: [], tools: [record('a', 1, 'active', ['x']), record('b', 1, 'active', [])] });
  return c;
}

function observe(c: Catalog) {
  return {
    tools: c.tools().map((t) => [t.record.name, t.record.index, t.record.status, t.tool.scopes]),
    all: c.view({ kind: 'all' }).body.toString(),
    scopes: [...c.knownScopes()],
    withX: [...(c.namesWithScope('x')?.values() ?? [])],
    tombstone: c.getTombstone('a')?.index,
    changed: [...c.changedSince('', undefined)].map(({ record }) => [record.name, record.index, record.status]),
    lives: [0, 1, 2, 3].map((i) => c.existedAt('a', i)),
    found: c.search('calculator', 10, () => true).map((t) => t.record.name),
  };
}

describe('a name written twice in one write', () => {
  const cases: [string, ToolRecord[]][] = [
    ['stored twice', [record('a', 2, 'active', ['y']), record('a', 2, 'active', ['z'])]],
    ['stored, then deleted', [record('a', 2, 'active', ['y']), record('a', 2, 'deleted', ['y'])]],
    ['deleted, then stored again', [record('a', 2, 'deleted', ['x']), record('a', 2, 'active', ['y'], 2)]],
  ];
  for (const [label, records] of cases) {
    it(`ends as the same records in writes of their own: ${label}`, () => {
      const together = catalog();
      const apart = catalog();
      const changes = together.apply(2, { tools: records });
      const one = records.flatMap((r) => apart.apply(2, { tools: [r] }));
      expect(changes).toEqual(one);
      expect(observe(together)).toEqual(observe(apart));
    });
  }
});
