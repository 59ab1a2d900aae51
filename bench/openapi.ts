/**
 * Issue 30, OpenAPI sources: importing a document of 1,000 operations, what discovery costs
 * afterwards, and a bridged call of a REST API over HTTPS against calling the API directly.
 *
 * One registry process (OUTBOUND_CA_FILE names a throwaway CA, bench/throwaway-ca.ts), one
 * HTTPS API process (bench/https-api-server.ts, the CA's certificate, an API key required).
 *   import     PUT /openapi-sources/bench-N of bench/openapi-document.ts's 1,000 operations, once
 *              per run, each under its own prefix (so each writes 1,000 new tools): the median
 *              time, the registry's resident memory before and after (peak), and the longest
 *              /healthz answer while each import ran (the conversion is on a worker thread).
 *   discovery  With the imported tools: anonymous GET / and a lookup GET /tools/{name} against
 *              the ceiling (bench/ceiling-server.ts) serving the very same answers.
 *   call       POST /tools/api_getItem/invoke (a source's GET operation with a path argument,
 *              the source's API key, HTTPS verified against the CA) against GET
 *              https://localhost:<port>/items/7 with the key, straight to the API.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminToken, token } from './data.js';
import { freePort, median, peakRssMiB, rssMiB, spawnNode, type Child } from './lib.js';
import { compare, loader, measureSides, type Side } from './measure.js';
import { openApiDocument } from './openapi-document.js';
import { log, opts } from './options.js';
import { f0, f1, f2, pct, table, type Section } from './report.js';
import { captureAll, checkCeiling, exactSpec, startCeiling, startRegistry, type Registry } from './servers.js';
import { throwawayCa, type ThrowawayCa } from './throwaway-ca.js';

const OPERATIONS = 1000;
const API_KEY = 'bench-api-key-0123456789';

export interface OpenApiImportRun {
  ms: number;
  tools: number;
  /** Longest /healthz answer while the import ran, ms. */
  healthzMaxMs: number;
}

export interface OpenApiCompareRow {
  row: string;
  registry: Side;
  reference: Side;
  ratio: number;
}

export interface OpenApiResult {
  operations: number;
  imports: OpenApiImportRun[];
  importMs: number;
  healthzMaxMs: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  peakRssMiB: number;
  documentBytes: number;
  rows: OpenApiCompareRow[];
}

async function startApi(ca: ThrowawayCa): Promise<{ child: Child; port: number }> {
  const port = await freePort();
  const keyFile = join(ca.dir, 'api.key');
  const certFile = join(ca.dir, 'api.pem');
  writeFileSync(keyFile, ca.key);
  writeFileSync(certFile, ca.cert);
  const child = spawnNode('bench/https-api-server.ts', [String(port), keyFile, certFile, API_KEY], {});
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the HTTPS API did not get ready:\n${child.output()}`)), 60_000);
    child.proc.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the HTTPS API exited (${code}):\n${child.output()}`));
    });
  });
  return { child, port };
}

async function putSource(registry: Registry, id: string, body: unknown): Promise<{ ms: number; tools: number }> {
  const started = performance.now();
  const res = await fetch(`${registry.base}/openapi-sources/${id}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 201 && res.status !== 200) throw new Error(`PUT /openapi-sources/${id} answered ${res.status}: ${text.slice(0, 500)}`);
  return { ms, tools: (JSON.parse(text) as { tools: string[] }).tools.length };
}

/** The longest /healthz answer while `work` runs, polled one at a time. */
async function healthzDuring<T>(base: string, work: Promise<T>): Promise<{ value: T; maxMs: number }> {
  let done = false;
  let maxMs = 0;
  const poll = (async () => {
    while (!done) {
      const started = performance.now();
      await (await fetch(`${base}/healthz`)).arrayBuffer();
      maxMs = Math.max(maxMs, performance.now() - started);
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  try {
    return { value: await work, maxMs };
  } finally {
    done = true;
    await poll;
  }
}

export async function openApiBench(): Promise<OpenApiResult> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  const ca = throwawayCa();
  let registry: Registry | undefined;
  let api: { child: Child; port: number } | undefined;
  let ceiling: Awaited<ReturnType<typeof startCeiling>> | undefined;
  try {
    api = await startApi(ca);
    registry = await startRegistry(dir, { OUTBOUND_CA_FILE: ca.caFile });
    const pid = registry.child.pid;
    const document = openApiDocument(OPERATIONS);
    const documentBytes = Buffer.byteLength(JSON.stringify(document));
    const rssBeforeMiB = rssMiB(pid);
    const imports: OpenApiImportRun[] = [];
    for (let i = 1; i <= opts.runs; i++) {
      log(`openapi: import ${i}/${opts.runs} of ${OPERATIONS} operations`);
      const { value, maxMs } = await healthzDuring(registry.base, putSource(registry, `bench-${i}`, { prefix: `b${i}_`, document }));
      imports.push({ ...value, healthzMaxMs: maxMs });
      if (value.tools !== OPERATIONS) throw new Error(`the import made ${value.tools} tools, not ${OPERATIONS}`);
    }
    const rssAfterMiB = rssMiB(pid);
    const peak = peakRssMiB(pid);

    const rows: OpenApiCompareRow[] = [];
    const answers = await captureAll(registry.base, ['/', '/tools/b1_op7']);
    ceiling = await startCeiling(dir, 'openapi', { exact: exactSpec(dir, 'openapi', answers) });
    await checkCeiling(ceiling, answers);
    for (const [row, path] of [
      [`anonymous GET / (${(OPERATIONS * opts.runs).toLocaleString('en-US')} imported tools)`, '/'],
      ['GET /tools/{name} of an imported tool', '/tools/b1_op7'],
    ] as const) {
      const spec = { path, connections: opts.readConnections, expectStatus: 200 };
      const { registry: r, ceiling: c } = await compare(`openapi: ${row}`, loader(registry.base, spec, pid), loader(ceiling.base, spec));
      rows.push({ row, registry: r, reference: c, ratio: r.rps / c.rps });
    }

    // The bridged call: a GET with a path argument, the source's API key, verified TLS.
    const apiBase = `https://localhost:${api.port}`;
    const itemsDocument = {
      openapi: '3.1.0',
      info: { title: 'Items', version: '1' },
      servers: [{ url: apiBase }],
      components: { securitySchemes: { key: { type: 'apiKey', in: 'header', name: 'x-api-key' } } },
      security: [{ key: [] }],
      paths: {
        '/items/{id}': {
          get: {
            operationId: 'getItem',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
            responses: { '200': { description: 'an item' } },
          },
        },
      },
    };
    await putSource(registry, 'items', { prefix: 'api_', document: itemsDocument, credential: { apiKey: API_KEY } });
    const caller = `Bearer ${token('bench-openapi-caller', ['key'])}`;
    const check = await fetch(`${registry.base}/tools/api_getItem/invoke`, {
      method: 'POST',
      headers: { authorization: caller, 'content-type': 'application/json' },
      body: '{"id":"7"}',
    });
    const checked = await check.text();
    if (check.status !== 200 || !checked.includes('bench item'))
      throw new Error(`the bridged call answered ${check.status}: ${checked.slice(0, 300)}`);
    const [bridged, direct] = await measureSides('openapi: bridged GET over HTTPS', [
      [
        'bridged',
        loader(
          registry.base,
          {
            path: '/tools/api_getItem/invoke',
            method: 'POST',
            connections: opts.bridgeConcurrency,
            headers: { authorization: caller, 'content-type': 'application/json' },
            body: '{"id":"7"}',
            expectStatus: 200,
          },
          pid,
        ),
      ],
      [
        'direct',
        loader(
          apiBase,
          { path: '/items/7', connections: opts.bridgeConcurrency, headers: { 'x-api-key': API_KEY }, expectStatus: 200 },
          api.child.pid,
        ),
      ],
    ]);
    if (!bridged || !direct) throw new Error('openapi: missing side');
    rows.push({
      row: 'GET /items/{id} over HTTPS: bridged invoke against the API directly',
      registry: bridged,
      reference: direct,
      ratio: bridged.rps / direct.rps,
    });
    return {
      operations: OPERATIONS,
      imports,
      importMs: median(imports.map((i) => i.ms)),
      healthzMaxMs: Math.max(...imports.map((i) => i.healthzMaxMs)),
      rssBeforeMiB,
      rssAfterMiB,
      peakRssMiB: peak,
      documentBytes,
      rows,
    };
  } finally {
    await ceiling?.child.stop();
    await registry?.child.stop();
    await api?.child.stop();
    ca.remove();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function openApiSections(r: OpenApiResult): Section[] {
  const imports = table(
    ['operations', 'document', 'import time (median)', 'longest /healthz during it', 'RSS before', 'RSS after', 'peak RSS'],
    [
      [
        f0(r.operations),
        `${f1(r.documentBytes / 1024)} KiB`,
        `${f0(r.importMs)} ms`,
        `${f1(r.healthzMaxMs)} ms`,
        `${f0(r.rssBeforeMiB)} MiB`,
        `${f0(r.rssAfterMiB)} MiB (${f0(r.imports.length * r.operations)} tools)`,
        `${f0(r.peakRssMiB)} MiB`,
      ],
    ],
  );
  const compared = table(
    ['row', 'registry req/s', 'p50 ms', 'p99 ms', 'CPU us/req', 'reference req/s', 'p50 ms', 'p99 ms', 'ratio'],
    r.rows.map((x) => [
      x.row,
      f0(x.registry.rps),
      f2(x.registry.p50),
      f2(x.registry.p99),
      f0(x.registry.cpuUsPerReq),
      f0(x.reference.rps),
      f2(x.reference.p50),
      f2(x.reference.p99),
      pct(x.ratio),
    ]),
  );
  return [
    {
      title: `OpenAPI import (issue 30): PUT /openapi-sources/{id} of ${f0(r.operations)} operations, ${opts.runs} imports, each under its own prefix`,
      ...imports,
    },
    {
      title: `After the import (issue 30): discovery against the ceiling serving the same bytes, and a bridged HTTPS GET against calling the API directly (median of ${opts.runs} x ${opts.durationS} s)`,
      ...compared,
    },
  ];
}
