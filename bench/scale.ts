/**
 * Issue 10 at one catalogue size: pages, lookups by name, search, filters and durable writes,
 * each against a ceiling serving the registry's own answer bytes (same status and headers) for
 * the same request URLs, in the same run.
 *
 * One registry per size, seeded through POST /import; then, for `updated_since`, 20 tools
 * replaced after a recorded time; then every answer the read rows ask for is captured and one
 * ceiling serves them all. Writes come last (they change the catalogue), with a ceiling of
 * their own per row that parses the same JSON body and answers the registry's sample bytes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type autocannon from 'autocannon';
import { adminToken, bundle, FILTER_SCOPE, httpTool, SEARCHES, toolDescription, toolName } from './data.js';
import { sleep } from './lib.js';
import { compare, loader, type LoadSpec, type Side } from './measure.js';
import { log, opts, TARGETS, type Group } from './options.js';
import { f0, f1, f2, pct, passMiss, table, type Section } from './report.js';
import {
  capture,
  captureAll,
  checkCeiling,
  exactSpec,
  importBundle,
  keptHeaders,
  searchIndexed,
  startCeiling,
  startRegistry,
  type Captured,
  type Registry,
} from './servers.js';

export type ScaleGroup = Extract<Group, 'pages' | 'lookup' | 'search' | 'filters' | 'writes'>;

export interface ScaleRow {
  group: ScaleGroup;
  row: string;
  n: number;
  /** The request (path and query); `{name}` where it rotates over names. */
  url: string;
  /** Tools in one answer (1 for a lookup), and its bytes (the mean over names for lookups). */
  answerTools: number | null;
  answerBytes: number | null;
  registry: Side | null;
  ceiling: Side | null;
  ratio: number | null;
  goal: string;
  met: boolean | null;
  /** Why a row was not measured, or what looked wrong. */
  note?: string;
}

/** Tools replaced after `updated_since`'s time, so that filter's answer is small. */
const LATE_WRITES = 20;
/** From the very beginning: every tool matches, the answer is a page of 100. */
const EARLY_SINCE = '2000-01-01T00:00:00Z';

const readGoal = `>= ${TARGETS.scaleReadRatio} of ceiling, p99 < ${TARGETS.scaleReadP99Ms} ms`;
/**
 * Issue 10 asks pages and lookups for a share of the ceiling; searches and filters build their
 * answer per request, and are asked for a p99 and a cost that follows the page (the growth
 * table), their ratio reported beside.
 */
const builtGoal = `p99 < ${TARGETS.scaleReadP99Ms} ms`;
const goalOf = (group: ScaleGroup) => (group === 'search' || group === 'filters' ? builtGoal : readGoal);
const metGoal = (group: ScaleGroup, ratio: number, p99: number) =>
  p99 < TARGETS.scaleReadP99Ms && (goalOf(group) === builtGoal || ratio >= TARGETS.scaleReadRatio);
const writeGoal = `>= ${TARGETS.scaleWritesPerS.toLocaleString('en-US')} writes/s`;

function toolsIn(body: Buffer): number | null {
  try {
    const parsed = JSON.parse(body.toString()) as { tools?: unknown };
    return Array.isArray(parsed.tools) ? parsed.tools.length : null;
  } catch {
    return null;
  }
}

interface ReadCase {
  group: ScaleGroup;
  row: string;
  url: string;
  answer: Captured;
}

let writeCounter = 0;
let revision = 0;

export async function scale(n: number, groups: Record<ScaleGroup, boolean>): Promise<ScaleRow[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let registry: Registry | undefined;
  const rows: ScaleRow[] = [];
  const admin = { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' };
  try {
    log(`scale ${n}: starting the registry`);
    registry = await startRegistry(dir);
    const importMs = await importBundle(registry, bundle(n));
    log(`scale ${n}: imported ${n} tools in ${importMs.toFixed(0)} ms, searchable ${(await searchIndexed(registry)).toFixed(0)} ms later`);
    const base = registry.base;

    let lateSince = '';
    if (groups.filters) {
      await sleep(20);
      lateSince = new Date().toISOString();
      await sleep(5);
      for (let k = 0; k < LATE_WRITES; k++) {
        const i = Math.floor((k * n) / LATE_WRITES);
        const res = await fetch(`${base}/tools/${toolName(i)}`, {
          method: 'PUT',
          headers: admin,
          body: JSON.stringify({ ...httpTool(i), description: `${toolDescription(i)} Revised.` }),
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`late write of ${toolName(i)} answered ${res.status}`);
      }
    }

    // Every answer the read rows ask for, captured once from the registry.
    const cases: ReadCase[] = [];
    const unmeasured = (group: ScaleGroup, row: string, url: string, note: string) => {
      log(`scale ${n}: ${row}: ${note}`);
      rows.push({
        group,
        row,
        n,
        url,
        answerTools: null,
        answerBytes: null,
        registry: null,
        ceiling: null,
        ratio: null,
        goal: goalOf(group),
        met: false,
        note,
      });
    };
    const single = async (group: ScaleGroup, row: string, url: string) => {
      const answer = await capture(base, url);
      if (answer.status !== 200)
        return unmeasured(group, row, url, `registry answered ${answer.status}: ${answer.body.toString().slice(0, 200)}`);
      cases.push({ group, row, url, answer });
      return answer;
    };
    if (groups.pages) {
      const first = await single('pages', 'first page', '/?limit=100');
      // Follow nextCursor a few times, then load-test the page reached.
      let answer = first;
      let hops = 0;
      let url = '';
      while (answer && hops < opts.pageHops) {
        const next = (JSON.parse(answer.body.toString()) as { nextCursor?: string | null }).nextCursor;
        if (typeof next !== 'string') break;
        url = `/?limit=100&cursor=${encodeURIComponent(next)}`;
        answer = await capture(base, url);
        hops++;
        if (answer.status !== 200) break;
      }
      const row = `later page (after ${hops} nextCursor)`;
      if (hops === 0) unmeasured('pages', row, '/?limit=100&cursor=...', 'no nextCursor on the first page');
      else if (answer?.status !== 200) unmeasured('pages', row, url, `registry answered ${answer?.status}`);
      else cases.push({ group: 'pages', row, url, answer });
    }
    if (groups.search) for (const s of SEARCHES) await single('search', `q: ${s.label} "${s.q}"`, `/?q=${encodeURIComponent(s.q)}`);
    if (groups.filters) {
      await single('filters', `updated_since near the end (${LATE_WRITES} changed)`, `/?updated_since=${encodeURIComponent(lateSince)}`);
      await single('filters', 'updated_since from the beginning (all match)', `/?updated_since=${encodeURIComponent(EARLY_SINCE)}`);
      await single('filters', `scope=${FILTER_SCOPE}`, `/?scope=${encodeURIComponent(FILTER_SCOPE)}`);
    }
    let lookups: Captured[] = [];
    if (groups.lookup) {
      // Names spread evenly over the catalogue; each request picks one at random.
      const count = Math.min(n, opts.lookupNames);
      const urls = Array.from({ length: count }, (_, k) => `/tools/${toolName(Math.floor(((k + 0.5) * n) / count))}`);
      lookups = await captureAll(base, urls);
    }
    for (const c of cases) {
      const tools = toolsIn(c.answer.body);
      if (tools === 0) log(`scale ${n}: ${c.row}: the answer lists no tools`);
    }

    if (cases.length > 0 || lookups.length > 0) {
      const ceiling = await startCeiling(dir, 'ceiling-reads', {
        exact: exactSpec(dir, 'reads', [...cases.map((c) => c.answer), ...lookups]),
      });
      try {
        await checkCeiling(ceiling, [...cases.map((c) => c.answer), ...lookups.slice(0, 3)]);
        const measure = async (
          group: ScaleGroup,
          row: string,
          url: string,
          spec: LoadSpec,
          answer: { tools: number | null; bytes: number },
        ) => {
          const { registry: r, ceiling: c } = await compare(
            `${row} @${n}`,
            loader(base, spec, registry?.child.pid),
            loader(ceiling.base, spec, ceiling.child.pid),
          );
          const ratio = r.rps / c.rps;
          rows.push({
            group,
            row,
            n,
            url,
            answerTools: answer.tools,
            answerBytes: answer.bytes,
            registry: r,
            ceiling: c,
            ratio,
            goal: goalOf(group),
            met: metGoal(group, ratio, r.p99),
            ...(r.errors > 0 && { note: `registry: ${r.errors} unexpected answers` }),
          });
        };
        for (const c of cases) {
          await measure(
            c.group,
            c.row,
            c.url,
            { path: c.url, connections: opts.readConnections, expectStatus: 200 },
            { tools: toolsIn(c.answer.body), bytes: c.answer.body.length },
          );
        }
        if (lookups.length > 0) {
          const meanBytes = lookups.reduce((sum, a) => sum + a.body.length, 0) / lookups.length;
          const pickName = (request: autocannon.Request): autocannon.Request => {
            request.path = lookups[Math.floor(Math.random() * lookups.length)]?.url ?? '/';
            return request;
          };
          const row = `GET /tools/{name}, anonymous (${lookups.length} names)`;
          await measure(
            'lookup',
            row,
            '/tools/{name}',
            { connections: opts.readConnections, expectStatus: 200, setupRequest: pickName },
            { tools: 1, bytes: meanBytes },
          );
          const etagged = lookups.filter((a) => a.headers['etag'] !== undefined);
          const row304 = 'If-None-Match -> 304';
          if (etagged.length === 0) {
            rows.push({
              group: 'lookup',
              row: row304,
              n,
              url: '/tools/{name}',
              answerTools: null,
              answerBytes: null,
              registry: null,
              ceiling: null,
              ratio: null,
              goal: readGoal,
              met: null,
              note: 'no ETag',
            });
          } else {
            if (etagged.length < lookups.length) log(`scale ${n}: only ${etagged.length} of ${lookups.length} lookups carry an ETag`);
            const revalidate = (request: autocannon.Request): autocannon.Request => {
              const a = etagged[Math.floor(Math.random() * etagged.length)];
              request.path = a?.url ?? '/';
              request.headers = { ...request.headers, 'if-none-match': a?.headers['etag'] ?? '' };
              return request;
            };
            await measure(
              'lookup',
              row304,
              '/tools/{name}',
              { connections: opts.readConnections, expectStatus: 304, setupRequest: revalidate },
              { tools: 0, bytes: 0 },
            );
          }
        }
      } finally {
        await ceiling.child.stop();
      }
    }

    if (groups.writes) rows.push(...(await writes(registry, n, dir)));
    return rows;
  } finally {
    await registry?.child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface WriteKind {
  row: string;
  method: 'POST' | 'PUT';
  expect: number;
  /** The i-th request: its path and body. */
  request: (k: number) => { path: string; body: string };
}

async function writes(registry: Registry, n: number, dir: string): Promise<ScaleRow[]> {
  const admin = { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' };
  const kinds: WriteKind[] = [
    {
      row: 'POST /tools/register (new names)',
      method: 'POST',
      expect: 201,
      request: (k) => ({ path: '/tools/register', body: JSON.stringify(httpTool(k, 'bench-reg')) }),
    },
    {
      row: 'PUT /tools/{name} (new names)',
      method: 'PUT',
      expect: 201,
      request: (k) => {
        const tool = httpTool(k, 'bench-put');
        return { path: `/tools/${String(tool['name'])}`, body: JSON.stringify(tool) };
      },
    },
    {
      // A real change each time (a new revision in the description), cycling over the catalogue.
      row: 'PUT /tools/{name} (replace existing)',
      method: 'PUT',
      expect: 200,
      request: (k) => {
        const i = k % n;
        return {
          path: `/tools/${toolName(i)}`,
          body: JSON.stringify({ ...httpTool(i), description: `${toolDescription(i)} Revision ${++revision}.` }),
        };
      },
    },
  ];
  const rows: ScaleRow[] = [];
  for (const kind of kinds) {
    const sample = kind.request(writeCounter++);
    const res = await fetch(`${registry.base}${sample.path}`, { method: kind.method, headers: admin, body: sample.body });
    const answer: Captured = {
      url: sample.path,
      status: res.status,
      body: Buffer.from(await res.arrayBuffer()),
      headers: keptHeaders(res),
    };
    const url = kind.row.split(' (')[0] ?? kind.row;
    if (answer.status !== kind.expect) {
      const note = `sample answered ${answer.status}, not ${kind.expect}: ${answer.body.toString().slice(0, 200)}`;
      log(`scale ${n}: ${kind.row}: ${note}`);
      rows.push({
        group: 'writes',
        row: kind.row,
        n,
        url,
        answerTools: null,
        answerBytes: null,
        registry: null,
        ceiling: null,
        ratio: null,
        goal: writeGoal,
        met: false,
        note,
      });
      continue;
    }
    const bodyFile = join(dir, `write-${rows.length}.json`);
    writeFileSync(bodyFile, answer.body);
    const spec = { status: answer.status, bodyFile, headers: answer.headers };
    const ceiling = await startCeiling(dir, `ceiling-write-${rows.length}`, kind.method === 'POST' ? { register: spec } : { write: spec });
    try {
      const setupRequest = (request: autocannon.Request): autocannon.Request => {
        const next = kind.request(writeCounter++);
        request.path = next.path;
        request.body = next.body;
        return request;
      };
      const load: LoadSpec = {
        connections: opts.writeConnections,
        method: kind.method,
        headers: admin,
        expectStatus: kind.expect,
        setupRequest,
      };
      const { registry: r, ceiling: c } = await compare(
        `${kind.row} @${n}`,
        loader(registry.base, load, registry.child.pid),
        loader(ceiling.base, load, ceiling.child.pid),
      );
      rows.push({
        group: 'writes',
        row: kind.row,
        n,
        url,
        answerTools: 1,
        answerBytes: answer.body.length,
        registry: r,
        ceiling: c,
        ratio: r.rps / c.rps,
        goal: writeGoal,
        met: r.rps >= TARGETS.scaleWritesPerS,
        ...(r.errors > 0 && { note: `registry: ${r.errors} unexpected answers` }),
      });
    } finally {
      await ceiling.child.stop();
    }
  }
  return rows;
}

export function scaleSections(rows: ScaleRow[]): Section[] {
  const sections: Section[] = [];
  const reads = rows.filter((r) => r.group !== 'writes');
  const head = [
    'group',
    'row',
    'tools',
    'answer',
    'registry req/s',
    'p50 ms',
    'p99 ms',
    'CPU us/req',
    'ceiling req/s',
    'p50 ms',
    'p99 ms',
    'ratio',
    'goal',
    'met',
    'note',
  ];
  const line = (r: ScaleRow, answer: string) => [
    r.group,
    r.row,
    f0(r.n),
    answer,
    f0(r.registry?.rps),
    f2(r.registry?.p50),
    f2(r.registry?.p99),
    f0(r.registry?.cpuUsPerReq),
    f0(r.ceiling?.rps),
    f2(r.ceiling?.p50),
    f2(r.ceiling?.p99),
    pct(r.ratio),
    r.goal,
    passMiss(r.met),
    r.note ?? '',
  ];
  const answerOf = (r: ScaleRow) =>
    r.answerBytes === null
      ? '-'
      : r.answerTools === 0 && r.answerBytes === 0
        ? '304, no body'
        : `${r.answerTools ?? '?'} tools, ${f1(r.answerBytes / 1024)} KiB`;
  if (reads.length > 0) {
    sections.push({
      title: `Pages, lookups, search and filters (issue 10; median of ${opts.runs} x ${opts.durationS} s, ${opts.readConnections} connections, anonymous)`,
      ...table(
        head,
        reads.map((r) => line(r, answerOf(r))),
        2,
        ['goal', 'note'],
      ),
    });
  }
  const w = rows.filter((r) => r.group === 'writes');
  if (w.length > 0) {
    sections.push({
      title: `Durable writes (issue 10; median of ${opts.runs} x ${opts.durationS} s, ${opts.writeConnections} clients, admin token; ratio = writes/s over the ceiling's answers/s)`,
      ...table(
        head.map((h) => (h === 'registry req/s' ? 'writes/s' : h === 'ceiling req/s' ? 'ceiling answers/s' : h)),
        w.map((r) => line(r, r.answerBytes === null ? '-' : `${f0(r.answerBytes)} B`)),
        2,
        ['goal', 'note'],
      ),
    });
    const cores = availableParallelism();
    sections.push({
      title:
        `What bounds durable writes (the registry's side of the runs above; CPU us per write). "One thread" = 1 s / main-thread CPU a write: the rate at which the event loop, ` +
        `which runs each write's HTTP, validation, SQL and commit, is saturated. "${cores} cores" = ${cores} s / (registry CPU + load generator CPU) a write: the rate at which the machine is.`,
      ...table(
        [
          'row',
          'tools',
          'writes/s',
          'registry CPU',
          'of it main thread',
          'load generator CPU',
          'bound: one thread /s',
          `bound: ${cores} cores /s`,
          'ceiling CPU',
        ],
        w.map((r) => {
          const s = r.registry;
          return [
            r.row,
            f0(r.n),
            f0(s?.rps),
            f0(s?.cpuUsPerReq),
            f0(s?.mainCpuUsPerReq),
            f0(s?.loadCpuUsPerReq),
            f0(s ? 1e6 / s.mainCpuUsPerReq : undefined),
            f0(s ? (cores * 1e6) / (s.cpuUsPerReq + s.loadCpuUsPerReq) : undefined),
            f0(r.ceiling?.cpuUsPerReq),
          ];
        }),
        2,
      ),
    });
  }
  return sections;
}
