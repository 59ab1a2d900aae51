/**
 * Issue 32, the registry's own full-text index (src/catalog/search-index.ts) against MiniSearch 7
 * and Orama 3, in this process, on bench/data.ts's generated tools at --sizes (1,000 and 10,000
 * by default): build time, memory (heap and array buffers after a GC, per index of three held), median
 * microseconds of one search at limit 10, and whether the top results agree.
 *
 * Every index is given the same documents as src/catalog/search-feeder.ts gives the registry's
 * (name, description, parameter names as keywords) and the registry's own words
 * (src/catalog/text.ts: snake_case and camelCase split, stop words out, stemmed), so the
 * comparison is of indexes and ranking, not tokenizers. Both libraries rank OR queries with
 * BM25, field boosts as the registry's (name 5, keywords 2, description 1); MiniSearch matches
 * the last word as a prefix, as the registry does; Orama matches every word as a prefix (its
 * default; `exact` would turn prefixes off for every word) with threshold 1 (any word).
 *
 * Agreement: the share of the registry's top 10 that a library also ranks in its top 10, and
 * whether its first result is the registry's. Many generated tools tie (one description pattern
 * in 28 per object), so "words" says, too, what share of the query's words the top 10 hold on
 * average: a tie broken otherwise is not a worse answer. The last table counts how many of
 * test/catalog/search-index.test.ts's ranking cases each index passes exactly.
 *
 * Figures of 2026-12-02, `npm run bench -- --only=search-index` (3 builds, 9 samples per query)
 * on the shared 2-core machine (other suites running beside it; repeated runs moved the
 * registry's 10,000-tool build between 237 and 538 ms):
 *
 *   tools   index       build ms  memory MiB  median us  agree top 10  same first  query words
 *   1,000   registry          49         0.6       21.6          100%         9/9          84%
 *   1,000   minisearch        93         1.5      171.3           87%         4/9          84%
 *   1,000   orama            197         5.1      138.3           80%         5/9          82%
 *   10,000  registry         237         4.4       83.0          100%         9/9          92%
 *   10,000  minisearch       748        14.6    1,932.9           44%         2/9          92%
 *   10,000  orama          1,459        27.7    4,072.0           36%         7/9          89%
 *
 * Ranking cases of the unit tests: registry 9/9, MiniSearch 6/9, Orama 5/9 (neither puts the
 * tool the query names first, ranks more query words above a better score, or breaks ties by
 * name; Orama also matches earlier words as prefixes). So the index stays: at 10,000 tools a query
 * takes a 23rd of MiniSearch's time and a 49th of Orama's (medians over the queries; 16-94x and
 * 29-173x), the index a third and a sixth of their memory, builds 3 and 6 times faster, finds
 * as many of the query's words, and alone ranks as the registry documents.
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { create, insertMultiple, search as oramaSearch, type AnyOrama } from '@orama/orama';
import MiniSearch from 'minisearch';
import { SearchIndex, type SearchDocument } from '../src/catalog/search-index.js';
import { isStopWord, splitWords, stem } from '../src/catalog/text.js';
import { httpTool, SEARCHES, toolName } from './data.js';
import { log, opts } from './options.js';
import { f0, f1, f2, pct, table, type Section } from './report.js';

const LIMIT = 10;
const SAMPLES = opts.quick ? 5 : 9;
const SAMPLE_MS = (opts.durationS * 1000) / 50;

/** Searches over the generated tools: the bench's own, and the kinds the registry's tests make. */
const QUERIES: readonly { label: string; q: string }[] = [
  ...SEARCHES,
  { label: 'one common word', q: 'weather' },
  { label: 'prefix (type-ahead)', q: 'forec' },
  { label: 'stop word and stem', q: 'add two numbers' },
  { label: 'plural to a name', q: 'stock prices' },
  { label: 'a tool by its name', q: toolName(42) },
  { label: 'two rare words', q: 'email calendar' },
];

const LIBRARIES = ['registry', 'minisearch', 'orama'] as const;
type Library = (typeof LIBRARIES)[number];

interface Built {
  search(q: string): string[];
}

/** The registry's words of a text, as its index sees them. */
function terms(text: string): string[] {
  return splitWords(text, 1024)
    .filter((w) => !isStopWord(w))
    .map(stem);
}

const BOOST = { name: 5, keywords: 2, description: 1 };

function build(library: Library, docs: readonly SearchDocument[]): Built {
  if (library === 'registry') {
    const index = new SearchIndex();
    index.upsertMany(docs);
    return { search: (q) => index.search(q, { limit: LIMIT }) };
  }
  const rows = docs.map((d) => ({ id: d.name, name: d.name, description: d.description, keywords: [...(d.keywords ?? [])] }));
  if (library === 'minisearch') {
    const index = new MiniSearch<(typeof rows)[number]>({
      fields: ['name', 'description', 'keywords'],
      extractField: (doc, field) => {
        const value = doc[field as keyof typeof doc];
        return Array.isArray(value) ? value.join(' ') : value;
      },
      tokenize: (text) => splitWords(text, 1024),
      processTerm: (term) => (isStopWord(term) ? null : stem(term)),
      searchOptions: { boost: BOOST, prefix: (_term, i, all) => i === all.length - 1 },
    });
    index.addAll(rows);
    return {
      search: (q) =>
        index
          .search(q)
          .slice(0, LIMIT)
          .map((r) => String(r.id)),
    };
  }
  const db: AnyOrama = create({
    schema: { name: 'string', description: 'string', keywords: 'string[]' },
    components: { tokenizer: { language: 'english', normalizationCache: new Map(), tokenize: (raw: string) => terms(raw) } },
  });
  insertMultiple(db, rows);
  return {
    search: (q) => {
      const found = oramaSearch(db, { term: q, properties: ['name', 'description', 'keywords'], boost: BOOST, limit: LIMIT, threshold: 1 });
      // Orama's search is synchronous unless a component is async; none is here.
      if (found instanceof Promise) throw new Error('Orama answered asynchronously');
      return found.hits.map((hit) => String(hit.id));
    },
  };
}

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Heap and array buffers (the registry's index is typed arrays), after full collections. */
function heldBytes(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Median microseconds of one call, from samples of about SAMPLE_MS each, after as long again warming up. */
function medianUs(call: () => unknown): number {
  const perCall: number[] = [];
  // The first 200 ms of a query ran 10 to 20 times slower than the rest (JIT): that is left out.
  for (let s = -2; s < SAMPLES; s++) {
    let n = 0;
    const start = performance.now();
    let now = start;
    while (now - start < SAMPLE_MS) {
      call();
      n++;
      now = performance.now();
    }
    if (s >= 0) perCall.push(((now - start) * 1000) / n);
  }
  return median(perCall);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Median milliseconds of a build, after one of a tenth of the documents to warm up. */
function buildMs(library: Library, docs: readonly SearchDocument[]): number {
  build(library, docs.slice(0, Math.ceil(docs.length / 10)));
  const times: number[] = [];
  for (let run = 0; run < opts.runs; run++) {
    const start = performance.now();
    build(library, docs);
    times.push(performance.now() - start);
  }
  return median(times);
}

export interface SearchIndexRow {
  n: number;
  library: Library;
  buildMs: number;
  memoryMiB: number;
  /** Median microseconds per query, in QUERIES' order. */
  queryUs: number[];
  /** Per query: the share of the registry's top 10 also in this top 10, whether the first agrees, the share of query words the top 10 hold. */
  agreement: number[];
  firstAgrees: boolean[];
  wordCoverage: number[];
}

export interface SearchIndexResult {
  queries: readonly { label: string; q: string }[];
  rows: SearchIndexRow[];
  /** test/catalog/search-index.test.ts's ranking cases passed, of `of`. */
  cases: { library: Library; passed: number; of: number; failed: string[] }[];
}

/** The share of the query's words a tool holds, averaged over the results. */
function coverage(q: string, names: readonly string[], docs: ReadonlyMap<string, SearchDocument>): number {
  const wanted = new Set(terms(q));
  if (wanted.size === 0 || names.length === 0) return 0;
  let sum = 0;
  for (const name of names) {
    const doc = docs.get(name);
    const has = new Set(doc ? terms(`${doc.name} ${doc.description} ${(doc.keywords ?? []).join(' ')}`) : []);
    // The last word also counts as a prefix, as all three match it.
    const words = [...wanted];
    const last = words[words.length - 1] as string;
    sum += words.filter((w) => has.has(w) || (w === last && [...has].some((h) => h.startsWith(w)))).length / words.length;
  }
  return sum / names.length;
}

function toolDocuments(n: number): SearchDocument[] {
  const docs: SearchDocument[] = [];
  for (let i = 0; i < n; i++) {
    const t = httpTool(i) as { name: string; description: string; parameters: Record<string, unknown> };
    docs.push({ name: t.name, description: t.description, keywords: Object.keys(t.parameters) });
  }
  return docs;
}

const doc = (name: string, description = '', extra: Partial<SearchDocument> = {}): SearchDocument => ({ name, description, ...extra });

/** Ranking cases of test/catalog/search-index.test.ts: documents, a query, and the exact answer it expects. */
const CASES: readonly { label: string; docs: SearchDocument[]; q: string; expected: string[]; sorted?: boolean }[] = [
  {
    label: 'description or name, stemmed',
    docs: [doc('sum', 'Adds numbers together'), doc('adding_numbers', 'Sums things'), doc('weather', 'Fetches the weather')],
    q: 'add two numbers',
    expected: ['adding_numbers', 'sum'],
    sorted: true,
  },
  {
    label: 'camelCase name',
    docs: [doc('fetchWeatherForecast'), doc('get_stock_price')],
    q: 'weather',
    expected: ['fetchWeatherForecast'],
  },
  {
    label: 'name above title above description',
    docs: [
      doc('lookup', 'Looks up a weather report for a city'),
      doc('weather_report', 'Looks up a report'),
      doc('title_only', 'Looks up a report', { title: 'Weather' }),
    ],
    q: 'weather',
    expected: ['weather_report', 'title_only', 'lookup'],
  },
  {
    label: 'more query words first',
    docs: [
      doc('weather_now', 'Weather, weather'),
      doc('forecast_tool', 'A long text about many things, among them the weather forecast for a city'),
      doc('city_info', 'Facts about a city'),
      doc('forecast_weather', 'Forecasts the weather'),
    ],
    q: 'weather forecast city',
    expected: ['forecast_tool', 'forecast_weather'],
  },
  {
    label: 'the named tool first',
    docs: [
      doc('weather', 'Weather weather weather: the weather, for weather people'),
      doc('weather_forecast', 'A forecast'),
      doc('forecast_weather_now', 'Weather forecasts, weather forecasts and weather forecasts'),
      doc('weather-forecast', 'Another forecast'),
    ],
    q: 'weather_forecast',
    expected: ['weather_forecast', 'weather-forecast'],
  },
  {
    label: 'ties by name',
    docs: ['b_tool', 'a_tool', 'C_tool', 'aa_tool'].map((n) => doc(n, 'Sends an email')),
    q: 'email',
    expected: ['C_tool', 'a_tool', 'aa_tool', 'b_tool'],
  },
  {
    label: 'prefix of the last word only',
    docs: [doc('weather', 'Weather reports'), doc('forecasts', 'Forecasts of rain'), doc('wealth', 'Net worth')],
    q: 'weath rain',
    expected: ['forecasts'],
  },
  {
    label: 'the whole word above a longer one',
    docs: [doc('map_tool', 'Draws a map'), doc('mapping_tool', 'Mapping of data')],
    q: 'map',
    expected: ['map_tool', 'mapping_tool'],
  },
  {
    label: 'titles and keywords',
    docs: [doc('t1', 'Does things', { title: 'Invoice Maker' }), doc('t2', 'Does things', { keywords: ['billing', 'PDF'] })],
    q: 'pdf billing',
    expected: ['t2'],
  },
];

function runCases(library: Library): SearchIndexResult['cases'][number] {
  const failed: string[] = [];
  for (const c of CASES) {
    // The libraries have no title field: the title goes in with the keywords, as it weighs near them.
    const docs =
      library === 'registry' ? c.docs : c.docs.map((d) => ({ ...d, keywords: [...(d.keywords ?? []), ...(d.title ? [d.title] : [])] }));
    let found = build(library, docs).search(c.q).slice(0, c.expected.length);
    if (c.sorted) found = [...found].sort();
    if (JSON.stringify(found) !== JSON.stringify(c.expected)) failed.push(c.label);
  }
  return { library, passed: CASES.length - failed.length, of: CASES.length, failed };
}

export async function searchIndexBench(): Promise<SearchIndexResult> {
  const rows: SearchIndexRow[] = [];
  for (const n of opts.sizes) {
    const docs = toolDocuments(n);
    const byName = new Map(docs.map((d) => [d.name, d]));
    let reference: string[][] = [];
    for (const library of LIBRARIES) {
      log(`search-index: ${library} at ${n} tools`);
      const ms = buildMs(library, docs);
      // Three copies held at once: one alone was within the noise at 1,000 tools (-0.1 to 8.8 MiB for Orama's).
      const before = heldBytes();
      const copies = [build(library, docs), build(library, docs), build(library, docs)];
      const memoryMiB = (heldBytes() - before) / copies.length / 2 ** 20;
      const index = copies[0] as Built;
      copies.length = 1;
      const answers = QUERIES.map(({ q }) => index.search(q));
      if (library === 'registry') reference = answers;
      rows.push({
        n,
        library,
        buildMs: ms,
        memoryMiB,
        queryUs: QUERIES.map(({ q }) => medianUs(() => index.search(q))),
        agreement: answers.map((a, i) => {
          const mine = new Set(reference[i]);
          return mine.size === 0 ? (a.length === 0 ? 1 : 0) : a.filter((name) => mine.has(name)).length / mine.size;
        }),
        firstAgrees: answers.map((a, i) => a[0] === reference[i]?.[0]),
        wordCoverage: answers.map((a, i) => coverage(QUERIES[i]?.q ?? '', a, byName)),
      });
    }
  }
  return { queries: QUERIES, rows, cases: LIBRARIES.map(runCases) };
}

export function searchIndexSections(r: SearchIndexResult): Section[] {
  const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const summary = table(
    ['tools', 'index', 'build ms', 'memory MiB', 'median us (all queries)', 'agree top 10', 'same first', 'query words in top 10'],
    r.rows.map((row) => [
      f0(row.n),
      row.library,
      f0(row.buildMs),
      f1(row.memoryMiB),
      f1(median(row.queryUs)),
      pct(mean(row.agreement)),
      `${row.firstAgrees.filter(Boolean).length}/${row.firstAgrees.length}`,
      pct(mean(row.wordCoverage)),
    ]),
    2,
  );
  const perQuery = table(
    ['tools', 'query', ...LIBRARIES.map((l) => `${l} us`), 'minisearch agree', 'orama agree', ...LIBRARIES.map((l) => `${l} words`)],
    r.queries.flatMap((query, i) =>
      [...new Set(r.rows.map((row) => row.n))].map((n) => {
        const of = (l: Library) => r.rows.find((row) => row.n === n && row.library === l);
        return [
          f0(n),
          `${query.label}: ${query.q}`,
          ...LIBRARIES.map((l) => f2(of(l)?.queryUs[i])),
          pct(of('minisearch')?.agreement[i]),
          pct(of('orama')?.agreement[i]),
          ...LIBRARIES.map((l) => pct(of(l)?.wordCoverage[i])),
        ];
      }),
    ),
    2,
  );
  const cases = table(
    ['index', 'ranking cases passed', 'failed'],
    r.cases.map((c) => [c.library, `${c.passed}/${c.of}`, c.failed.join('; ') || '-']),
    1,
    ['failed'],
  );
  return [
    { title: 'Search index: registry against MiniSearch and Orama', ...summary },
    { title: 'Search index, by query (median microseconds at limit 10; agreement with the registry top 10)', ...perQuery },
    { title: "Search index: test/catalog/search-index.test.ts's ranking cases", ...cases },
  ];
}
