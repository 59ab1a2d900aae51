/**
 * Issue 9, "What must be shown": every query parameter of the read routes, and every path name,
 * fed arbitrary text, gets 2xx/304 or a clean 4xx problem, never a 500, and changes nothing.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callerHeaders,
  callerKind,
  controlString,
  encode,
  expectCleanAnswer,
  fuzzParams,
  pathName,
  queryString,
  queryValue,
  seededApp,
  state,
  type FuzzApp,
} from './fuzz-support.js';

let t: FuzzApp;
beforeAll(async () => {
  t = await seededApp();
  // A few refused and accepted writes, so the audit log has entries of every outcome to filter.
  await t.app.inject({
    method: 'POST',
    url: '/tools/register',
    headers: t.admin,
    payload: { name: 'bad name', endpoint: '/x', description: 'd' },
  });
  await t.app.inject({
    method: 'POST',
    url: '/tools/register',
    headers: t.planner,
    payload: { name: 'x', endpoint: '/x', description: 'd' },
  });
  await t.app.inject({ method: 'DELETE', url: '/tools/weather_forecast', headers: t.admin });
});
afterAll(() => t.close());

/** Reads never write: checked once per property, around all its runs. */
async function unchangedAround(run: () => Promise<void>): Promise<void> {
  const before = await state(t);
  await run();
  expect(await state(t)).toEqual(before);
}

const IF_NONE_MATCH = fc.oneof(
  fc.constant(undefined),
  fc.constant('*'),
  fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\x20-\x7e]/g, '')),
  fc.constantFrom('W/"x"', '"a", "b"', ',,,', 'W/'),
);

describe('fuzz: read routes', () => {
  it('GET / answers any page, search and filter query (limit, cursor, q, scope, updated_since) with 200 or a clean 4xx', async () => {
    await unchangedAround(() =>
      fc.assert(
        fc.asyncProperty(
          queryString(['limit', 'cursor', 'q', 'scope', 'updated_since']),
          callerKind,
          IF_NONE_MATCH,
          async (query, caller, inm) => {
            const res = await t.app.inject({
              method: 'GET',
              url: `/?${query}`,
              headers: { ...callerHeaders(t, caller), ...(inm !== undefined && { 'if-none-match': inm }) },
            });
            expectCleanAnswer(res);
          },
        ),
        fuzzParams(250),
      ),
    );
  });

  it('GET / answers a cursor from a real walk, altered, with 200 or a clean 4xx', async () => {
    const first = await t.app.inject({ method: 'GET', url: '/?limit=2' });
    const cursor = first.json<{ nextCursor: string }>().nextCursor;
    expect(typeof cursor).toBe('string');
    await fc.assert(
      fc.asyncProperty(fc.nat({ max: cursor.length }), fc.string({ maxLength: 6 }), fc.nat({ max: 4 }), async (at, insert, cut) => {
        const altered = cursor.slice(0, at) + insert + cursor.slice(at + cut);
        const res = await t.app.inject({ method: 'GET', url: `/?limit=2&cursor=${encode(altered)}` });
        expectCleanAnswer(res);
      }),
      fuzzParams(150),
    );
  });

  it('GET / answers blocking queries (index, wait) with 200/304 or a clean 4xx, and never holds past its wait', async () => {
    const index = fc.oneof(fc.constant(undefined), queryValue, fc.nat({ max: 40 }).map(String), fc.constantFrom('999999999999999', '0'));
    const wait = fc.oneof(
      fc.constant(undefined),
      queryValue,
      fc.constantFrom('0', '0ms', '1ms', '5ms', '1s', '10m', '11m', '9999999h', '1d', '-1s', '1.5s', ' 1s'),
    );
    await fc.assert(
      fc.asyncProperty(index, wait, callerKind, async (i, w, caller) => {
        // A valid index the view has not passed is held until `wait`: bound it at 20 ms so a run stays cheap.
        const holds = i !== undefined && /^\d{1,15}$/.test(i) && (w === undefined || /^\d+(ms|s|m|h)?$/.test(w));
        const waitValue = holds ? '20ms' : w;
        const query = [i !== undefined && `index=${i}`, waitValue !== undefined && `wait=${waitValue}`].filter(Boolean).join('&');
        const started = performance.now();
        const res = await Promise.race([
          t.app.inject({ method: 'GET', url: `/?${query}`, headers: callerHeaders(t, caller) }),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`GET /?${query} was held more than 3 s`)), 3000).unref()),
        ]);
        expectCleanAnswer(res);
        expect([200, 304, 400, 401]).toContain(res.statusCode);
        expect(performance.now() - started).toBeLessThan(3000);
      }),
      fuzzParams(150),
    );
  });

  it('GET / answers any Authorization header with 200 or a clean 400/401', async () => {
    const authorization = fc.oneof(
      fc.string({ maxLength: 60 }),
      fc.string({ maxLength: 40 }).map((s) => `Bearer ${s}`),
      controlString.map((s) => `Bearer ${s}`),
      fc.constantFrom(
        'Bearer',
        'Bearer ',
        'bearer x.y.z',
        'Basic Zm9vOmJhcg==',
        'Bearer a.b',
        'Bearer eyJhbGciOiJub25lIn0.e30.',
        'Bearer  two  spaces',
        'Bearer x.y.z, Bearer a.b.c',
      ),
    );
    await fc.assert(
      fc.asyncProperty(authorization, async (value) => {
        // Node refuses to send what HTTP cannot carry; a real client could not send it either.
        const header = value.replace(/[\r\n\0]/g, '');
        const res = await t.app.inject({ method: 'GET', url: '/', headers: { authorization: header } });
        expectCleanAnswer(res);
      }),
      fuzzParams(150),
    );
  });

  it('GET /tools/{name} and /tools/{name}/access answer any name with 200 or a clean 4xx', async () => {
    await unchangedAround(() =>
      fc.assert(
        fc.asyncProperty(pathName, fc.constantFrom('', '/access'), callerKind, async (name, suffix, caller) => {
          const res = await t.app.inject({ method: 'GET', url: `/tools/${name}${suffix}`, headers: callerHeaders(t, caller) });
          expectCleanAnswer(res);
        }),
        fuzzParams(200),
      ),
    );
  });

  it('GET /audit answers any filter (limit, cursor, sub, action, outcome, target, since, until) with 200 or a clean 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        queryString(['limit', 'cursor', 'sub', 'action', 'outcome', 'target', 'since', 'until']),
        callerKind,
        async (query, caller) => {
          const res = await t.app.inject({ method: 'GET', url: `/audit?${query}`, headers: callerHeaders(t, caller) });
          expectCleanAnswer(res);
        },
      ),
      fuzzParams(200),
    );
  });

  it('GET /stats, /export and /tool-services answer any query with 200 or a clean 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/stats', '/export', '/tool-services', '/tool-services/joke-service'),
        queryString(['since', 'limit']),
        callerKind,
        async (path, query, caller) => {
          const res = await t.app.inject({ method: 'GET', url: `${path}?${query}`, headers: callerHeaders(t, caller) });
          expectCleanAnswer(res);
        },
      ),
      fuzzParams(100),
    );
  });
});
