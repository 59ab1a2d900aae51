/**
 * Issue 33: what a discovery view costs the event loop at 100,000 tools, in process (no HTTP):
 * a Catalog of bench/data.ts's `httpTool(i)`, and `view()` timed for the 50 agent tokens' scope
 * sets round-robin under the default VIEW_CACHE_BYTES (64 MiB, ~5 of their ~12 MiB views), the
 * way the wrk row "full list, bearer (3 of 50 scopes, 50 tokens)" asks for them. Per request:
 * the median, the worst and the garbage collector's share; and, apart, the first view after a
 * write (a plan and a body) and a plan alone after a write (the walk of the scope indexes and
 * the hash of the tools' identities). With `--before=<checkout>`, that checkout's Catalog is timed beside this
 * one's, alternating, on the same records (same bytes and ETags, which are compared).
 *
 *   node --import tsx bench/views-micro.ts [--tools=100000] [--rounds=5] [--before=/work/main]
 */
import { parseArgs } from 'node:util';
import { PerformanceObserver, performance } from 'node:perf_hooks';
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
  const catalog = new Catalog({
    publicUrl: new URL('http://127.0.0.1:8006'),
    serviceName: 'tool-registry',
    viewCacheBytes: VIEW_CACHE_BYTES,
  });
  catalog.load({ index: toolCount, services: [], tools: records });
  return catalog;
}

const sides: { label: string; catalog: CatalogClass }[] = [];
if (values.before !== undefined) sides.push({ label: `before (${values.before})`, catalog: await catalogOf(values.before) });
sides.push({ label: 'this checkout', catalog: await catalogOf(resolve(import.meta.dirname, '..')) });

/**
 * A write of tool 0 (the same tool again at a new index), which empties every cache of views as
 * any write does; the other tools' entries stay serialised, as in a running registry.
 */
const indexes = new Map<CatalogClass, number>();
function write(catalog: CatalogClass): void {
  const index = (indexes.get(catalog) ?? toolCount) + 1;
  indexes.set(catalog, index);
  catalog.apply(index, { tools: [{ ...(records[0] as ToolRecord), index }] });
}

const timed = (fn: () => void) => {
  const start = performance.now();
  fn();
  return performance.now() - start;
};

/** Garbage collection's pauses, summed into whichever side is being timed. */
let gcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcMs += entry.duration;
}).observe({ entryTypes: ['gc'] });

interface Figures {
  gcMs: number;
  roundRobin: number[];
  worst: number;
  afterWrite: number[];
  planAfterWrite: number[];
}
const figures = new Map<string, Figures>(
  sides.map((s) => [s.label, { gcMs: 0, roundRobin: [], worst: 0, afterWrite: [], planAfterWrite: [] }]),
);

for (let round = 0; round < rounds; round++) {
  for (const side of sides) {
    const f = figures.get(side.label) as Figures;
    const key = keys[round % keys.length] as ViewKey;
    // The first request after a write: its plan and its body.
    write(side.catalog);
    f.afterWrite.push(timed(() => side.catalog.view(key)));
    // The plan alone (the walk and the hash), where the checkout has plans.
    write(side.catalog);
    if ('plan' in side.catalog) f.planAfterWrite.push(timed(() => side.catalog.plan(key)));
    // Two passes of the 50 tokens round-robin; the second is the steady state timed.
    for (const key of keys) side.catalog.view(key);
    // Observed entries arrive on a later turn of the loop: counted from the next timed pass.
    await new Promise((resolve) => setImmediate(resolve));
    const gcBefore = gcMs;
    for (const key of keys) {
      const ms = timed(() => side.catalog.view(key));
      f.roundRobin.push(ms);
      f.worst = Math.max(f.worst, ms);
    }
    await new Promise((resolve) => setImmediate(resolve));
    f.gcMs += gcMs - gcBefore;
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
console.log(
  `${toolCount} tools; 50 token views of ${f1(Math.min(...sizes))}-${f1(Math.max(...sizes))} MiB; VIEW_CACHE_BYTES 64 MiB; ${rounds} rounds`,
);
const rows = sides.map((s) => {
  const f = figures.get(s.label) as Figures;
  return [
    s.label,
    f1(median(f.roundRobin)),
    f1(f.worst),
    f1(f.gcMs / rounds / keys.length),
    f1(median(f.afterWrite)),
    f1(median(f.planAfterWrite)),
  ];
});
console.log(
  table(
    ['side', 'round-robin median ms', 'round-robin worst ms', 'GC ms per request', 'view after a write ms', 'plan after a write ms'],
    rows,
  ).text,
);
