/**
 * Issue 33: what a discovery view costs the event loop at 100,000 tools, in process (no HTTP):
 * a Catalog of bench/data.ts's `httpTool(i)`, and `view()` timed for the 50 agent tokens' scope
 * sets round-robin under the default VIEW_CACHE_BYTES (64 MiB, ~5 of their ~12 MiB views), the
 * way the wrk row "full list, bearer (3 of 50 scopes, 50 tokens)" asks for them. Per request:
 * the median and the worst; and, apart, a cold view (the first after a write). With `--before=<checkout>`, that checkout's Catalog is timed beside this
 * one's, alternating, on the same records (same bytes and ETags, which are compared).
 *
 *   node --import tsx bench/views-micro.ts [--tools=100000] [--rounds=5] [--before=/work/main]
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import type { Catalog as CatalogClass } from '../src/catalog/catalog.js';
import { parseTool } from '../src/model/descriptors.js';
import type { ToolRecord } from '../src/model/records.js';
import type { ViewKey } from '../src/model/visibility.js';
import { TOKEN_COUNT, httpTool, scopeName } from './data.js';
import { median } from './lib.js';
import { f1, table } from './report.js';

const { values } = parseArgs({
  options: { tools: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '5' }, before: { type: 'string' } },
});
const toolCount = Number(values.tools);
const rounds = Number(values.rounds);
const VIEW_CACHE_BYTES = 64 * 1024 * 1024;

const records: ToolRecord[] = [];
for (let i = 0; i < toolCount; i++) {
  const parsed = parseTool(httpTool(i), () => undefined);
  records.push({ ...parsed, status: 'active', createdIndex: i + 1, index: i + 1, updatedAt: '2026-12-01T00:00:00.000Z' });
}
// Token j's scopes, as bench/data.ts's agentTokens() gives them; one Set per token, as a verified token's Caller keeps one.
const keys: ViewKey[] = Array.from({ length: TOKEN_COUNT }, (_, j) => ({
  kind: 'scopes',
  scopes: new Set([scopeName(j), scopeName(j + 17), scopeName(j + 31)]),
}));

type CatalogCtor = typeof CatalogClass;
async function catalogOf(root: string): Promise<CatalogClass> {
  const { Catalog } = (await import(resolve(root, 'src/catalog/catalog.ts'))) as { Catalog: CatalogCtor };
  const catalog = new Catalog({ publicUrl: new URL('http://127.0.0.1:8006'), serviceName: 'tool-registry', viewCacheBytes: VIEW_CACHE_BYTES });
  catalog.load({ index: toolCount, services: [], tools: records });
  return catalog;
}

const sides: { label: string; catalog: CatalogClass }[] = [];
if (values.before !== undefined) sides.push({ label: `before (${values.before})`, catalog: await catalogOf(values.before) });
sides.push({ label: 'this checkout', catalog: await catalogOf(resolve(import.meta.dirname, '..')) });

/** Drops every view as a write does: a write of a tool no token's view holds would still empty the caches. */
const invalidate = (catalog: CatalogClass) => catalog.load({ index: toolCount, services: [], tools: records });

const timed = (fn: () => void) => {
  const start = performance.now();
  fn();
  return performance.now() - start;
};

interface Figures {
  roundRobin: number[];
  worst: number;
  cold: number[];
}
const figures = new Map<string, Figures>(sides.map((s) => [s.label, { roundRobin: [], worst: 0, cold: [] }]));

for (let round = 0; round < rounds; round++) {
  for (const side of sides) {
    const f = figures.get(side.label) as Figures;
    invalidate(side.catalog);
    // A cold view: the first request after a write.
    f.cold.push(timed(() => side.catalog.view(keys[round % keys.length] as ViewKey)));
    // Two passes of the 50 tokens round-robin; the second is the steady state timed.
    for (const key of keys) side.catalog.view(key);
    for (const key of keys) {
      const ms = timed(() => side.catalog.view(key));
      f.roundRobin.push(ms);
      f.worst = Math.max(f.worst, ms);
    }
  }
}
if (sides.length === 2) {
  const [a, b] = sides as [(typeof sides)[0], (typeof sides)[0]];
  for (const key of keys) {
    const va = a.catalog.view(key);
    const vb = b.catalog.view(key);
    if (va.etag !== vb.etag || !va.body.equals(vb.body)) throw new Error('the two checkouts give different views');
  }
  console.log('Same bytes and ETags for all 50 views on both sides.');
}

const sizes = keys.map((k) => (sides.at(-1) as (typeof sides)[0]).catalog.view(k).body.length / 1048576);
console.log(`${toolCount} tools; 50 token views of ${f1(Math.min(...sizes))}-${f1(Math.max(...sizes))} MiB; VIEW_CACHE_BYTES 64 MiB; ${rounds} rounds`);
const rows = sides.map((s) => {
  const f = figures.get(s.label) as Figures;
  return [s.label, f1(median(f.roundRobin)), f1(f.worst), f1(median(f.cold))];
});
console.log(table(['side', 'round-robin median ms', 'round-robin worst ms', 'cold view ms'], rows).text);
