/**
 * Issue 33: what a read costs inside the registry, two builds side by side in one process
 * (two checkouts, say main and a branch), without sockets or a load generator: each build's
 * app (buildApp, as the server makes it) on its own SQLite file with the same generated tools,
 * the reads sent through `app.inject` in rounds that alternate the builds, CPU from
 * process.cpuUsage() per round. The inject machinery costs both builds the same; the difference
 * is the registry's own: hooks, handler, headers. On a shared machine this sees differences of
 * a fraction of a microsecond that wrk's rates and the sampling profiler cannot.
 *
 *   node --import tsx bench/inject-ab.ts <before-checkout> <after-checkout> [tools=1000] [requests per round=20000] [rounds=7]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type * as AppModule from '../src/http/app.js';
import type * as ConfigModule from '../src/config.js';
import { adminToken, agentTokens, bundle, JWT_SECRET, toolName } from './data.js';
import { median } from './lib.js';
import { f1, f2, table } from './report.js';

interface Build {
  name: string;
  app: FastifyInstance;
  dir: string;
}

async function build(name: string, root: string, body: string): Promise<Build> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-inject-ab-'));
  const { buildApp } = (await import(pathToFileURL(join(root, 'src/http/app.ts')).href)) as typeof AppModule;
  const { loadConfig } = (await import(pathToFileURL(join(root, 'src/config.ts')).href)) as typeof ConfigModule;
  const config = loadConfig(
    {},
    {
      DATABASE_PATH: join(dir, 'registry.db'),
      JWT_SECRET,
      // A budget the load cannot use up, as the wrk rows have: the limiter runs, never refuses.
      RATE_LIMIT_MAX: '10000000',
      BODY_LIMIT: String(512 * 1024 * 1024),
      PUBLIC_URL: 'http://registry.bench.invalid',
    },
  );
  const app = await buildApp(config);
  const res = await app.inject({
    method: 'POST',
    url: '/import',
    headers: { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' },
    payload: body,
  });
  if (res.statusCode !== 200) throw new Error(`${name}: POST /import answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  return { name, app, dir };
}

interface Row {
  row: string;
  requests: (b: Build) => Promise<{ url: string; headers: Record<string, string>; status: number }[]>;
}

async function main(): Promise<void> {
  const [before, after, toolsText = '1000', perRoundText = '20000', roundsText = '7'] = process.argv.slice(2);
  if (before === undefined || after === undefined) {
    process.stderr.write(
      'usage: node --import tsx bench/inject-ab.ts <before-checkout> <after-checkout> [tools] [requests per round] [rounds]\n',
    );
    process.exit(2);
  }
  const n = Number(toolsText);
  const perRound = Number(perRoundText);
  const rounds = Number(roundsText);
  const body = bundle(n);
  const builds = [await build('before', resolve(before), body), await build('after', resolve(after), body)];
  const token = `Bearer ${agentTokens()[0] ?? ''}`;
  const names = Array.from({ length: Math.min(n, 200) }, (_, k) => toolName(Math.floor(((k + 0.5) * n) / Math.min(n, 200))));
  const etagOf = async (b: Build, url: string, headers: Record<string, string> = {}) =>
    String((await b.app.inject({ method: 'GET', url, headers })).headers['etag']);
  const rows: Row[] = [
    {
      row: 'GET / with If-None-Match -> 304',
      requests: async (b) => [{ url: '/', headers: { 'if-none-match': await etagOf(b, '/') }, status: 304 }],
    },
    {
      row: 'GET / with a token, If-None-Match -> 304',
      requests: async (b) => [
        { url: '/', headers: { authorization: token, 'if-none-match': await etagOf(b, '/', { authorization: token }) }, status: 304 },
      ],
    },
    {
      row: 'one tool by name, If-None-Match -> 304',
      requests: async (b) =>
        Promise.all(
          names.map(async (name) => ({
            url: `/tools/${name}`,
            headers: { 'if-none-match': await etagOf(b, `/tools/${name}`) },
            status: 304,
          })),
        ),
    },
    { row: 'one tool by name', requests: async () => names.map((name) => ({ url: `/tools/${name}`, headers: {}, status: 200 })) },
    { row: 'first page of 100', requests: async () => [{ url: '/?limit=100', headers: {}, status: 200 }] },
  ];
  const results: string[][] = [];
  for (const row of rows) {
    const sets = await Promise.all(builds.map((b) => row.requests(b)));
    const cpu: number[][] = builds.map(() => []);
    const run = async (k: number, count: number) => {
      const b = builds[k];
      const set = sets[k];
      if (b === undefined || set === undefined) throw new Error('missing build');
      const started = process.cpuUsage();
      for (let i = 0; i < count; i++) {
        const r = set[i % set.length];
        if (r === undefined) continue;
        const res = await b.app.inject({ method: 'GET', url: r.url, headers: r.headers });
        if (res.statusCode !== r.status) throw new Error(`${b.name}: GET ${r.url} answered ${res.statusCode}, not ${r.status}`);
      }
      const used = process.cpuUsage(started);
      return (used.user + used.system) / count;
    };
    for (let k = 0; k < builds.length; k++) await run(k, perRound / 4);
    for (let round = 0; round < rounds; round++) {
      // A B, B A, ...: neither build always runs first.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) cpu[k]?.push(await run(k, perRound));
    }
    const [a, b] = cpu.map((runs) => median(runs));
    results.push([row.row, f1(a), f1(b), f2((b ?? NaN) - (a ?? NaN)), `${f1((((b ?? NaN) - (a ?? NaN)) / (a ?? NaN)) * 100)}%`]);
    process.stderr.write(
      `[inject-ab] ${row.row}: before ${f2(a)} us, after ${f2(b)} us (rounds: ${cpu.map((r) => r.map((v) => v.toFixed(1)).join(' ')).join(' | ')})\n`,
    );
  }
  const t = table(['read', 'before CPU us/req', 'after CPU us/req', 'after - before', 'change'], results);
  process.stdout.write(
    `\n${n} tools, ${perRound} requests a round, median of ${rounds} rounds, app.inject in one process (before: ${before}, after: ${after})\n${t.text}\n\n${t.markdown}\n`,
  );
  for (const b of builds) {
    await b.app.close();
    rmSync(b.dir, { recursive: true, force: true });
  }
}

await main();
