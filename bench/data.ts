/**
 * Generated catalogue content and tokens: N HTTP tools spread over 50 scopes (a tenth need no
 * scope), 50 agent tokens with three scopes each (50 different views), and an admin token.
 *
 * Tool i is made of words, as real catalogues are, so that search has something to do: a verb
 * and an object from a small vocabulary give the name (`fetch_weather_forecast_42`, the index
 * keeps names unique) and a sentence (`Fetches weather forecasts for a city and returns the
 * result as JSON.`), picked by a hash of i, so the same i gives the same tool in every run.
 */
import { createSigner } from 'fast-jwt';

export const JWT_SECRET = 'bench-secret-that-is-long-enough-for-hs256-0123456789';
export const SCOPE_COUNT = 50;
export const TOKEN_COUNT = 50;
export const ADMIN_SCOPE = 'registry:write';

export const scopeName = (k: number) => `bench:scope-${String(k % SCOPE_COUNT).padStart(2, '0')}`;

/** [name word, description verb] */
const VERBS: readonly (readonly [string, string])[] = [
  ['add', 'Adds'],
  ['fetch', 'Fetches'],
  ['convert', 'Converts'],
  ['search', 'Searches'],
  ['translate', 'Translates'],
  ['summarise', 'Summarises'],
  ['send', 'Sends'],
  ['create', 'Creates'],
  ['list', 'Lists'],
  ['delete', 'Deletes'],
  ['validate', 'Validates'],
  ['parse', 'Parses'],
  ['schedule', 'Schedules'],
  ['compute', 'Computes'],
  ['track', 'Tracks'],
  ['book', 'Books'],
  ['generate', 'Generates'],
  ['analyse', 'Analyses'],
  ['export', 'Exports'],
  ['update', 'Updates'],
  ['cancel', 'Cancels'],
  ['estimate', 'Estimates'],
  ['compress', 'Compresses'],
  ['notify', 'Notifies owners of'],
];

/** [name words, description noun phrase] */
const OBJECTS: readonly (readonly [string, string])[] = [
  ['numbers', 'two numbers'],
  ['weather_forecast', 'weather forecasts'],
  ['currency_rate', 'currency exchange rates'],
  ['invoice', 'customer invoices'],
  ['email_message', 'email messages'],
  ['calendar_event', 'calendar events'],
  ['stock_price', 'stock prices'],
  ['flight', 'flight itineraries'],
  ['hotel_booking', 'hotel bookings'],
  ['image', 'images'],
  ['pdf_document', 'PDF documents'],
  ['customer_record', 'customer records'],
  ['sales_order', 'sales orders'],
  ['shipment', 'parcel shipments'],
  ['support_ticket', 'support tickets'],
  ['git_commit', 'git commits'],
  ['sql_query', 'SQL queries'],
  ['log_entry', 'log entries'],
  ['user_account', 'user accounts'],
  ['spreadsheet', 'spreadsheet rows'],
  ['map_route', 'driving routes on a map'],
  ['news_article', 'news articles'],
  ['recipe', 'cooking recipes'],
  ['playlist', 'music playlists'],
  ['timezone', 'time zone offsets'],
  ['payment', 'card payments'],
  ['contract', 'legal contracts'],
  ['sensor_reading', 'sensor readings'],
];

const CONTEXTS = [
  'for a city',
  'for a given date range',
  'from the CRM',
  'in a project workspace',
  'by postcode',
  'for the current user',
  'in the warehouse',
  'across all regions',
  'from an S3 bucket',
  'in the data warehouse',
  'for a team',
  'from a public API',
];

const OUTCOMES = [
  'and returns the result as JSON',
  'and returns a short summary',
  'and returns the sum',
  'and reports any errors it finds',
  'and returns a download link',
  'and returns the matching items',
  'and returns them sorted by date',
  'and returns a confirmation number',
];

const NOTES = [
  '',
  '',
  ' Needs an API key.',
  ' Results are cached for five minutes.',
  ' Pages through large answers.',
  ' Retries failed requests twice.',
];

/** A well-mixed hash of i (murmur3's finaliser), so neighbouring tools differ. */
function mix(i: number, salt: number): number {
  let h = (i ^ Math.imul(salt, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const pick = <T>(list: readonly T[], i: number, salt: number): T => list[mix(i, salt) % list.length] as T;

/** The name of tool i: `fetch_weather_forecast_42`, or `<prefix>_fetch_weather_forecast_42`. */
export function toolName(i: number, prefix = ''): string {
  const [verb] = pick(VERBS, i, 1);
  const [object] = pick(OBJECTS, i, 2);
  return `${prefix === '' ? '' : `${prefix}_`}${verb}_${object}_${i}`;
}

export function toolDescription(i: number): string {
  const [, verb] = pick(VERBS, i, 1);
  const [, object] = pick(OBJECTS, i, 2);
  return `${verb} ${object} ${pick(CONTEXTS, i, 3)} ${pick(OUTCOMES, i, 4)}.${pick(NOTES, i, 5)}`;
}

export function httpTool(i: number, prefix = ''): Record<string, unknown> {
  const scopes = i % 10 === 0 ? [] : i % 3 === 0 ? [scopeName(i), scopeName(i * 7 + 3)] : [scopeName(i)];
  const name = toolName(i, prefix);
  return {
    name,
    endpoint: `/tools/${name}`,
    scopes: [...new Set(scopes)],
    description: toolDescription(i),
    parameters: {
      query: { type: 'string', description: 'What to look up' },
      limit: { type: 'integer', description: 'Most records to return', required: false },
    },
    returns: 'A JSON list of records',
    host: 'localhost',
    port: 8002,
  };
}

/** Tools 0..n-1 (names with `prefix`, if given), as an import bundle. */
export function bundle(n: number, prefix = ''): string {
  const tools: Record<string, unknown>[] = [];
  for (let i = 0; i < n; i++) tools.push(httpTool(i, prefix));
  return JSON.stringify({ 'tool-services': [], tools });
}

/**
 * Searches an agent would make over this catalogue: words that occur together in generated
 * descriptions, and a snake_case part of tool names.
 */
export const SEARCHES: readonly { label: string; q: string }[] = [
  { label: 'two words', q: 'weather forecasts' },
  { label: 'three words', q: 'customer invoices summary' },
  { label: 'name part', q: 'sales_order' },
];

/** A scope for the `?scope=` filter (about 1 tool in 40 lists it). */
export const FILTER_SCOPE = scopeName(7);

const sign = createSigner({ key: JWT_SECRET, expiresIn: 6 * 3_600_000, header: { alg: 'HS256', typ: 'at+jwt' } });

export function token(sub: string, scopes: string[]): string {
  return sign({ sub, scope: scopes.join(' ') });
}

/** Token j holds scopes j, j+17 and j+31 (mod 50): 50 different scope sets. */
export function agentTokens(): string[] {
  return Array.from({ length: TOKEN_COUNT }, (_, j) => token(`bench-agent-${j}`, [scopeName(j), scopeName(j + 17), scopeName(j + 31)]));
}

export const adminToken = () => token('bench-admin', [ADMIN_SCOPE]);
