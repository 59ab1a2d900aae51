/**
 * The classic scenarios at one size: anonymous GET /, bearer GET / over 50 scope sets,
 * If-None-Match revalidation (304) and durable registrations (PUT, 16 clients), registry
 * against a ceiling serving the registry's own bytes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { adminToken, agentTokens, bundle, httpTool } from './data.js';
import { compare, loader, type LoadSpec, type Side } from './measure.js';
import { log, opts, TARGETS } from './options.js';
import { f0, f2, pct, table, type Section } from './report.js';
import { fetchView, importBundle, startCeiling, startRegistry, type Ceiling, type Registry } from './servers.js';

export interface Comparison {
  scenario: string;
  n: number;
  registry: Side;
  ceiling: Side;
  ratio: number;
  target: string;
  met: boolean | null;
}

let writeCounter = 0;

export async function scenarios(n: number): Promise<Comparison[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  let ceiling: Ceiling | undefined;
  try {
    log(`scenarios at ${n} tools: starting the registry`);
    registry = await startRegistry(dir);
    const importMs = await importBundle(registry, bundle(n));
    log(`imported ${n} tools in ${importMs.toFixed(0)} ms`);
    const admin = `Bearer ${adminToken()}`;

    // A sample write (replacing an existing tool with itself) for the ceiling's PUT answer.
    const sample = httpTool(1);
    const putRes = await fetch(`${registry.base}/tools/${String(sample['name'])}`, {
      method: 'PUT',
      headers: { authorization: admin, 'content-type': 'application/json' },
      body: JSON.stringify(sample),
    });
    const putBody = Buffer.from(await putRes.arrayBuffer());
    if (putRes.status !== 200) throw new Error(`sample PUT answered ${putRes.status}: ${putBody.toString()}`);

    // The exact bytes of every view the scenarios ask for.
    const tokens = agentTokens().map((t) => `Bearer ${t}`);
    const anonymous = await fetchView(registry.base, null);
    const views = [{ authorization: '', ...anonymous }];
    for (const t of tokens) views.push({ authorization: t, ...(await fetchView(registry.base, t)) });
    const bearerBytes = views.slice(1).map((v) => v.body.length);
    log(
      `views: anonymous ${(anonymous.body.length / 1024).toFixed(0)} KiB; ${new Set(views.slice(1).map((v) => v.headers['etag'])).size} distinct bearer views, ` +
        `${(Math.min(...bearerBytes) / 1024).toFixed(0)}-${(Math.max(...bearerBytes) / 1024).toFixed(0)} KiB`,
    );

    const writeBodyFile = join(dir, 'write.json');
    writeFileSync(writeBodyFile, putBody);
    ceiling = await startCeiling(dir, 'ceiling', {
      views: views.map((v, i) => {
        const bodyFile = join(dir, `view-${i}.json`);
        writeFileSync(bodyFile, v.body);
        return { authorization: v.authorization, bodyFile, headers: v.headers };
      }),
      write: {
        status: 201,
        bodyFile: writeBodyFile,
        headers: {
          'content-type': putRes.headers.get('content-type') ?? 'application/json; charset=utf-8',
          'x-registry-index': putRes.headers.get('x-registry-index') ?? '0',
        },
      },
    });
    const ceilingBase = ceiling.base;
    // The ceiling must serve the very same bytes.
    for (const v of [views[0], views[1]]) {
      if (!v) continue;
      const got = await fetchView(ceilingBase, v.authorization || null);
      if (!got.body.equals(v.body) || got.headers['etag'] !== v.headers['etag'])
        throw new Error("the ceiling does not serve the registry's bytes");
    }

    const results: Comparison[] = [];
    const ceilingPid = ceiling.child.pid;
    const reads = (scenario: string, ratioTarget: number, o: LoadSpec) => async () => {
      const { registry: r, ceiling: c } = await compare(
        `${scenario} @${n}`,
        loader(registry?.base ?? '', o, registry?.child.pid),
        loader(ceilingBase, o, ceilingPid),
      );
      const ratio = r.rps / c.rps;
      results.push({ scenario, n, registry: r, ceiling: c, ratio, target: `>= ${ratioTarget} of ceiling`, met: ratio >= ratioTarget });
    };
    let rotation = 0;
    const rotate = (request: autocannon.Request): autocannon.Request => {
      request.headers = { ...request.headers, authorization: tokens[rotation++ % tokens.length] ?? '' };
      return request;
    };

    await reads('anonymous GET /', TARGETS.readRatio, { connections: opts.readConnections, expectStatus: 200 })();
    await reads('bearer GET / (50 scope sets)', TARGETS.readRatio, {
      connections: opts.readConnections,
      expectStatus: 200,
      setupRequest: rotate,
    })();
    await reads('If-None-Match -> 304', TARGETS.notModifiedRatio, {
      connections: opts.readConnections,
      expectStatus: 304,
      headers: { 'if-none-match': anonymous.headers['etag'] ?? '' },
    })();

    // Durable registrations: distinct new names, so every request is a committed insert.
    const putNew = (request: autocannon.Request): autocannon.Request => {
      const i = writeCounter++;
      const tool = httpTool(i, 'bench-write');
      request.path = `/tools/${String(tool['name'])}`;
      request.body = JSON.stringify(tool);
      return request;
    };
    const writeOpts: LoadSpec = {
      connections: opts.writeConnections,
      method: 'PUT',
      headers: { authorization: admin, 'content-type': 'application/json' },
      expectStatus: 201,
      setupRequest: putNew,
    };
    const w = await compare(
      `registrations @${n}`,
      loader(registry.base, writeOpts, registry.child.pid),
      loader(ceilingBase, writeOpts, ceilingPid),
    );
    results.push({
      scenario: 'registrations (PUT, 16 clients)',
      n,
      registry: w.registry,
      ceiling: w.ceiling,
      ratio: w.registry.rps / w.ceiling.rps,
      target: `>= ${TARGETS.writesPerS} writes/s`,
      met: w.registry.rps >= TARGETS.writesPerS,
    });
    return results;
  } finally {
    await ceiling?.child.stop();
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function scenariosSection(rows: Comparison[]): Section {
  const t = table(
    [
      'scenario',
      'tools',
      'registry req/s',
      'p50 ms',
      'p99 ms',
      'CPU us/req',
      'ceiling req/s',
      'p50 ms',
      'p99 ms',
      'CPU us/req',
      'ratio',
      'target',
      'met',
    ],
    rows.map((s) => [
      s.scenario,
      f0(s.n),
      f0(s.registry.rps),
      f2(s.registry.p50),
      f2(s.registry.p99),
      f0(s.registry.cpuUsPerReq),
      f0(s.ceiling.rps),
      f2(s.ceiling.p50),
      f2(s.ceiling.p99),
      f0(s.ceiling.cpuUsPerReq),
      pct(s.ratio),
      s.target,
      s.met === null ? '-' : s.met ? 'yes' : 'NO',
    ]),
  );
  return {
    title: `Discovery and registrations (median of ${opts.runs} x ${opts.durationS} s; reads ${opts.readConnections} connections, writes ${opts.writeConnections})`,
    ...t,
  };
}
