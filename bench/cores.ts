/**
 * Issue 10, every core: does running several processes pay on this machine? The ceiling (the
 * registry's own bytes from a bare Fastify) as 1 process and as N processes sharing one port
 * (node:cluster; Node 20 has no `reusePort`), next to the registry's single process, for a
 * lookup by name and for the full list at `--cores-size` tools (10,000). The load generator
 * runs in the benchmark process, on the same cores, as in every other row.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { bundle, toolName } from './data.js';
import { loader, measureSides, type LoadSpec, type Side } from './measure.js';
import { log, opts } from './options.js';
import { f0, f2, pct, table, type Section } from './report.js';
import {
  captureAll,
  checkCeiling,
  exactSpec,
  fetchView,
  importBundle,
  startCeiling,
  startRegistry,
  type Ceiling,
  type Registry,
} from './servers.js';

export interface CoresRow {
  row: string;
  n: number;
  processes: number;
  registry: Side;
  ceiling1: Side;
  ceilingN: Side;
  /** ceilingN / ceiling1 throughput. */
  gain: number;
  /** registry / ceiling1 throughput. */
  registryRatio: number;
}

export async function cores(): Promise<CoresRow[]> {
  const n = opts.coresSize;
  const processes = opts.coresProcesses;
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  let one: Ceiling | undefined;
  let many: Ceiling | undefined;
  try {
    log(`cores: ${n} tools, ceiling as 1 and as ${processes} processes`);
    registry = await startRegistry(dir);
    await importBundle(registry, bundle(n));
    const count = Math.min(n, opts.lookupNames);
    const lookups = await captureAll(
      registry.base,
      Array.from({ length: count }, (_, k) => `/tools/${toolName(Math.floor(((k + 0.5) * n) / count))}`),
    );
    const view = await fetchView(registry.base, null);
    const viewFile = join(dir, 'view.json');
    writeFileSync(viewFile, view.body);
    const spec = { exact: exactSpec(dir, 'lookups', lookups), views: [{ authorization: '', bodyFile: viewFile, headers: view.headers }] };
    one = await startCeiling(dir, 'ceiling-1', spec);
    many = await startCeiling(dir, `ceiling-${processes}`, { ...spec, workers: processes });
    for (const c of [one, many]) await checkCeiling(c, lookups.slice(0, 3));

    const pickName = (request: autocannon.Request): autocannon.Request => {
      request.path = lookups[Math.floor(Math.random() * lookups.length)]?.url ?? '/';
      return request;
    };
    const rows: CoresRow[] = [];
    const cases: [string, LoadSpec][] = [
      [
        `lookup GET /tools/{name} (${lookups.length} names)`,
        { connections: opts.readConnections, expectStatus: 200, setupRequest: pickName },
      ],
      [`full list GET / (${(view.body.length / 1024 / 1024).toFixed(1)} MiB)`, { connections: opts.readConnections, expectStatus: 200 }],
    ];
    for (const [row, spec] of cases) {
      const [r, c1, cN] = await measureSides(`cores: ${row}`, [
        ['registry', loader(registry.base, spec, registry.child.pid)],
        ['ceiling x1', loader(one.base, spec, one.child.pid)],
        [`ceiling x${processes}`, loader(many.base, spec, many.child.pid)],
      ]);
      if (!r || !c1 || !cN) throw new Error('cores: missing side');
      rows.push({ row, n, processes, registry: r, ceiling1: c1, ceilingN: cN, gain: cN.rps / c1.rps, registryRatio: r.rps / c1.rps });
    }
    return rows;
  } finally {
    await many?.child.stop();
    await one?.child.stop();
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function coresSection(rows: CoresRow[]): Section {
  const processes = rows[0]?.processes ?? opts.coresProcesses;
  const t = table(
    [
      'row',
      'tools',
      'registry req/s (1 process)',
      'p99 ms',
      'CPU us/req',
      'ceiling x1 req/s',
      'p99 ms',
      'CPU us/req',
      `ceiling x${processes} req/s`,
      'p99 ms',
      'CPU us/req',
      `x${processes} / x1`,
      'registry / ceiling x1',
      `${processes} processes pay?`,
    ],
    rows.map((r) => [
      r.row,
      f0(r.n),
      f0(r.registry.rps),
      f2(r.registry.p99),
      f0(r.registry.cpuUsPerReq),
      f0(r.ceiling1.rps),
      f2(r.ceiling1.p99),
      f0(r.ceiling1.cpuUsPerReq),
      f0(r.ceilingN.rps),
      f2(r.ceilingN.p99),
      f0(r.ceilingN.cpuUsPerReq),
      pct(r.gain),
      pct(r.registryRatio),
      // Within 10 % is within this machine's noise.
      r.gain >= 1.1 ? 'yes' : r.gain <= 0.9 ? 'no, they cost' : 'no gain',
    ]),
  );
  return {
    title: `Every core (issue 10; ceiling as 1 and ${processes} processes on one port via node:cluster, load generator in this process; CPU of all the server's processes; median of ${opts.runs} x ${opts.durationS} s, ${opts.readConnections} connections)`,
    ...t,
  };
}
