/**
 * Growth: for each N, import time and peak memory, startup time with N tools in the database,
 * resident memory, anonymous GET / throughput and latency, and (issue 10) the latency of a page,
 * a lookup, a search and a filter, to see whether they stay flat as the catalogue grows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { bundle, FILTER_SCOPE, SEARCHES, toolName } from './data.js';
import { load, peakRssMiB, rssMiB, type RunResult } from './lib.js';
import { log, opts, TARGETS } from './options.js';
import { f0, f2, table, type Section } from './report.js';
import { importBundle, searchIndexed, startRegistry, type Registry } from './servers.js';

interface Probe {
  url: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  statuses: Record<string, number>;
}

export interface GrowthRow {
  n: number;
  importMs: number | null;
  importPeakRssMiB: number | null;
  bundleMiB: number | null;
  startupMs: number;
  rssAfterStartMiB: number;
  firstGetMs: number;
  rssAfterGetMiB: number;
  viewBytes: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Issue 10: a page, a lookup, a search, a filter (absent at 0 tools). */
  probes?: { page: Probe; lookup: Probe; search: Probe; filter: Probe };
}

const SEARCH = SEARCHES[0]?.q ?? 'weather';

async function probe(base: string, url: string, setupRequest?: (r: autocannon.Request) => autocannon.Request): Promise<Probe> {
  const run: RunResult = await load({
    url: `${base}${url}`,
    durationS: opts.growthProbeS,
    connections: opts.growthConnections,
    expectStatus: 200,
    ...(setupRequest && { setupRequest }),
  });
  return { url, rps: run.rps, p50: run.p50, p99: run.p99, errors: run.errors, statuses: run.statuses };
}

async function probes(registry: Registry, n: number): Promise<NonNullable<GrowthRow['probes']>> {
  const page = await probe(registry.base, '/?limit=100');
  // A different tool each request, anywhere in the catalogue.
  const lookup = await probe(registry.base, `/tools/${toolName(0)}`, (r) => {
    r.path = `/tools/${toolName(Math.floor(Math.random() * n))}`;
    return r;
  });
  lookup.url = '/tools/{random name}';
  const search = await probe(registry.base, `/?q=${encodeURIComponent(SEARCH)}`);
  const filter = await probe(registry.base, `/?scope=${encodeURIComponent(FILTER_SCOPE)}`);
  return { page, lookup, search, filter };
}

export async function growth(n: number): Promise<GrowthRow> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  try {
    let importMs: number | null = null;
    let importPeakRssMiB: number | null = null;
    let bundleMiB: number | null = null;
    registry = await startRegistry(dir);
    if (n > 0) {
      const body = bundle(n);
      bundleMiB = body.length / 1024 / 1024;
      log(`growth ${n}: importing (${bundleMiB.toFixed(1)} MiB bundle)`);
      importMs = await importBundle(registry, body);
      // The import's memory bound: the server's peak resident memory, which includes the
      // parsed body, the validated descriptors and the new catalogue.
      importPeakRssMiB = peakRssMiB(registry.child.pid);
    }
    await registry.child.stop();
    registry = await startRegistry(dir);
    const rssAfterStartMiB = rssMiB(registry.child.pid);
    const t0 = performance.now();
    const first = await fetch(`${registry.base}/`);
    const viewBytes = (await first.arrayBuffer()).byteLength;
    const firstGetMs = performance.now() - t0;
    const rssAfterGetMiB = rssMiB(registry.child.pid);
    const run = await load({
      url: `${registry.base}/`,
      durationS: opts.growthDurationS,
      connections: opts.growthConnections,
      expectStatus: 200,
    });
    const row: GrowthRow = {
      n,
      importMs,
      importPeakRssMiB,
      bundleMiB,
      startupMs: registry.startupMs,
      rssAfterStartMiB,
      firstGetMs,
      rssAfterGetMiB,
      viewBytes,
      rps: run.rps,
      p50: run.p50,
      p99: run.p99,
      errors: run.errors,
    };
    if (n > 0) {
      await searchIndexed(registry);
      row.probes = await probes(registry, n);
    }
    const p = row.probes;
    log(
      `growth ${n}: import ${importMs === null ? '-' : `${importMs.toFixed(0)} ms`}, startup ${row.startupMs.toFixed(0)} ms, RSS ${rssAfterStartMiB.toFixed(0)} -> ${rssAfterGetMiB.toFixed(0)} MiB, ` +
        `first GET ${firstGetMs.toFixed(0)} ms, ${run.rps.toFixed(0)}/s p50 ${run.p50.toFixed(2)} p99 ${run.p99.toFixed(2)} ms` +
        (p
          ? `; p99 page ${p.page.p99.toFixed(2)}, lookup ${p.lookup.p99.toFixed(2)}, search ${p.search.p99.toFixed(2)}, filter ${p.filter.p99.toFixed(2)} ms`
          : ''),
    );
    for (const [name, pr] of Object.entries(p ?? {}))
      if (pr.errors > 0) log(`growth ${n}: ${name} ${pr.url}: unexpected answers ${JSON.stringify(pr.statuses)}`);
    return row;
  } finally {
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function growthSections(rows: GrowthRow[]): Section[] {
  const t = table(
    [
      'tools',
      'import ms',
      'bundle MiB',
      'import peak RSS MiB',
      'startup ms',
      'RSS start MiB',
      'RSS after GET / MiB',
      'first GET / ms',
      'view MiB',
      'req/s',
      'p50 ms',
      'p99 ms',
    ],
    rows.map((g) => [
      f0(g.n),
      f0(g.importMs),
      g.bundleMiB === null ? '-' : g.bundleMiB.toFixed(1),
      f0(g.importPeakRssMiB),
      f0(g.startupMs),
      f0(g.rssAfterStartMiB),
      f0(g.rssAfterGetMiB),
      f0(g.firstGetMs),
      (g.viewBytes / 1024 / 1024).toFixed(2),
      f0(g.rps),
      f2(g.p50),
      f2(g.p99),
    ]),
  );
  const sections: Section[] = [
    {
      title: `Growth (anonymous GET /, ${opts.growthDurationS} s, ${opts.growthConnections} connections; target: startup with 100,000 tools < ${TARGETS.startup100kMs} ms)`,
      ...t,
    },
  ];
  const withProbes = rows.filter((g) => g.probes);
  if (withProbes.length > 0) {
    const l = table(
      [
        'tools',
        'page p50 ms',
        'page p99 ms',
        'lookup p50 ms',
        'lookup p99 ms',
        'search p50 ms',
        'search p99 ms',
        'filter p50 ms',
        'filter p99 ms',
        'unexpected answers',
      ],
      withProbes.map((g) => {
        const p = g.probes;
        if (!p) return [f0(g.n)];
        const all = [p.page, p.lookup, p.search, p.filter];
        return [f0(g.n), ...all.flatMap((pr) => [f2(pr.p50), f2(pr.p99)]), f0(all.reduce((sum, pr) => sum + pr.errors, 0))];
      }),
    );
    sections.push({
      title:
        `Growth: page (/?limit=100), lookup (GET /tools/{random name}), search (?q=${SEARCH}) and filter (?scope=${FILTER_SCOPE}) latency ` +
        `(${opts.growthProbeS} s each, ${opts.growthConnections} connections; flat is the goal)`,
      ...l,
    });
  }
  return sections;
}
