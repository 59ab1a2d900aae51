/**
 * Issue 33: the HTTP read rows driven by wrk, at each --wrk-sizes, against two ceilings serving
 * the registry's captured answers: "bare" (the body, Content-Type and ETag: what serving those
 * bytes costs in Fastify) and "headers" (the body and every header the registry sent, but those
 * Node writes itself), so that the cost of the headers and the cost of everything else show
 * apart. The registry runs with its defaults (metrics, security headers, request ids,
 * connection shares, audit and logging hooks, rate limits on), but for a per-caller budget
 * the load cannot use up (RATE_LIMIT_MAX=10,000,000 a minute: the limiter runs for every
 * request, and never refuses).
 *
 * With --wrk-profile, each row is also run once against the registry alone under V8's sampling
 * profiler (over the inspector protocol, started and stopped around the row), and the profile
 * summarised per hook and handler (bench/profile-summary.ts).
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentTokens, bundle, toolName } from './data.js';
import { measureSides, type Runner, type Side } from './measure.js';
import { freePort, rssMiB } from './lib.js';
import { log, opts } from './options.js';
import { connectProfiler, type Profiler } from './profiler.js';
import { summariseProfile, profileTable, type ProfileSummary } from './profile-summary.js';
import { f0, f1, f2, pct, table, type Section } from './report.js';
import {
  capture,
  captureAll,
  checkCeiling,
  exactSpec,
  importBundle,
  startCeiling,
  startRegistry,
  type Captured,
  type Registry,
} from './servers.js';
import { wrkLoad, wrkMissing, type WrkRequest } from './wrk.js';

export interface WrkRow {
  row: string;
  n: number;
  answerBytes: number;
  /** Headers on the registry's answer (but those Node writes). */
  headerCount: number;
  registry: Side;
  bare: Side;
  headers: Side;
  ratioBare: number;
  ratioHeaders: number;
  /** With --wrk-before: the other checkout's registry, measured in the same runs. */
  before?: Side;
}

/** What the registry holds at one size: memory and the time a restart takes to answer. */
export interface WrkSize {
  n: number;
  importMs: number;
  /** VmRSS after the import, before the restart. */
  rssAfterImportMiB: number;
  /** A restart on the same database, from spawn to the first 200 of /healthz (it listens once the catalogue is loaded). */
  startupMs: number;
  /** VmRSS once the restarted registry answers, before any read. */
  rssAfterStartMiB: number;
  /** VmRSS after every row (views, pages and entries built and cached). */
  rssAfterRowsMiB: number;
}

export interface WrkResult {
  generator: string;
  threads: number;
  connections: number;
  rows: WrkRow[];
  sizes: WrkSize[];
  profiles: ProfileSummary[];
}

/** The headers the bare ceiling keeps: what a plain JSON answer with a validator needs. */
const BARE = new Set(['content-type', 'etag']);
const bareOf = (a: Captured): Captured => ({
  ...a,
  headers: Object.fromEntries(Object.entries(a.headers).filter(([k]) => BARE.has(k))),
});

interface Case {
  row: string;
  requests: WrkRequest[];
  expectStatus: number;
  answerBytes: number;
  headerCount: number;
}

export async function wrkReads(): Promise<WrkResult> {
  const missing = wrkMissing();
  // No fallback to autocannon: its figures are the ones issue 33 showed to measure the generator.
  if (missing !== null) throw new Error(missing);
  const result: WrkResult = {
    generator: 'wrk 4.1.0 (Debian)',
    threads: opts.wrkThreads,
    connections: opts.wrkConnections,
    rows: [],
    sizes: [],
    profiles: [],
  };
  for (const n of opts.wrkSizes) await atSize(n, result);
  return result;
}

async function atSize(n: number, result: WrkResult): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-wrk-'));
  // Profiled: the registry, the headers ceiling and --wrk-before's registry, each under the same
  // sampling profiler (and each started with --inspect, so that neither registry has a flag the other lacks).
  const inspectPort = await freePort();
  const beforeInspectPort = await freePort();
  const ceilingInspectPort = await freePort();
  const extraArgs = opts.wrkProfile ? [`--inspect=127.0.0.1:${inspectPort}`] : [];
  // One PUBLIC_URL for every registry: the views carry URLs made from it, and --wrk-before's
  // registry must serve the same bytes (and ETags) on its own port.
  const settings = { RATE_LIMIT_MAX: '10000000', PUBLIC_URL: 'http://registry.bench.invalid' };
  let registry = await startRegistry(dir, settings, extraArgs);
  let before: Registry | undefined;
  const ceilings: Awaited<ReturnType<typeof startCeiling>>[] = [];
  let profiler: Profiler | undefined;
  let ceilingProfiler: Profiler | undefined;
  let beforeProfiler: Profiler | undefined;
  try {
    const importMs = await importBundle(registry, bundle(n));
    const rssAfterImportMiB = rssMiB(registry.child.pid);
    // The rows run on a registry started with the tools in its database, as a deployment's is.
    await registry.child.stop();
    // --wrk-before's registry gets a copy of that database: the same tools, written at the same
    // times, so the same bytes and ETags.
    const beforeDir = join(dir, 'before');
    if (opts.wrkBefore !== null) {
      mkdirSync(beforeDir);
      for (const file of readdirSync(dir)) if (file.startsWith('registry.db')) copyFileSync(join(dir, file), join(beforeDir, file));
    }
    registry = await startRegistry(dir, settings, extraArgs);
    const size: WrkSize = {
      n,
      importMs,
      rssAfterImportMiB,
      startupMs: registry.startupMs,
      rssAfterStartMiB: rssMiB(registry.child.pid),
      rssAfterRowsMiB: NaN,
    };
    result.sizes.push(size);
    log(
      `wrk ${n}: imported ${n} tools in ${importMs.toFixed(0)} ms (RSS ${rssAfterImportMiB.toFixed(0)} MiB); ` +
        `restarted, ready in ${size.startupMs.toFixed(0)} ms (RSS ${size.rssAfterStartMiB.toFixed(0)} MiB)`,
    );
    const base = registry.base;
    if (opts.wrkBefore !== null) {
      before = await startRegistry(
        beforeDir,
        settings,
        opts.wrkProfile ? [`--inspect=127.0.0.1:${beforeInspectPort}`] : [],
        opts.wrkBefore,
      );
      log(`wrk ${n}: the registry of ${opts.wrkBefore} ready in ${before.startupMs.toFixed(0)} ms`);
    }

    // Every answer the rows ask for, captured once.
    const tokens = agentTokens().map((t) => `Bearer ${t}`);
    const anonymous = await capture(base, '/');
    const bearer = await Promise.all(tokens.map((t) => capture(base, '/', { authorization: t })));
    const first = await capture(base, '/?limit=100');
    let later = first;
    for (let hop = 0; hop < opts.pageHops; hop++) {
      const next = (JSON.parse(later.body.toString()) as { nextCursor?: string | null }).nextCursor;
      if (typeof next !== 'string') break;
      later = await capture(base, `/?limit=100&cursor=${encodeURIComponent(next)}`);
    }
    const count = Math.min(n, opts.lookupNames);
    const lookups = await captureAll(
      base,
      Array.from({ length: count }, (_, k) => `/tools/${toolName(Math.floor(((k + 0.5) * n) / count))}`),
    );
    for (const a of [anonymous, ...bearer, first, later]) if (a.status !== 200) throw new Error(`GET ${a.url} answered ${a.status}`);
    const etag = anonymous.headers['etag'];
    if (etag === undefined) throw new Error('GET / carries no ETag');
    if (before !== undefined) {
      // The same requests go to both registries, If-None-Match tags included.
      for (const a of [anonymous, first, ...lookups.slice(0, 3)]) {
        const theirs = await capture(before.base, a.url);
        if (!theirs.body.equals(a.body) || theirs.headers['etag'] !== a.headers['etag'])
          throw new Error(`--wrk-before: ${opts.wrkBefore} does not answer ${a.url} as this checkout does`);
      }
    }

    const ceilingOf = async (name: string, keep: (a: Captured) => Captured, nodeArgs: string[] = []) => {
      const views = [anonymous, ...bearer].map((a, i) => {
        const bodyFile = join(dir, `${name}-view-${i}.json`);
        writeFileSync(bodyFile, a.body);
        return { authorization: i === 0 ? '' : (tokens[i - 1] ?? ''), bodyFile, headers: keep(a).headers };
      });
      const c = await startCeiling(dir, name, { views, exact: exactSpec(dir, name, [first, later, ...lookups].map(keep)) }, nodeArgs);
      ceilings.push(c);
      await checkCeiling(c, [first, later, ...lookups.slice(0, 3)]);
      return c;
    };
    const bare = await ceilingOf('ceiling-bare', bareOf);
    const headers = await ceilingOf('ceiling-headers', (a) => a, opts.wrkProfile ? [`--inspect=127.0.0.1:${ceilingInspectPort}`] : []);

    const count0 = (a: Captured) => Object.keys(a.headers).length;
    const cases: Case[] = [
      {
        row: 'full list, anonymous',
        requests: [{ path: '/' }],
        expectStatus: 200,
        answerBytes: anonymous.body.length,
        headerCount: count0(anonymous),
      },
      {
        row: `full list, bearer (3 of 50 scopes, ${tokens.length} tokens)`,
        requests: tokens.map((t) => ({ path: '/', headers: { authorization: t } })),
        expectStatus: 200,
        answerBytes: Math.round(bearer.reduce((s, a) => s + a.body.length, 0) / bearer.length),
        headerCount: count0(bearer[0] ?? anonymous),
      },
      {
        row: 'first page of 100',
        requests: [{ path: first.url }],
        expectStatus: 200,
        answerBytes: first.body.length,
        headerCount: count0(first),
      },
      {
        row: `later page (cursor, after ${opts.pageHops} hops)`,
        requests: [{ path: later.url }],
        expectStatus: 200,
        answerBytes: later.body.length,
        headerCount: count0(later),
      },
      {
        row: `one tool by name (${lookups.length} names)`,
        requests: lookups.map((a) => ({ path: a.url })),
        expectStatus: 200,
        answerBytes: Math.round(lookups.reduce((s, a) => s + a.body.length, 0) / lookups.length),
        headerCount: count0(lookups[0] ?? anonymous),
      },
      {
        row: 'GET / with If-None-Match -> 304',
        requests: [{ path: '/', headers: { 'if-none-match': etag } }],
        expectStatus: 304,
        answerBytes: 0,
        headerCount: count0(anonymous),
      },
      {
        row: 'one tool by name, If-None-Match -> 304',
        requests: lookups
          .filter((a) => a.headers['etag'] !== undefined)
          .map((a) => ({ path: a.url, headers: { 'if-none-match': a.headers['etag'] ?? '' } })),
        expectStatus: 304,
        answerBytes: 0,
        headerCount: count0(lookups[0] ?? anonymous),
      },
    ];

    const runner =
      (target: string, pid: number, c: Case): Runner =>
      (durationS) =>
        wrkLoad({
          base: target,
          requests: c.requests,
          expectStatus: c.expectStatus,
          durationS,
          threads: opts.wrkThreads,
          connections: opts.wrkConnections,
          serverPid: pid,
          dir,
        });
    for (const c of cases) {
      const [r, b, h, was] = await measureSides(`wrk ${c.row} @${n}`, [
        ['registry', runner(base, registry.child.pid, c)],
        ['bare ceiling', runner(bare.base, bare.child.pid, c)],
        ['headers ceiling', runner(headers.base, headers.child.pid, c)],
        ...(before === undefined ? [] : [['before', runner(before.base, before.child.pid, c)] as const]),
      ]);
      if (!r || !b || !h) throw new Error('wrk: missing side');
      if (r.errors > 0) log(`wrk ${c.row} @${n}: the registry gave ${r.errors} unexpected answers`);
      result.rows.push({
        row: c.row,
        n,
        answerBytes: c.answerBytes,
        headerCount: c.headerCount,
        registry: r,
        bare: b,
        headers: h,
        ratioBare: r.rps / b.rps,
        ratioHeaders: r.rps / h.rps,
        ...(was !== undefined && { before: was }),
      });
    }

    size.rssAfterRowsMiB = rssMiB(registry.child.pid);

    if (opts.wrkProfile) {
      mkdirSync(opts.profileDir, { recursive: true });
      profiler = await connectProfiler(inspectPort);
      ceilingProfiler = await connectProfiler(ceilingInspectPort);
      if (before !== undefined) beforeProfiler = await connectProfiler(beforeInspectPort);
      const sides: [string, Profiler, string, number][] = [
        ['registry', profiler, base, registry.child.pid],
        ['headers ceiling', ceilingProfiler, headers.base, headers.child.pid],
        ...(before !== undefined && beforeProfiler !== undefined
          ? [['before', beforeProfiler, before.base, before.child.pid] as [string, Profiler, string, number]]
          : []),
      ];
      for (const c of cases) {
        for (const [server, p, target, pid] of sides) {
          await p.start();
          const run = await runner(target, pid, c)(opts.durationS);
          const profile = await p.stop();
          const file = join(opts.profileDir, `${server.replace(' ', '-')}-${n}-${result.profiles.length}.cpuprofile`);
          writeFileSync(file, JSON.stringify(profile));
          result.profiles.push(summariseProfile(profile, { row: `${c.row}: ${server}`, n, requests: run.total, file }));
          log(`wrk ${c.row} @${n}: profile of the ${server}, ${run.total} requests, in ${file}`);
        }
      }
    }
  } finally {
    await profiler?.close();
    await ceilingProfiler?.close();
    await beforeProfiler?.close();
    for (const c of ceilings) await c.child.stop();
    await before?.child.stop();
    await registry.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function wrkSections(r: WrkResult): Section[] {
  const withBefore = r.rows.some((w) => w.before !== undefined);
  const head = [
    'read',
    'tools',
    'answer',
    'headers',
    'registry req/s',
    'p50 ms',
    'p99 ms',
    'registry CPU us/req',
    'wrk CPU us/req',
    'registry cores',
    'wrk cores',
    'bare ceiling req/s',
    'CPU us/req',
    'ratio',
    'headers ceiling req/s',
    'CPU us/req',
    'ratio',
    'CPU ratio',
    ...(withBefore ? ['before req/s', 'before CPU us/req', 'req/s vs before', 'CPU us/req vs before'] : []),
  ];
  const rows = r.rows.map((w) => [
    w.row,
    f0(w.n),
    w.answerBytes === 0 ? '304, no body' : `${f1(w.answerBytes / 1024)} KiB`,
    f0(w.headerCount),
    f0(w.registry.rps),
    f2(w.registry.p50),
    f2(w.registry.p99),
    f1(w.registry.cpuUsPerReq),
    f1(w.registry.loadCpuUsPerReq),
    f2(w.registry.serverCpuShare),
    f2(w.registry.loadCpuShare),
    f0(w.bare.rps),
    f1(w.bare.cpuUsPerReq),
    pct(w.ratioBare),
    f0(w.headers.rps),
    f1(w.headers.cpuUsPerReq),
    pct(w.ratioHeaders),
    // What a request costs the headers ceiling over what it costs the registry: the ratio the
    // rates would have with a core each, less moved by other work on the machine than the rates.
    pct(w.headers.cpuUsPerReq / w.registry.cpuUsPerReq),
    ...(withBefore
      ? [
          f0(w.before?.rps),
          f1(w.before?.cpuUsPerReq),
          pct(w.before && w.registry.rps / w.before.rps),
          pct(w.before && w.registry.cpuUsPerReq / w.before.cpuUsPerReq),
        ]
      : []),
  ]);
  const sections: Section[] = [
    {
      title:
        `HTTP reads under ${r.generator}, -t${r.threads} -c${r.connections} (issue 33; median of ${opts.runs} x ${opts.durationS} s, interleaved; ` +
        `ratios to a bare Fastify serving the same bytes with Content-Type and ETag, and to one sending every header the registry sent; CPU from /proc, "cores" = CPU seconds per second; "CPU ratio" = the headers ceiling's CPU per request over the registry's` +
        `${withBefore ? `; "before" = the registry of ${opts.wrkBefore ?? '--wrk-before'}, a fourth side of the same runs, and this checkout's rate and CPU per request over its` : ''})`,
      ...table(head, rows, 2, []),
    },
  ];
  sections.push({
    title:
      'Memory and startup at each size of the wrk rows (VmRSS of the registry; startup = a restart on the database holding the tools, from spawn to the first 200 of /healthz)',
    ...table(
      ['tools', 'import ms', 'RSS after import MiB', 'startup ms', 'RSS at start MiB', 'RSS after the rows MiB'],
      r.sizes.map((s) => [
        f0(s.n),
        f0(s.importMs),
        f0(s.rssAfterImportMiB),
        f0(s.startupMs),
        f0(s.rssAfterStartMiB),
        f0(s.rssAfterRowsMiB),
      ]),
    ),
  });
  for (const p of r.profiles)
    sections.push({ title: `Profile: ${p.row} @${f0(p.n)} (${f0(p.requests)} requests; ${p.file})`, ...profileTable(p) });
  return sections;
}
