/**
 * `npm run bench`: throughput and latency of the registry against a ceiling, on this machine.
 *
 *   npm run bench [-- flags]
 *
 * Flags (unknown flags are an error):
 *   --quick                 1 run x 2 s per row, 1 s warm-up, shorter growth probes (default 3 x 5 s, 2 s)
 *   --runs=N                runs per row; each figure is the median of the runs
 *   --duration=S            seconds per run
 *   --only=a,b,...          run only these groups (below); default: all of them
 *   --no-<group>            leave one group out (--no-scenarios, --no-growth, --no-bridge,
 *                           --no-waiters, --no-pages, --no-lookup, --no-search, --no-filters,
 *                           --no-import, --no-writes, --no-cores, --no-mcp, --no-openapi, --no-replication,
 *                           --no-validation, --no-search-index)
 *   --sizes=1000,10000      catalogue sizes of the classic scenarios (default 1000,10000); given
 *                           alone, also the sizes of pages, lookup, search, filters and writes
 *   --scale-sizes=...       sizes of pages, lookup, search, filters and writes (default
 *                           1000,10000,100000, or --sizes when only that is given)
 *   --growth-sizes=...      sizes of the growth table (default 1000,10000,100000)
 *   --lookup-names=N        names the lookups rotate over, spread over the catalogue (default 2000)
 *   --page-hops=N           nextCursor links followed before load-testing a later page (default 5)
 *   --import-seed=N         tools in the registry before the import row (default 1000)
 *   --import-size=N         tools the import row imports under load (default 100000)
 *   --cores-size=N          catalogue size of the cores row (default 10000)
 *   --cores-processes=N     ceiling processes sharing one port (default os.availableParallelism())
 *   --waiters=N             blocking queries of the waiters group (default 10000)
 *   --replication-sizes=... catalogue sizes a new replica catches up from (default 10000,100000;
 *                           --quick 1000,5000)
 *   --replication-writes=N  sequential writes per run of the replication visibility row (default
 *                           300; --quick 100)
 *   --replication-catch-up-runs=N  fresh replicas timed at each catch-up size (default --runs)
 *   --wrk-sizes=1000,10000  catalogue sizes of the wrk read rows (default 1000,10000; add 100000 to see it)
 *   --wrk-threads=N         wrk's threads (default 2); --wrk-connections=N its connections (default 32)
 *   --workers-size=N        catalogue size of the workers rows (default 10000)
 *   --workers-processes=N   registry workers sharing one port in the workers rows (default 2)
 *   --wrk-before=DIR        another checkout (say the code before a change, with node_modules) whose
 *                           registry is measured as a fourth side of every wrk row, in the same runs
 *   --wrk-profile           also run each wrk row once under the registry's CPU profiler and print
 *                           where the microseconds go, hook by hook (profiles in --profile-dir,
 *                           default .cache/bench/profiles; bench/profile-summary.ts reads one again)
 *
 * Groups:
 *   scenarios  At each --sizes: the registry (a child process, `node --import tsx src/cli/main.ts
 *              serve`) seeded with N generated HTTP tools through POST /import, and a ceiling (a
 *              bare Fastify child process serving the exact bytes the registry returned, from
 *              Buffers, with the same headers). Anonymous GET /, bearer GET / over 50 tokens with
 *              50 scope sets, If-None-Match revalidation (304) and durable registrations (PUT
 *              /tools/{name}, 16 clients).
 *   growth     Import time, startup time with N tools in the database, resident memory,
 *              anonymous GET / at 1,000 to 100,000 tools, and the latency of a page, a lookup, a
 *              search and a filter at each size.
 *   bridge     Bridged calls (needs java and mvn): a Pulsar broker (scripts/pulsar.sh), a TS echo
 *              tool service, POST /tools/{name}/invoke against the same calls made on the bus.
 *   waiters    10,000 blocking queries held by a client process; one write wakes them all.
 *   Issue 10, at each --scale-sizes (one registry per size, one ceiling serving the registry's
 *   captured answers for the same URLs; bench/scale.ts):
 *   pages      GET /?limit=100, and a later page reached by following nextCursor --page-hops times.
 *   lookup     GET /tools/{name} over --lookup-names names, anonymous; If-None-Match -> 304 when
 *              the answers carry an ETag ("no ETag" otherwise).
 *   search     ?q= with two words, three words, and a snake_case part of tool names.
 *   filters    ?updated_since= near the end (20 tools changed), from the beginning (a page of 100
 *              of all), and ?scope=.
 *   writes     POST /tools/register and PUT /tools/{name} of new names, and PUT replacing existing
 *              tools, 16 clients, admin token; the ceiling parses the body and answers the
 *              registry's bytes.
 *   import     Reads (GET / over 4 connections, /healthz over 1) during POST /import of
 *              --import-size tools onto --import-seed; the server's peak RSS against the
 *              catalogue's memory (bench/import-reads.ts).
 *   cores      The ceiling as 1 and as --cores-processes processes on one port (node:cluster)
 *              next to the registry, for a lookup and the full list (bench/cores.ts).
 *   Issue 11 (bench/mcp.ts):
 *   mcp        One registry with 1,000 generated tools and an echo HTTP tool (bench/echo-server.ts):
 *              tools/list over /mcp (one initialized session, one page) against GET / with the
 *              same token, and tools/call of the echo tool over /mcp against POST
 *              /tools/{name}/invoke with the same arguments and token; ratios MCP / HTTP. Issue 31:
 *              tools/list against a bare Fastify serving its bytes, and at 10,000 tools
 *              (bench/mcp-pages.ts) the first page and a whole walk of the 10 pages, each against
 *              GET / answering as many tools and against the bare Fastify.
 *   Issue 30 (bench/openapi.ts):
 *   openapi    PUT /openapi-sources/{id} of 1,000 operations (time, memory, /healthz during it),
 *              discovery of the imported tools against the ceiling, and a bridged GET of a REST
 *              API over HTTPS (a throwaway CA, an API key) against calling the API directly.
 *   Issue 14 (bench/replication.ts; a Pulsar broker: PULSAR_WS_URL, else the one scripts/pulsar.sh
 *   runs, else one started with scripts/pulsar.sh and stopped at the end):
 *   replication  Three replicas on one topic: time from a write on one until every replica's
 *              blocking GET / shows it; POST /tools/register throughput (16 clients) replicated
 *              against one process; a new replica's catch-up time at --replication-sizes.
 *   Issue 28 (bench/validation.ts; in this process, no server):
 *   validation Median microseconds of one validation of ordinary tools' arguments (the
 *              examples/descriptors/ tools, patterns and formats, an order, arrays of objects):
 *              plain Ajv with V8's regular expressions (before) against the registry's
 *              ArgumentValidators (after), and the ratio after / before.
 *   Issue 32 (bench/search.ts; in this process, no server):
 *   search-index  The registry's full-text index against MiniSearch and Orama on the generated
 *              tools at --sizes: build time, memory, median microseconds per query, agreement
 *              of the top 10, and the index unit tests' ranking cases each passes.
 *   Issue 33 (bench/wrk-reads.ts; needs wrk: `apt-get install -y wrk`):
 *   wrk        The HTTP reads driven by wrk (C, epoll), whose CPU is shown beside the server's: full
 *              list anonymous and bearer (3 of 50 scopes), first page of 100, a later page, one tool
 *              by name, and 304s, at --wrk-sizes, against a bare ceiling (body, Content-Type, ETag)
 *              and one sending every header the registry sent; defaults but for an unreachable
 *              rate limit (10,000,000 a minute, so the limiter runs on every request).
 *   workers    One registry process against --workers-processes workers sharing one port
 *              (node:cluster, bench/registry-workers.ts), each with its own read model of the same
 *              SQLite file, under wrk: a lookup, the 304 of GET / and a first page, with
 *              requests per server core (bench/workers.ts).
 *
 * Runs alternate registry and ceiling after a warm-up of each; every figure is the median of the
 * runs. Prints tables (ratios, and each goal with pass/miss), and writes the raw results to
 * .cache/bench/ (results-<date>.json, latest.json, latest.md).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bridge, bridgeSection, stopPulsarSync, type BridgeResult } from './bridged-calls.js';
import { cores, coresSection, type CoresRow } from './cores.js';
import { growth, growthSections, type GrowthRow } from './growth.js';
import { importDuringReads, importSection, type ImportReadsResult } from './import-reads.js';
import { killAllChildren, REPO_ROOT } from './lib.js';
import { mcpBench, mcpSection, type McpResult } from './mcp.js';
import { openApiBench, openApiSections, type OpenApiResult } from './openapi.js';
import { replication, replicationSections, stopReplicationBrokerSync, type ReplicationResult } from './replication.js';
import { log, opts, TARGETS } from './options.js';
import { f0, machine, table, type Section } from './report.js';
import { scale, scaleSections, type ScaleGroup, type ScaleRow } from './scale.js';
import { scenarios, scenariosSection, type Comparison } from './scenarios.js';
import { searchIndexBench, searchIndexSections, type SearchIndexResult } from './search.js';
import { validationBench, validationSection, type ValidationResult } from './validation.js';
import { workersBench, workersSection, type WorkersRow } from './workers.js';
import { wrkReads, wrkSections, type WrkResult } from './wrk-reads.js';
import { runWaitersBench, type WaitersResult } from './waiters.js';

const argv = process.argv.slice(2);

// Every child stops, whatever happens.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping children`);
    killAllChildren();
    stopPulsarSync();
    stopReplicationBrokerSync();
    process.exit(130);
  });
}

type Failed = { skipped: string };
const failed = (err: unknown): Failed => ({ skipped: `failed: ${err instanceof Error ? err.message : String(err)}` });

async function main(): Promise<void> {
  const startedAt = new Date();
  const results: {
    date: string;
    command: string;
    machine: ReturnType<typeof machine>;
    options: typeof opts;
    targets: typeof TARGETS;
    scenarios: Comparison[];
    growth: GrowthRow[];
    bridge: BridgeResult | null;
    waiters: WaitersResult | Failed | null;
    scale: ScaleRow[];
    importDuringReads: ImportReadsResult | Failed | null;
    cores: CoresRow[] | Failed | null;
    mcp: McpResult | Failed | null;
    openapi: OpenApiResult | Failed | null;
    replication: ReplicationResult | Failed | null;
    validation: ValidationResult | Failed | null;
    searchIndex: SearchIndexResult | Failed | null;
    wrk: WrkResult | Failed | null;
    workers: WorkersRow[] | Failed | null;
    elapsedS?: number;
  } = {
    date: startedAt.toISOString(),
    command: `npm run bench${argv.length > 0 ? ` -- ${argv.join(' ')}` : ''}`,
    machine: machine(),
    options: opts,
    targets: TARGETS,
    scenarios: [],
    growth: [],
    bridge: null,
    waiters: null,
    scale: [],
    importDuringReads: null,
    cores: null,
    mcp: null,
    openapi: null,
    replication: null,
    validation: null,
    searchIndex: null,
    wrk: null,
    workers: null,
  };
  const g = opts.groups;
  log(`options: ${JSON.stringify(opts)}`);

  if (g.wrk) {
    try {
      results.wrk = await wrkReads();
    } catch (err) {
      results.wrk = failed(err);
      log(`wrk: ${results.wrk.skipped}`);
    }
  }
  if (g.workers) {
    try {
      results.workers = await workersBench();
    } catch (err) {
      results.workers = failed(err);
      log(`workers: ${results.workers.skipped}`);
    }
  }
  if (g.scenarios) for (const n of opts.sizes) results.scenarios.push(...(await scenarios(n)));
  const scaleGroups: Record<ScaleGroup, boolean> = {
    pages: g.pages,
    lookup: g.lookup,
    search: g.search,
    filters: g.filters,
    writes: g.writes,
  };
  if (Object.values(scaleGroups).some(Boolean)) {
    for (const n of opts.scaleSizes) {
      try {
        results.scale.push(...(await scale(n, scaleGroups)));
      } catch (err) {
        // One size failing (the registry refusing the import, say) leaves the others to run.
        const note = failed(err).skipped;
        log(`scale ${n}: ${note}`);
        results.scale.push({
          group: 'pages',
          row: 'every row at this size',
          n,
          url: '-',
          answerTools: null,
          answerBytes: null,
          registry: null,
          ceiling: null,
          ratio: null,
          goal: '-',
          met: false,
          note,
        });
      }
    }
  }
  if (g.import) {
    try {
      results.importDuringReads = await importDuringReads();
    } catch (err) {
      results.importDuringReads = failed(err);
      log(`import: ${results.importDuringReads.skipped}`);
    }
  }
  if (g.cores) {
    try {
      results.cores = await cores();
    } catch (err) {
      results.cores = failed(err);
      log(`cores: ${results.cores.skipped}`);
    }
  }
  if (g.mcp) {
    try {
      results.mcp = await mcpBench();
    } catch (err) {
      results.mcp = failed(err);
      log(`mcp: ${results.mcp.skipped}`);
    }
  }
  if (g.openapi) {
    try {
      results.openapi = await openApiBench();
    } catch (err) {
      results.openapi = failed(err);
      log(`openapi: ${results.openapi.skipped}`);
    }
  }
  if (g.replication) {
    try {
      results.replication = await replication();
    } catch (err) {
      results.replication = failed(err);
      log(`replication: ${results.replication.skipped}`);
    }
  }
  if (g.validation) {
    try {
      results.validation = await validationBench();
    } catch (err) {
      results.validation = failed(err);
      log(`validation: ${results.validation.skipped}`);
    }
  }
  if (g['search-index']) {
    try {
      results.searchIndex = await searchIndexBench();
    } catch (err) {
      results.searchIndex = failed(err);
      log(`search-index: ${results.searchIndex.skipped}`);
    }
  }
  if (g.growth) {
    results.growth.push(await growth(0));
    for (const n of opts.growthSizes) results.growth.push(await growth(n));
  }
  if (g.bridge) {
    try {
      results.bridge = await bridge();
    } catch (err) {
      results.bridge = failed(err);
      log(`bridge: ${results.bridge.skipped}`);
    }
  }
  if (g.waiters) {
    try {
      log(`waiters: ${opts.waiterCount} blocking queries on one process`);
      results.waiters = await runWaitersBench(opts.waiterCount);
    } catch (err) {
      results.waiters = failed(err);
      log(`waiters: ${results.waiters.skipped}`);
    }
  }
  results.elapsedS = Math.round((Date.now() - startedAt.getTime()) / 1000);

  // Tables.
  const sections: Section[] = [];
  const skippedSection = (title: string, s: Failed): Section => ({
    title,
    text: `skipped: ${s.skipped}`,
    markdown: `Skipped: ${s.skipped}`,
  });
  if (results.wrk) {
    const r = results.wrk;
    sections.push(...('skipped' in r ? [skippedSection('HTTP reads under wrk', r)] : wrkSections(r)));
  }
  if (results.workers) {
    const r = results.workers;
    sections.push('skipped' in r ? skippedSection('Every core under wrk', r) : workersSection(r));
  }
  if (results.scenarios.length > 0) sections.push(scenariosSection(results.scenarios));
  sections.push(...scaleSections(results.scale));
  if (results.importDuringReads) {
    const r = results.importDuringReads;
    sections.push(...('skipped' in r ? [skippedSection('Reads during an import', r)] : importSection(r)));
  }
  if (results.cores) {
    const c = results.cores;
    sections.push('skipped' in c ? skippedSection('Every core', c) : coresSection(c));
  }
  if (results.mcp) {
    const r = results.mcp;
    sections.push('skipped' in r ? skippedSection('MCP over /mcp', r) : mcpSection(r));
  }
  if (results.openapi) {
    const r = results.openapi;
    sections.push(...('skipped' in r ? [skippedSection('OpenAPI sources', r)] : openApiSections(r)));
  }
  if (results.replication) {
    const r = results.replication;
    sections.push(...('skipped' in r ? [skippedSection('Replicated mode', r)] : replicationSections(r)));
  }
  if (results.validation) {
    const r = results.validation;
    sections.push('skipped' in r ? skippedSection('Per-call validation', r) : validationSection(r));
  }
  if (results.searchIndex) {
    const r = results.searchIndex;
    sections.push(...('skipped' in r ? [skippedSection('Search index', r)] : searchIndexSections(r)));
  }
  if (results.bridge) sections.push(bridgeSection(results.bridge));
  if (results.waiters) {
    const w = results.waiters;
    if ('skipped' in w) {
      sections.push(skippedSection('Blocking waiters', w));
    } else {
      const t = table(
        ['waiters', 'answered', 'RSS idle MiB', 'RSS held MiB', 'bytes per waiter', 'write to last answer ms', 'target'],
        [
          [
            f0(w.waiters),
            f0(w.answered),
            f0(w.rssIdleMiB),
            f0(w.rssHeldMiB),
            f0(w.bytesPerWaiter),
            f0(w.writeToLastAnswerMs),
            `all within 1000 ms: ${w.answered === w.waiters && w.writeToLastAnswerMs <= 1000 ? 'yes' : 'NO'}`,
          ],
        ],
      );
      sections.push({ title: 'Blocking waiters (one write wakes them all)', ...t });
    }
  }
  if (results.growth.length > 0) sections.push(...growthSections(results.growth));

  const m = results.machine;
  const header = `${m.nproc} CPUs (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}; ${results.date}; ${results.elapsedS} s; ${results.command}`;
  process.stdout.write(`\n${header}\n`);
  for (const s of sections) process.stdout.write(`\n${s.title}\n${s.text}\n`);

  const outDir = join(REPO_ROOT, '.cache/bench');
  mkdirSync(outDir, { recursive: true });
  const stamp = results.date.replace(/[:.]/g, '-');
  writeFileSync(join(outDir, `results-${stamp}.json`), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(outDir, 'latest.md'), `${header}\n\n${sections.map((s) => `### ${s.title}\n\n${s.markdown}\n`).join('\n')}`);
  process.stdout.write(`\nraw results: .cache/bench/results-${stamp}.json (tables in .cache/bench/latest.md)\n`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    killAllChildren();
    stopPulsarSync();
    stopReplicationBrokerSync();
    process.exit(1);
  },
);
