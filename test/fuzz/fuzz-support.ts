/**
 * Shared parts of the property-based fuzz suite (issue 9, "What must be shown"): a seeded app,
 * the state a refused write must leave alone, the answer shape every route must keep, and the
 * run settings that make a failure reproducible.
 *
 * Every property runs a bounded, seeded number of times. To replay a failure, take the `seed`
 * and `path` fast-check prints and run `FUZZ_SEED=<seed> FUZZ_PATH=<path> npx vitest run test/fuzz`;
 * `FUZZ_RUNS=<n>` scales every property (e.g. 2000 for a long hunt).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const envNumber = (name: string): number | undefined => {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? undefined : Number(raw);
};

/** Long runs of one character (huge strings, deep nesting) shortened, so a report stays readable. */
const abbreviate = (text: string): string =>
  text.replace(/(.)\1{31,}/gsu, (run, c: string) => `${c.repeat(3)}…[${c} ×${[...run].length}]…`);

/** fast-check settings for one property: `runs` by default, seeded, replayable. */
export function fuzzParams<T>(runs: number): fc.Parameters<T> {
  const path = process.env['FUZZ_PATH'];
  return {
    numRuns: envNumber('FUZZ_RUNS') ?? runs,
    // A fixed seed keeps CI deterministic; FUZZ_SEED=random explores.
    seed: process.env['FUZZ_SEED'] === 'random' ? Date.now() : (envNumber('FUZZ_SEED') ?? 0x7001),
    ...(path !== undefined && path !== '' && { path }),
    // A shrink that goes on longer than this reports what it has by then.
    interruptAfterTimeLimit: 60_000,
    // fast-check's own report (seed, path, counterexample), with huge values shortened.
    reporter(out) {
      if (!out.failed) return;
      throw new Error(abbreviate(fc.defaultReportMessage(out) ?? 'the property failed'), { cause: out.errorInstance });
    },
  };
}

const SERVICES = ['joke-service', 'custom-rag'] as const;
const TOOLS = [
  'calculator',
  'database_query',
  'file_reader',
  'simulation_data',
  'weather_forecast',
  'tell-joke',
  'query-customers',
  'query-products',
] as const;

export interface FuzzApp extends TestApp {
  admin: Record<string, string>;
  /** A token holding every scope the seed uses (not the admin scope). */
  agent: Record<string, string>;
  /** A token with no scope at all. */
  planner: Record<string, string>;
  db: Database.Database;
}

/** A fresh app on its own database, seeded with every fixture (2 services, 8 tools). */
export async function seededApp(settings: Parameters<typeof createTestApp>[0] = {}): Promise<FuzzApp> {
  // Rate limits off: a fuzz run is one caller making hundreds of writes on purpose.
  const t = await createTestApp({ RATE_LIMIT_MAX: '0', BODY_LIMIT: String(64 * 1024), ...settings });
  const admin = bearer(t.token(['registry:write'], { sub: 'fuzz-admin' }));
  const scopes = TOOLS.flatMap((name) => (seed(name)['scopes'] as string[] | undefined) ?? []);
  const agent = bearer(t.token(scopes, { sub: 'fuzz-agent' }));
  const planner = bearer(t.token([], { sub: 'fuzz-planner' }));
  const res = await t.app.inject({
    method: 'POST',
    url: '/import',
    headers: admin,
    payload: { 'tool-services': SERVICES.map((id) => seed(id)), tools: TOOLS.map((name) => seed(name)) },
  });
  if (res.statusCode !== 200) throw new Error(`seeding failed: ${res.statusCode} ${res.body}`);
  const db = new Database(join(t.dir, 'registry.db'), { readonly: true });
  const close = t.close.bind(t);
  return Object.assign(t, {
    admin,
    agent,
    planner,
    db,
    async close() {
      db.close();
      await close();
    },
  });
}

export interface State {
  export: unknown;
  view: { index: string | undefined; etag: string | undefined; body: string };
  tables: Record<string, unknown[]>;
}

function header(res: LightMyRequestResponse, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value.join(', ') : value === undefined ? undefined : String(value);
}

/**
 * What a refused write must leave exactly as it was: the database (every table but the audit
 * log and usage records, which do record refusals), the admin's export and the anonymous view.
 */
export async function state(t: FuzzApp): Promise<State> {
  const exported = await t.app.inject({ method: 'GET', url: '/export', headers: t.admin });
  expect(exported.statusCode, 'GET /export').toBe(200);
  const view = await t.app.inject({ method: 'GET', url: '/' });
  expect(view.statusCode, 'GET /').toBe(200);
  const tables: Record<string, unknown[]> = {};
  for (const [table, order] of [
    ['registry_state', ''],
    ['tool_services', ' ORDER BY id'],
    ['tools', ' ORDER BY name'],
    ['changes', ' ORDER BY 1'],
  ] as const) {
    tables[table] = t.db.prepare(`SELECT * FROM ${table}${order}`).all();
  }
  return {
    export: exported.json(),
    view: { index: header(view, 'x-registry-index'), etag: header(view, 'etag'), body: view.body },
    tables,
  };
}

/** The gateway errors a tool call may answer with (docs/agents.md, "Limits and failures"). */
export const GATEWAY_STATUSES = new Set([502, 503, 504]);

/**
 * The answer is 2xx/3xx/4xx (or one of `gateway`), never a 500, and every error is a problem
 * document with `type, title, status, detail, code` and no stack trace.
 */
export function expectCleanAnswer(
  res: { statusCode: number; headers: Record<string, unknown>; body: string },
  gateway: ReadonlySet<number> = new Set(),
): void {
  const status = res.statusCode;
  const where = `${status} ${abbreviate(res.body).slice(0, 600)}`;
  expect(status < 500 || gateway.has(status), `no 5xx but the documented ones: ${where}`).toBe(true);
  expect(res.body, `no stack trace: ${where}`).not.toMatch(/\bat .*\.(ts|js):\d+/);
  if (status < 400) return;
  expect(String(res.headers['content-type']), `problem+json: ${where}`).toContain('application/problem+json');
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(res.body) as Record<string, unknown>;
  } catch {
    throw new Error(`the error body is not JSON: ${where}`);
  }
  expect(body, `problem members: ${where}`).toMatchObject({
    type: expect.stringMatching(/^urn:tool-registry:error:/),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    code: expect.stringMatching(/^TR_ERR_/),
  });
  expect(body).not.toHaveProperty('stack');
}

// ---------------------------------------------------------------------------------------------
// values that break parsers, validators and plain-object indexing

/** Property names every plain object inherits (issue 9: `constructor`, `__proto__`, ...). */
export const PROTOTYPE_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'toLocaleString',
  '__defineGetter__',
  '__lookupSetter__',
] as const;

const CONTROL = [
  '\u0000',
  '\u0007',
  '\b',
  '\t',
  '\n',
  '\r',
  '\u001b[31m',
  '\u001b]0;owned\u0007',
  '\u007f',
  '\u0085',
  '\u2028',
  '\u202e',
  '\ufeff',
  '\ud800',
];

export const controlString = fc
  .array(fc.oneof(fc.constantFrom(...CONTROL), fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 6 })
  .map((parts) => parts.join(''));

/** A string that is easy to print in a counterexample but may be very long. */
export class Huge {
  constructor(
    readonly unit: string,
    readonly times: number,
  ) {}
  get value(): string {
    return this.unit.repeat(this.times);
  }
  [fc.toStringMethod](): string {
    return `${JSON.stringify(this.unit)}.repeat(${this.times})`;
  }
}

/** Objects or arrays nested `depth` levels, printed by their depth. */
class Nested {
  constructor(
    readonly depth: number,
    readonly kind: 'object' | 'array',
  ) {}
  get value(): unknown {
    let v: unknown = 'leaf';
    for (let i = 0; i < this.depth; i++) v = this.kind === 'object' ? { a: v } : [v];
    return v;
  }
  [fc.toStringMethod](): string {
    return `<${this.kind} nested ${this.depth} levels>`;
  }
}

/** An array of `length` copies of `item`, printed by its length: wide where Nested is deep. */
export class Wide {
  constructor(
    readonly length: number,
    readonly item: unknown = 0,
  ) {}
  get value(): unknown {
    return new Array<unknown>(this.length).fill(this.item);
  }
  [fc.toStringMethod](): string {
    return `<array of ${this.length} × ${JSON.stringify(this.item)}>`;
  }
}

const materialise = (v: unknown): unknown => (v instanceof Huge || v instanceof Nested || v instanceof Wide ? v.value : v);

/** Strings that are valid in one place and trouble in another. */
export const nastyString: fc.Arbitrary<string | Huge> = fc.oneof(
  fc.string(),
  fc.constantFrom(...PROTOTYPE_NAMES),
  controlString,
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    'a b',
    '../../etc/passwd',
    '%00',
    '%zz',
    '${x}',
    '{{x}}',
    "'; DROP TABLE tools; --",
    'null',
    'NaN',
    '-1',
    '1e999',
  ),
  fc
    .record({ unit: fc.constantFrom('x', 'é', '😀', '\u0000', 'a '), times: fc.integer({ min: 200, max: 40_000 }) })
    .map(({ unit, times }) => new Huge(unit, times)),
);

/** A value of any JSON type that a validator might not expect. */
export const nastyValue: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: nastyString, weight: 4 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
  fc.constantFrom(null, true, false, 0, -1, 0.5, -0, 1e308, -1e308, 2 ** 53 + 2, Number.MAX_SAFE_INTEGER, 65_536, 70_000),
  fc.array(fc.constantFrom(...PROTOTYPE_NAMES), { minLength: 1, maxLength: 3 }),
  fc.dictionary(fc.constantFrom(...PROTOTYPE_NAMES, 'type', 'name', 'required'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  {
    // Shallow and very deep (the 1,000 to 1,500 levels and beyond) both, not only what integer bias favours.
    arbitrary: fc
      .record({
        depth: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 900, max: 3000 })),
        kind: fc.constantFrom<'object' | 'array'>('object', 'array'),
      })
      .map(({ depth, kind }) => new Nested(depth, kind)),
    weight: 2,
  },
);

/** A key a descriptor might carry: a known field, a prototype name or anything. */
const nastyKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...PROTOTYPE_NAMES),
  fc.string({ maxLength: 12 }),
  controlString,
  fc.constantFrom('name', 'type', 'scopes', 'service', 'id', 'style', 'collection'),
);

// ---------------------------------------------------------------------------------------------
// near-valid descriptors: a seed descriptor with one field changed

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Segment = string | number;

/** Every path into a JSON value, the root included (as []). */
export function pathsOf(value: unknown, prefix: Segment[] = []): Segment[][] {
  const out: Segment[][] = [prefix];
  if (Array.isArray(value)) value.forEach((item, i) => out.push(...pathsOf(item, [...prefix, i])));
  else if (value !== null && typeof value === 'object') for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  return out;
}

const define = (target: Record<string, unknown>, key: string, value: unknown) =>
  // defineProperty, so that `__proto__` becomes an own key that JSON.stringify writes out.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });

export type MutationOp = 'replace' | 'remove' | 'add-key' | 'rename-key' | 'duplicate-key';

export interface Mutation {
  op: MutationOp;
  path: Segment[];
  key: string;
  value: unknown;
}

/** The JSON text of `base` with one mutation applied (duplicate keys need raw text). */
export function applyMutation(base: Json, m: Mutation): string {
  const copy = JSON.parse(JSON.stringify(base)) as Json;
  const value = materialise(m.value);
  const parentPath = m.path.slice(0, -1);
  const last = m.path.at(-1);
  let parent: unknown = copy;
  for (const seg of parentPath) parent = (parent as Record<Segment, unknown>)[seg];
  const target = last === undefined ? copy : (parent as Record<Segment, unknown>)[last];

  switch (m.op) {
    case 'replace': {
      if (last === undefined) return JSON.stringify(value);
      if (Array.isArray(parent)) parent[last as number] = value;
      else define(parent as Record<string, unknown>, String(last), value);
      return JSON.stringify(copy);
    }
    case 'remove': {
      if (last === undefined) return '';
      if (Array.isArray(parent)) parent.splice(last as number, 1);
      else delete (parent as Record<string, unknown>)[String(last)];
      return JSON.stringify(copy);
    }
    case 'add-key': {
      if (target !== null && typeof target === 'object' && !Array.isArray(target)) define(target as Record<string, unknown>, m.key, value);
      else if (Array.isArray(target)) target.push(value as Json);
      return JSON.stringify(copy);
    }
    case 'rename-key': {
      if (last === undefined || Array.isArray(parent)) return JSON.stringify(copy);
      const p = parent as Record<string, unknown>;
      const v = p[String(last)];
      delete p[String(last)];
      define(p, m.key, v);
      return JSON.stringify(copy);
    }
    case 'duplicate-key': {
      // `{"k": <value>, "k": <seed value>, ...}`: the same key twice in one object, the first mutated.
      if (typeof last !== 'string' || Array.isArray(parent)) return JSON.stringify(copy);
      const dup = `{${JSON.stringify(last)}:${JSON.stringify(value) ?? 'null'},${JSON.stringify(parent).slice(1)}`;
      if (parentPath.length === 0) return dup;
      // Splice the raw object text in where the parent was.
      const marker = '\u0000duplicate\u0000';
      let grand: unknown = copy;
      for (const seg of parentPath.slice(0, -1)) grand = (grand as Record<Segment, unknown>)[seg];
      (grand as Record<Segment, unknown>)[parentPath.at(-1) as Segment] = marker;
      return JSON.stringify(copy).replace(JSON.stringify(marker), dup);
    }
  }
}

export const mutationOf = (base: unknown): fc.Arbitrary<Mutation> =>
  fc.record({
    op: fc.constantFrom<MutationOp>('replace', 'replace', 'replace', 'remove', 'add-key', 'rename-key', 'duplicate-key'),
    path: fc.constantFrom(...pathsOf(base)),
    key: nastyKey,
    value: nastyValue,
  });

/** A seed descriptor by name, as plain JSON. */
export const seedJson = (name: string): Json => seed(name) as Json;

/**
 * encodeURIComponent that does not throw on lone surrogates: they become the percent-escapes of
 * their WTF-8 bytes, which are not valid UTF-8 and so are one more thing for the server to refuse.
 */
export function encode(text: string): string {
  return text
    .split(/([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/)
    .map((part, i) => {
      if (i % 2 === 0) return encodeURIComponent(part);
      const c = part.charCodeAt(0);
      return [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    })
    .join('');
}

/** Arbitrary path segments for `{name}` and `{id}`: seed names, prototype names, anything. */
export const pathName: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...TOOLS, ...SERVICES, ...PROTOTYPE_NAMES).map((n) => encode(n)),
  fc.string().map((n) => encode(n)),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map((n) => encode(n)),
  controlString.map((n) => encode(n)),
  fc.integer({ min: 60, max: 400 }).map((n) => 'a'.repeat(n)),
  // Raw text a client may send without encoding it.
  fc.constantFrom('%', '%zz', '%00', '%C0%AF', '..%2F..%2Fetc', '.', '..', 'a%2Fb', '%2e%2e', 'a;b', 'a?b=1', '%E2%80%AE', '~', '*'),
);

/** One query value: arbitrary text, URL-encoded or raw, or a value valid for some parameter. */
export const queryValue: fc.Arbitrary<string> = fc.oneof(
  fc.string().map(encode),
  controlString.map(encode),
  fc.constantFrom(...PROTOTYPE_NAMES),
  fc.constantFrom(
    '',
    '0',
    '1',
    '-1',
    '1.5',
    '1e3',
    '0x10',
    ' 1',
    '999999999999999',
    '9999999999999999999999',
    'NaN',
    'Infinity',
    'true',
    '[]',
    '{}',
  ),
  fc.constantFrom(
    '2020-01-01T00:00:00Z',
    '2020-01-01T00:00:00+01:00',
    '2020-01-01',
    '2020-13-45T99:99:99Z',
    '0000-00-00T00:00:00Z',
    '%2B',
    '%',
    '%zz',
    '%00',
    'a%20b',
  ),
  fc.constantFrom(
    'calculator:use',
    'weather:read',
    'registry:write',
    'tool.put',
    'ok',
    'denied',
    'invalid',
    'error',
    'fuzz-admin',
    'calculator',
  ),
  fc.integer({ min: 2000, max: 9000 }).map((n) => 'x'.repeat(n)),
  fc.base64String({ maxLength: 40 }).map(encode),
);

/** A query string made of `keys` (each possibly repeated) and a few unknown parameters. */
export const queryString = (keys: readonly string[]): fc.Arbitrary<string> =>
  fc
    .array(
      fc.tuple(
        fc.oneof(
          { arbitrary: fc.constantFrom(...keys), weight: 6 },
          fc.constantFrom(...PROTOTYPE_NAMES),
          fc.string({ maxLength: 8 }).map(encode),
        ),
        queryValue,
      ),
      {
        maxLength: 5,
      },
    )
    .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&'));

/** Which caller sends a request. */
export type CallerKind = 'anonymous' | 'planner' | 'agent' | 'admin' | 'garbage';
export const callerKind = fc.constantFrom<CallerKind>('anonymous', 'planner', 'agent', 'admin', 'admin', 'garbage');

export function callerHeaders(t: FuzzApp, kind: CallerKind): Record<string, string> {
  switch (kind) {
    case 'anonymous':
      return {};
    case 'planner':
      return t.planner;
    case 'agent':
      return t.agent;
    case 'admin':
      return t.admin;
    case 'garbage':
      return { authorization: 'Bearer not.a.token' };
  }
}
