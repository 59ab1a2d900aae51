/**
 * The in-memory search index (src/catalog/search-index.ts) and its words (src/catalog/text.ts):
 * words and stems, ranking, type-ahead, the caller's filter, writes, bulk loads, compaction and
 * hostile input. No timings are asserted: `npm run bench -- --only=search` measures them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SearchIndex, type SearchDocument } from '../../src/catalog/search-index.js';
import { MAX_QUERY_CHARS, MAX_QUERY_WORDS } from '../../src/catalog/search-query.js';
import { splitWords, stem } from '../../src/catalog/text.js';
import { toolDescription, toolName } from '../../bench/data.js';

function indexOf(...docs: SearchDocument[]): SearchIndex {
  const index = new SearchIndex();
  index.upsertMany(docs);
  return index;
}

const tool = (name: string, description = '', extra: Partial<SearchDocument> = {}): SearchDocument => ({ name, description, ...extra });
const all = { limit: 1000 };

describe('words', () => {
  it('splits snake_case, kebab-case, dotted and camelCase names into lower-case words', () => {
    expect(splitWords('fetchWeatherForecast', 100)).toEqual(['fetch', 'weather', 'forecast']);
    expect(splitWords('fetch_weather-forecast.v2', 100)).toEqual(['fetch', 'weather', 'forecast', 'v2']);
    expect(splitWords('FetchWeatherForecast', 100)).toEqual(['fetch', 'weather', 'forecast']);
    expect(splitWords('HTTPServer IOError XMLHttpRequest', 100)).toEqual(['http', 'server', 'io', 'error', 'xml', 'http', 'request']);
    expect(splitWords('getURLs OAuth2Token ipv4Address S3Bucket utf8', 100)).toEqual([
      'get',
      'urls',
      'oauth2',
      'token',
      'ipv4',
      'address',
      's3',
      'bucket',
      'utf8',
    ]);
  });

  it('drops diacritics, folds compatibility forms, and keeps other scripts', () => {
    expect(splitWords('Café Ｆｕｌｌ ﬁle Ångström', 100)).toEqual(['cafe', 'full', 'file', 'angstrom']);
    expect(splitWords('ПриветМир 東京 ①', 100)).toEqual(['привет', 'мир', '東京', '1']);
  });

  it('treats control characters, punctuation and emoji as separators', () => {
    expect(splitWords('a\u0000b\u0007c\td\u007fe', 100)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(splitWords('🎉party🎉 (tools) !!! ..', 100)).toEqual(['party', 'tools']);
    expect(splitWords('', 100)).toEqual([]);
  });

  it('cuts long words and counts', () => {
    expect(splitWords('x'.repeat(500), 10)).toEqual(['x'.repeat(64)]);
    expect(splitWords('a b c d e', 3)).toEqual(['a', 'b', 'c']);
  });

  it('gives every inflection of common tool words one stem', () => {
    const groups = [
      ['add', 'adds', 'added', 'adding'],
      ['fetch', 'fetches', 'fetched', 'fetching'],
      ['search', 'searches', 'searched', 'searching'],
      ['query', 'queries', 'queried'],
      ['list', 'lists', 'listed', 'listing'],
      ['number', 'numbers', 'numbered'],
      ['call', 'calls', 'called', 'calling'],
      ['calculate', 'calculates', 'calculation'],
    ];
    for (const group of groups) expect(new Set(group.map(stem)), group.join('/')).toHaveProperty('size', 1);
    expect(stem('add')).not.toBe(stem('address'));
    expect(stem('v2')).toBe('v2');
    expect(stem('straße')).toBe('straße');
  });
});

describe('search', () => {
  it('finds "add two numbers" in a tool that adds numbers, by description or by name', () => {
    const index = indexOf(
      tool('sum', 'Adds numbers together'),
      tool('adding_numbers', 'Sums things'),
      tool('weather', 'Fetches the weather'),
    );
    expect(index.search('add two numbers', all).sort()).toEqual(['adding_numbers', 'sum']);
  });

  it('matches the words of camelCase and snake_case names', () => {
    const index = indexOf(tool('fetchWeatherForecast'), tool('get_stock_price'), tool('convert-currency.v2'));
    expect(index.search('weather', all)).toEqual(['fetchWeatherForecast']);
    expect(index.search('stock prices', all)).toEqual(['get_stock_price']);
    expect(index.search('currency v2', all)).toEqual(['convert-currency.v2']);
  });

  it('ranks a word in the name above the same word in the description', () => {
    const index = indexOf(
      tool('lookup', 'Looks up a weather report for a city'),
      tool('weather_report', 'Looks up a report'),
      tool('title_only', 'Looks up a report', { title: 'Weather' }),
    );
    expect(index.search('weather', all)).toEqual(['weather_report', 'title_only', 'lookup']);
  });

  it('ranks documents with more of the query words first, and keeps those with fewer', () => {
    const index = indexOf(
      // One word, but in the name and twice in a short description: the best score here.
      tool('weather_now', 'Weather, weather'),
      tool('forecast_tool', 'A long text about many things, among them the weather forecast for a city'),
      tool('city_info', 'Facts about a city'),
      tool('forecast_weather', 'Forecasts the weather'),
    );
    const found = index.search('weather forecast city', all);
    expect(found.slice(0, 2)).toEqual(['forecast_tool', 'forecast_weather']);
    expect(found.slice(2).sort()).toEqual(['city_info', 'weather_now']);
  });

  it('puts the tool the query names first', () => {
    const index = indexOf(
      tool('weather', 'Weather weather weather: the weather, for weather people'),
      tool('weather_forecast', 'A forecast'),
      tool('forecast_weather_now', 'Weather forecasts, weather forecasts and weather forecasts'),
      tool('weather-forecast', 'Another forecast'),
    );
    expect(index.search('weather_forecast', all).slice(0, 2)).toEqual(['weather_forecast', 'weather-forecast']);
    // Both are named by the words; the shorter description scores higher.
    expect(index.search('Weather Forecast', all).slice(0, 2)).toEqual(['weather_forecast', 'weather-forecast']);
    expect(index.search('weather-forecast', all)[0]).toBe('weather-forecast');
    expect(index.search('weather', all)[0]).toBe('weather');
  });

  it('breaks ties by name, in the catalogue order', () => {
    const names = ['b_tool', 'a_tool', 'C_tool', 'aa_tool', 'é_tool'];
    const index = indexOf(...names.map((n) => tool(n, 'Sends an email')));
    expect(index.search('email', all)).toEqual([...names].sort());
  });

  it('ignores stop words in the query, unless they are all there is', () => {
    const index = indexOf(tool('send_to_printer', 'Prints a file'), tool('printer_status', 'The status of the printer'));
    expect(index.search('the printer', all).sort()).toEqual(['printer_status', 'send_to_printer']);
    expect(index.search('to', all)).toEqual(['send_to_printer']);
    expect(index.search('of the', all)).toEqual([]);
  });

  it('matches the last word as a prefix while it is being typed', () => {
    const index = indexOf(tool('weather', 'Weather reports'), tool('forecasts', 'Forecasts of rain'), tool('wealth', 'Net worth'));
    expect(index.search('weath', all)).toEqual(['weather']);
    expect(index.search('rain weath', all)).toEqual(['forecasts', 'weather']);
    // Only the last word: an earlier one matches whole.
    expect(index.search('weath rain', all)).toEqual(['forecasts']);
    // A query that ends in a separator has finished its last word.
    expect(index.search('weath ', all)).toEqual([]);
    // Type-ahead sees the word as written, before its stem: `forecasti` is on the way to forecasting.
    const more = indexOf(tool('forecasting', 'Forecasting service'));
    expect(more.search('forecasti', all)).toEqual(['forecasting']);
    // The whole word outranks a longer word it starts.
    const both = indexOf(tool('map_tool', 'Draws a map'), tool('mapping_tool', 'Mapping of data'));
    expect(both.search('map', all)).toEqual(['map_tool', 'mapping_tool']);
  });

  it('finds words written after a type-ahead search', () => {
    const index = indexOf(tool('weather', 'Reports'));
    expect(index.search('we', all)).toEqual(['weather']);
    index.upsert(tool('wedding_planner', 'Plans'));
    index.upsert(tool('webhook', 'Calls back'));
    expect(index.search('wed', all)).toEqual(['wedding_planner']);
    expect(index.search('we', all).sort()).toEqual(['weather', 'webhook', 'wedding_planner']);
  });

  it('bounds the prefix to the 16 most frequent words that start with it', () => {
    const docs: SearchDocument[] = [];
    // Words pre00 .. pre39; word pre<k> in k + 1 tools, so the frequent ones are the high k.
    for (let k = 0; k < 40; k++) for (let j = 0; j <= k; j++) docs.push(tool(`t${k}_${j}`, `pre${String(k).padStart(2, '0')}`));
    const index = indexOf(...docs);
    const found = new Set(index.search('pre', { limit: 10_000 }).map((name) => name.split('_')[0]));
    expect([...found].sort()).toEqual(Array.from({ length: 16 }, (_, i) => `t${24 + i}`));
    // A one-letter word is matched whole, never expanded.
    expect(index.search('p', all)).toEqual([]);
  });

  it('caps a query at 16 words and 1,024 characters', () => {
    const index = indexOf(tool('needle', 'A needle'));
    const filler = Array.from({ length: MAX_QUERY_WORDS }, (_, i) => `filler${i}`).join(' ');
    expect(index.search(`${filler} needle`, all)).toEqual([]);
    expect(index.search(`needle ${filler}`, all)).toEqual(['needle']);
    // Stop words do not count towards the 16.
    expect(index.search(`${'the '.repeat(40)}needle`, all)).toEqual(['needle']);
    expect(index.search(`${' '.repeat(MAX_QUERY_CHARS)}needle`, all)).toEqual([]);
    expect(index.search(`${' '.repeat(MAX_QUERY_CHARS - 6)}needle`, all)).toEqual(['needle']);
  });

  it('returns the best `limit` accepted tools, asking only about tools that could make the page', () => {
    const docs = Array.from({ length: 200 }, (_, i) =>
      tool(`tool_${String(i).padStart(3, '0')}`, `${'email '.repeat(1 + (i % 3))} and ${i % 2 === 0 ? 'calendar' : 'notes'}`),
    );
    const index = indexOf(...docs);
    const ranked = index.search('email calendar', { limit: 1000 });
    const accept = (name: string) => Number(name.slice(5)) % 5 === 0;
    const asked: string[] = [];
    const page = index.search('email calendar', {
      limit: 7,
      accept: (name) => {
        asked.push(name);
        return accept(name);
      },
    });
    expect(page).toEqual(ranked.filter(accept).slice(0, 7));
    expect(asked.length).toBeLessThan(docs.length);
    expect(index.search('email calendar', { limit: 3 })).toEqual(ranked.slice(0, 3));
  });

  it('gives the head of the whole ranking when it skips the common words (property)', () => {
    // A multi-word search first scores only the rarest word's tools and looks the others up for
    // them; it must give what scoring every tool gives: the first `limit` of the full ranking.
    const vocabulary = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'sigma', 'beta', 'beta', 'gamma', 'the'];
    const words = fc.array(fc.constantFrom(...vocabulary), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(words, words), { minLength: 1, maxLength: 120 }),
        fc.array(fc.constantFrom(...vocabulary, 'alp', 'sig', 'zzz'), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        (docs, query, limit, keepEvery, typing) => {
          const index = indexOf(...docs.map(([name, description], i) => tool(`${name.join('_')}_${i}`, description.join(' '))));
          const q = query.join(' ') + (typing ? '' : ' ');
          const accept = (name: string) => Number(name.slice(name.lastIndexOf('_') + 1)) % keepEvery === 0;
          const everything = index.search(q, { limit: 100_000 });
          expect(index.search(q, { limit }), q).toEqual(everything.slice(0, limit));
          expect(index.search(q, { limit, accept }), q).toEqual(everything.filter(accept).slice(0, limit));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('matches titles and keywords', () => {
    const index = indexOf(
      tool('t1', 'Does things', { title: 'Invoice Maker' }),
      tool('t2', 'Does things', { keywords: ['billing', 'PDF'] }),
    );
    expect(index.search('invoices', all)).toEqual(['t1']);
    expect(index.search('pdf billing', all)).toEqual(['t2']);
  });

  it('stops, without harm, when accept writes to the index', () => {
    const index = indexOf(...Array.from({ length: 3000 }, (_, i) => tool(`tool_${i}`, 'Sends email')));
    let calls = 0;
    const page = index.search('email', {
      limit: 10,
      accept: () => {
        // Enough removals to compact the index in the middle of the search.
        if (calls++ === 0) for (let i = 0; i < 2000; i++) index.remove(`tool_${i}`);
        return true;
      },
    });
    expect(page.length).toBeLessThanOrEqual(1);
    expect(index.size).toBe(1000);
    const fresh = indexOf(...Array.from({ length: 1000 }, (_, i) => tool(`tool_${2000 + i}`, 'Sends email')));
    expect(index.search('email', { limit: 2000 })).toEqual(fresh.search('email', { limit: 2000 }));
  });

  it('allows a search from inside accept', () => {
    const index = indexOf(tool('a', 'alpha beta'), tool('b', 'alpha'), tool('c', 'beta'));
    const page = index.search('alpha', { limit: 10, accept: (name) => index.search('beta', { limit: 10 }).includes(name) });
    expect(page).toEqual(['a']);
    expect(index.search('alpha', all)).toEqual(['b', 'a']);
  });
});

describe('writes', () => {
  it('replaces a tool on upsert: its old words no longer match', () => {
    const index = indexOf(tool('report', 'Weather report'), tool('other', 'Weather'));
    index.upsert(tool('report', 'Stock prices'));
    expect(index.size).toBe(2);
    expect(index.search('weather', all)).toEqual(['other']);
    expect(index.search('stock', all)).toEqual(['report']);
  });

  it('removes a tool', () => {
    const index = indexOf(tool('a', 'Weather'), tool('b', 'Weather'));
    index.remove('a');
    index.remove('missing');
    expect(index.size).toBe(1);
    expect(index.search('weather', all)).toEqual(['b']);
    expect(index.search('a', all)).toEqual([]);
    index.remove('b');
    expect(index.search('weather', all)).toEqual([]);
  });

  it('gives the same answers loaded in bulk, one by one, in another order, or in chunks', () => {
    const docs = Array.from({ length: 600 }, (_, i) => tool(toolName(i), toolDescription(i)));
    const bulk = indexOf(...docs);
    const single = new SearchIndex();
    for (const doc of docs) single.upsert(doc);
    const reversed = indexOf(...[...docs].reverse());
    const chunked = new SearchIndex();
    for (let i = 0; i < docs.length; i += 64) chunked.upsertMany(docs.slice(i, i + 64));
    for (const q of [
      'weather forecasts',
      'customer invoices summary',
      'sales_order',
      'add two numbers',
      'weath',
      'returns json',
      toolName(7),
    ]) {
      const expected = bulk.search(q, { limit: 50 });
      expect(expected.length).toBeGreaterThan(0);
      expect(single.search(q, { limit: 50 }), q).toEqual(expected);
      expect(reversed.search(q, { limit: 50 }), q).toEqual(expected);
      expect(chunked.search(q, { limit: 50 }), q).toEqual(expected);
    }
  });

  it('ranks after many replacements and removals (and the compaction they cause) as a fresh index would', () => {
    const n = 3000;
    const index = new SearchIndex();
    index.upsertMany(Array.from({ length: n }, (_, i) => tool(toolName(i), toolDescription(i))));
    // 2,000 dead ids: more than the 1,024 and the quarter that make the index compact itself.
    for (let i = 0; i < 1500; i++) index.upsert(tool(toolName(i), toolDescription(i + 1)));
    for (let i = 1500; i < 2000; i++) index.remove(toolName(i));
    index.upsert(tool('late_weather', 'A weather forecast added after compaction'));
    const fresh = new SearchIndex();
    fresh.upsertMany(Array.from({ length: 1500 }, (_, i) => tool(toolName(i), toolDescription(i + 1))));
    fresh.upsertMany(Array.from({ length: n - 2000 }, (_, i) => tool(toolName(2000 + i), toolDescription(2000 + i))));
    fresh.upsert(tool('late_weather', 'A weather forecast added after compaction'));
    expect(index.size).toBe(fresh.size);
    for (const q of [
      'weather forecasts',
      'customer invoices summary',
      'sales_order',
      'add two numbers',
      'returns',
      toolName(1600),
      toolName(2500),
    ]) {
      expect(index.search(q, { limit: 40 }), q).toEqual(fresh.search(q, { limit: 40 }));
    }
    expect(index.search(toolName(1600), all)).not.toContain(toolName(1600));
    expect(index.search(toolName(2500), all)[0]).toBe(toolName(2500));
  });
});

describe('hostile input', () => {
  const index = indexOf(
    tool('weather', 'Weather reports'),
    tool('__proto__', 'prototype'),
    tool('constructor', 'hasOwnProperty toString'),
    tool('', ''),
  );

  it('never throws, and finds nothing without words', () => {
    const queries = [
      '',
      ' ',
      '!!!',
      '🎉🎉',
      '\u0000',
      '\u0000weather\u0000',
      '\ud800',
      'x'.repeat(10_000),
      'weather '.repeat(2000),
      '__proto__',
      'constructor',
      'toString',
    ];
    for (const q of queries) expect(() => index.search(q, all), JSON.stringify(q.slice(0, 20))).not.toThrow();
    expect(index.search('', all)).toEqual([]);
    expect(index.search('!!! ... ---', all)).toEqual([]);
    expect(index.search('🎉', all)).toEqual([]);
    expect(index.search('\u0000weather\u0000', all)).toEqual(['weather']);
    expect(index.search('__proto__', all)[0]).toBe('__proto__');
    expect(index.search('constructor', all)[0]).toBe('constructor');
  });

  it('takes any limit', () => {
    for (const limit of [0, -1, Number.NaN, 0.5]) expect(index.search('weather', { limit })).toEqual([]);
    expect(index.search('weather', { limit: Number.POSITIVE_INFINITY })).toEqual(['weather']);
    expect(index.search('weather', { limit: 1.9 })).toEqual(['weather']);
  });

  it('indexes any name and text', () => {
    const odd = new SearchIndex();
    const texts = ['', '\u0000', '\ud800\udc00\ud800', 'ﷺ'.repeat(300), 'word '.repeat(5000), '𝒜𝒷𝒸 letters', 'x'.repeat(100_000)];
    for (const [i, text] of texts.entries()) {
      expect(() => odd.upsert({ name: text, description: text, title: text, keywords: [text, text] })).not.toThrow();
      expect(() => odd.upsert(tool(`t${i}`, text))).not.toThrow();
    }
    expect(odd.search('word', all)).toContain('t4');
    expect(odd.search('𝒜𝒷𝒸', all)).toContain('t5');
    expect(odd.search('x'.repeat(64), all)).toContain('t6');
  });

  it('survives arbitrary strings (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 80 })), { maxLength: 20 }),
        fc.string({ unit: 'binary', maxLength: 40 }),
        (docs, query) => {
          const fuzzed = new SearchIndex();
          for (const [name, description] of docs) fuzzed.upsert({ name, description });
          const names = new Set(docs.map(([name]) => name));
          const found = fuzzed.search(query, { limit: 5 });
          expect(found.length).toBeLessThanOrEqual(5);
          for (const name of found) expect(names.has(name)).toBe(true);
          expect(new Set(found).size).toBe(found.length);
          for (const [name] of docs.slice(0, 5)) fuzzed.remove(name);
          fuzzed.search(query, { limit: 5 });
        },
      ),
      { numRuns: 200, seed: 20261130 },
    );
  });
});
