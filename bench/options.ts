/**
 * The flags of `npm run bench` (documented in bench/run.ts's header) and the targets the
 * tables compare against. Unknown flags are an error, so a typo does not run the wrong bench.
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';

export const GROUPS = [
  'scenarios',
  'growth',
  'bridge',
  'waiters',
  'pages',
  'lookup',
  'search',
  'filters',
  'import',
  'writes',
  'cores',
  'mcp',
  'openapi',
  'replication',
  'validation',
  'search-index',
  'wrk',
  'workers',
] as const;
export type Group = (typeof GROUPS)[number];

const { values } = parseArgs({
  args: process.argv.slice(2),
  strict: true,
  allowPositionals: false,
  options: {
    quick: { type: 'boolean', default: false },
    runs: { type: 'string' },
    duration: { type: 'string' },
    sizes: { type: 'string' },
    'growth-sizes': { type: 'string' },
    'scale-sizes': { type: 'string' },
    only: { type: 'string' },
    waiters: { type: 'string' },
    'lookup-names': { type: 'string' },
    'page-hops': { type: 'string' },
    'import-seed': { type: 'string' },
    'import-size': { type: 'string' },
    'cores-size': { type: 'string' },
    'cores-processes': { type: 'string' },
    'replication-sizes': { type: 'string' },
    'replication-writes': { type: 'string' },
    'replication-catch-up-runs': { type: 'string' },
    'wrk-sizes': { type: 'string' },
    'wrk-threads': { type: 'string' },
    'wrk-connections': { type: 'string' },
    'wrk-profile': { type: 'boolean', default: false },
    'wrk-before': { type: 'string' },
    'workers-size': { type: 'string' },
    'workers-processes': { type: 'string' },
    'profile-dir': { type: 'string' },
    ...Object.fromEntries(GROUPS.map((g) => [`no-${g}`, { type: 'boolean' as const, default: false }])),
  },
});

const numbers = (text: string | undefined, fallback: number[]) => (text === undefined ? fallback : text.split(',').map(Number));
const positive = (name: string, text: string | undefined, fallback: number) => {
  const v = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number, got ${text}`);
  return v;
};

const only = values.only === undefined ? null : values.only.split(',').map((g) => g.trim());
for (const g of only ?? [])
  if (!(GROUPS as readonly string[]).includes(g)) throw new Error(`--only: no group "${g}" (groups: ${GROUPS.join(', ')})`);
const negated = values as Record<string, unknown>;
const enabled = (g: Group) => (only === null || only.includes(g)) && negated[`no-${g}`] !== true;

const quick = values.quick === true;
const sizes = numbers(values.sizes, [1000, 10_000]);

export const opts = {
  quick,
  runs: positive('runs', values.runs, quick ? 1 : 3),
  durationS: positive('duration', values.duration, quick ? 2 : 5),
  warmupS: quick ? 1 : 2,
  growthDurationS: quick ? 3 : 5,
  /** Each page, lookup, search and filter probe of the growth table. */
  growthProbeS: quick ? 1 : 3,
  /** Few connections: at 100,000 tools one answer is ~66 MiB, and 10 of them at once take longer than the run. */
  growthConnections: 2,
  /** Sizes of the classic scenarios (full views of 66 MiB at 100,000 tools are too slow to load-test). */
  sizes,
  growthSizes: numbers(values['growth-sizes'], [1000, 10_000, 100_000]),
  /** Sizes of pages, lookups, search, filters and writes; --sizes alone sets them too. */
  scaleSizes: numbers(values['scale-sizes'], values.sizes === undefined ? [1000, 10_000, 100_000] : sizes),
  readConnections: 10,
  writeConnections: 16,
  bridgeConcurrency: 16,
  /** How many different names the lookups rotate over (spread evenly over the catalogue). */
  lookupNames: positive('lookup-names', values['lookup-names'], 2000),
  /** How many `nextCursor` links to follow before load-testing a later page. */
  pageHops: positive('page-hops', values['page-hops'], 5),
  importSeed: positive('import-seed', values['import-seed'], 1000),
  importSize: positive('import-size', values['import-size'], 100_000),
  importReadConnections: 4,
  coresSize: positive('cores-size', values['cores-size'], 10_000),
  coresProcesses: positive('cores-processes', values['cores-processes'], availableParallelism()),
  waiterCount: positive('waiters', values.waiters, 10_000),
  /** Issue 14: catalogue sizes a new replica catches up from (loaded once, in imports of 1,000 tools). */
  replicationSizes: numbers(values['replication-sizes'], quick ? [1000, 5000] : [10_000, 100_000]),
  /** Issue 14: sequential writes per run of the visibility row. */
  replicationWrites: positive('replication-writes', values['replication-writes'], quick ? 100 : 300),
  /** Issue 14: fresh replicas timed at each catch-up size (default --runs). */
  replicationCatchUpRuns: positive(
    'replication-catch-up-runs',
    values['replication-catch-up-runs'],
    positive('runs', values.runs, quick ? 1 : 3),
  ),
  /** Issue 33: catalogue sizes of the wrk read rows (100,000 by asking: its full list is ~66 MiB an answer). */
  wrkSizes: numbers(values['wrk-sizes'], [1000, 10_000]),
  wrkThreads: positive('wrk-threads', values['wrk-threads'], 2),
  wrkConnections: positive('wrk-connections', values['wrk-connections'], 32),
  /** Issue 33: each wrk row once more under the registry's CPU profiler, summarised per hook. */
  wrkProfile: values['wrk-profile'] === true,
  /** Issue 33: another checkout (the code before a change) whose registry is a fourth side of every wrk row. */
  wrkBefore: values['wrk-before'] ?? null,
  profileDir: values['profile-dir'] ?? '.cache/bench/profiles',
  /** Issue 33: catalogue size of the multi-process rows, and the registry workers sharing one port. */
  workersSize: positive('workers-size', values['workers-size'], 10_000),
  workersProcesses: positive('workers-processes', values['workers-processes'], 2),
  groups: Object.fromEntries(GROUPS.map((g) => [g, enabled(g)])) as Record<Group, boolean>,
};

export type Options = typeof opts;

export const TARGETS = {
  readRatio: 0.8,
  notModifiedRatio: 0.8,
  writesPerS: 2000,
  startup100kMs: 3000,
  /** Issue 10: pages, lookups, search and filters. */
  scaleReadRatio: 0.8,
  scaleReadP99Ms: 20,
  /** Issue 10: durable writes, 16 clients. */
  scaleWritesPerS: 3000,
  /** Issue 10: reads during a 100,000-tool import. */
  importReadP99Ms: 50,
  /** Issue 10: peak import memory (above the baseline) over the memory of the catalogue it builds. */
  importMemoryRatio: 2,
};

export const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
