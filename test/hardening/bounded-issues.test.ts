/**
 * Issue 28, "nothing runs unbounded on the event loop": a descriptor full of strings holding
 * control, bidi or invisible characters raised one zod issue per string. A 1 MiB enum of 100,000
 * of them took 1.3 to 1.7 s to refuse, and with BODY_LIMIT above ~3 MiB zod's spread of the
 * issues could overflow its stack. Now a value raises at most 99 and one saying there are more,
 * and lists and records are counted before their items are parsed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const json = { 'content-type': 'application/json' };
const list = (n: number, item: string) => `[${new Array(n).fill(item).join(',')}]`;
const BIDI = '"\\u202ex"';
const tool = (rest: string) => `{"name":"bad","endpoint":"/x","description":"d",${rest}}`;

type Case = [what: string, method: 'POST' | 'PUT', url: string, body: string];

/** Bodies of at most `mib` MiB, each of strings that all hold a bidi control. */
function badBodies(mib: number): Case[] {
  const n = Math.floor((mib * 1024 * 1024) / 10.5);
  const params = Math.floor(n / 28);
  const cases: Case[] = [
    ['an enum of bidi strings', 'POST', '/tools/register', tool(`"parameters":{"p":{"type":"string","enum":${list(n, BIDI)}}}`)],
    [
      'an enum of objects with bidi keys',
      'POST',
      '/tools/register',
      tool(`"parameters":{"p":{"type":"string","enum":${list(Math.floor(n / 1.4), '{"\\u202e":1}')}}}`),
    ],
    ['items of bidi strings', 'POST', '/tools/register', tool(`"parameters":{"p":{"type":"array","items":{"enum":${list(n, BIDI)}}}}`)],
    ['an inputSchema of bidi strings', 'POST', '/tools/register', tool(`"inputSchema":{"type":"object","enum":${list(n, BIDI)}}`)],
    [
      'parameters with 25 bad enum values each',
      'POST',
      '/tools/register',
      tool(
        `"parameters":{${Array.from({ length: Math.min(params, 4096) }, (_, i) => `"p${i}":{"type":"string","enum":${list(25, BIDI)}}`).join(',')}}`,
      ),
    ],
    [
      'more parameters than any schema holds',
      'POST',
      '/tools/register',
      tool(`"parameters":{${Array.from({ length: Math.floor(n / 2.5) }, (_, i) => `"p${i}":{"type":"x"}`).join(',')}}`),
    ],
    [
      'a config value of bidi strings',
      'POST',
      '/tools/register',
      `{"type":"tool-service","name":"j","description":"d","service":"joke","style":${list(n, BIDI)}}`,
    ],
    [
      'config keys of a bidi string each',
      'POST',
      '/tools/register',
      `{"type":"tool-service","name":"j","description":"d","service":"joke",${Array.from({ length: Math.floor(n / 2.1) }, (_, i) => `"k${i}":${BIDI}`).join(',')}}`,
    ],
    [
      'toolScopes of bad scopes',
      'PUT',
      '/mcp-servers/x',
      `{"url":"http://127.0.0.1:1/mcp","toolScopes":{${Array.from({ length: Math.floor(n / 2.1) }, (_, i) => `"t${i}":["\\u0001"]`).join(',')}}}`,
    ],
  ];
  for (const [what, , , body] of cases) expect(body.length, what).toBeLessThanOrEqual(mib * 1024 * 1024);
  return cases;
}

let t: TestApp;
let admin: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp({ DATABASE_PATH: ':memory:' });
  admin = bearer(t.token(['registry:write']));
  await t.app.inject({
    method: 'PUT',
    url: '/tool-services/joke',
    headers: admin,
    payload: { id: 'joke', topic: 'joke', 'config-params': ['style'] },
  });
});
afterAll(() => t.close());

type Problem = { code: string; detail: string; errors?: { path: string; message: string }[] };

describe('issue 28: the issues one descriptor raises are bounded', () => {
  it.each(badBodies(0.95))(
    '1 MiB of %s is a short 400 listing at most 100 errors and counting the rest',
    async (_what, method, url, body) => {
      const started = performance.now();
      const res = await t.app.inject({ method, url, headers: { ...admin, ...json }, payload: body });
      const took = performance.now() - started;
      expect(res.statusCode, res.body.slice(0, 300)).toBe(400);
      const problem = JSON.parse(res.body) as Problem;
      expect(problem.code).toBe('TR_ERR_VALIDATION');
      expect(problem.errors?.length).toBeGreaterThan(0);
      expect(problem.errors?.length).toBeLessThanOrEqual(100);
      // Either the count of the rest, or the one bound that refused them all before they were parsed.
      if (problem.errors?.length === 100) {
        expect(problem.detail).toMatch(/\(and \d+ more\)$/);
        expect(problem.errors.at(-1)?.message).toMatch(
          /^holds more strings or keys with control, bidirectional or invisible characters than the 99 named$/,
        );
      } else {
        expect(problem.errors).toEqual([
          { path: expect.any(String), message: expect.stringMatching(/^must have at most \d+ (values|entries)$/) },
        ]);
      }
      expect(res.body.length).toBeLessThan(20_000);
      // Before: 0.4 to 1.7 s; now 10 to 100 ms. A wide margin for slow machines.
      expect(took).toBeLessThan(500);
    },
  );

  it('an enum with a few bad values still names each one, at its own path', async () => {
    const body = tool(`"parameters":{"p":{"type":"string","enum":["ok",${BIDI},"\\u0007",{"\\u202e":1}]}}`);
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: { ...admin, ...json }, payload: body });
    expect(res.statusCode).toBe(400);
    expect((JSON.parse(res.body) as Problem).errors).toEqual([
      { path: 'parameters.p.enum.1', message: 'must not contain control characters or bidirectional formatting characters' },
      { path: 'parameters.p.enum.2', message: 'must not contain control characters or bidirectional formatting characters' },
      { path: 'parameters.p.enum.3.\u202e', message: 'key must not contain control characters or bidirectional formatting characters' },
    ]);
  });

  it('exactly 99 bad values are all named, with no word of more', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: { ...admin, ...json },
      payload: tool(`"inputSchema":{"type":"object","enum":${list(99, BIDI)}}`),
    });
    const problem = JSON.parse(res.body) as Problem;
    expect(problem.errors).toHaveLength(99);
    expect(problem.errors?.every((error) => error.message.startsWith('must not contain'))).toBe(true);
  });
});

describe('issue 28: with BODY_LIMIT raised, a 6 MiB body of bad strings is a 4xx, never a 5xx', () => {
  let big: TestApp;
  let bigAdmin: Record<string, string>;
  beforeAll(async () => {
    big = await createTestApp({ DATABASE_PATH: ':memory:', BODY_LIMIT: String(8 * 1024 * 1024) });
    bigAdmin = bearer(big.token(['registry:write']));
    await big.app.inject({
      method: 'PUT',
      url: '/tool-services/joke',
      headers: bigAdmin,
      payload: { id: 'joke', topic: 'joke', 'config-params': ['style'] },
    });
  });
  afterAll(() => big.close());

  it.each(badBodies(6))('6 MiB of %s', async (_what, method, url, body) => {
    const res = await big.app.inject({ method, url, headers: { ...bigAdmin, ...json }, payload: body });
    expect(res.statusCode, res.body.slice(0, 300)).toBeGreaterThanOrEqual(400);
    expect(res.statusCode, res.body.slice(0, 300)).toBeLessThan(500);
    expect(res.body.length).toBeLessThan(20_000);
  });
});
