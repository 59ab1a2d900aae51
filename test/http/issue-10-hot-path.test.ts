/**
 * Issue 10's cuts to the common request pipeline keep every answer as it was: page bodies kept
 * between writes change with the next write, the precompiled checks of a page's query and of
 * path names give exactly zod's values and refusals, and requests still log through a child
 * bound to their id when they log.
 */
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import { afterEach, describe, expect, it } from 'vitest';
import { DiscoveryQuerySchema, ToolNameParamsSchema } from '../../src/model/api.js';
import { validatorCompiler } from '../../src/http/validation.js';
// Registers the page query's precompiled check, as building the app does.
import '../../src/http/routes/discovery.js';
import { seed } from '../helpers/fixtures.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

type Compiled = (data: unknown) => unknown;
const compile = (compiler: typeof validatorCompiler | typeof zodValidatorCompiler, schema: unknown, httpPart: string) =>
  (compiler as (route: { schema: unknown; httpPart: string; method: string; url: string }) => Compiled)({
    schema,
    httpPart,
    method: 'GET',
    url: '/',
  });

/** What the route sees: `true` leaves the part as it came. */
const outcome = (result: unknown, data: unknown) => (result === true ? { value: data } : result);

const tool = (name: string, description = `tool ${name}`) => ({ ...seed('calculator'), name, description });

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('issue 10: the hot request pipeline', () => {
  it("checks a page's query as zod does, values and refusals alike", () => {
    const fast = compile(validatorCompiler, DiscoveryQuerySchema, 'querystring');
    const zod = compile(zodValidatorCompiler, DiscoveryQuerySchema, 'querystring');
    const queries: Record<string, unknown>[] = [
      {},
      { limit: '100' },
      { limit: '1' },
      { limit: '1000' },
      { limit: '1001' },
      { limit: '0' },
      { limit: '0100' },
      { limit: ' 100' },
      { limit: '1e2' },
      { limit: 'abc' },
      { limit: '' },
      { limit: ['1', '2'] },
      { limit: '100', cursor: 'abc' },
      { cursor: 'x'.repeat(2048) },
      { cursor: 'x'.repeat(2049) },
      { cursor: ['a', 'b'] },
      { limit: '5', q: 'weather' },
      { limit: '5', unknown: 'x' },
      { wait: '30s' },
    ];
    for (const query of queries) {
      const ours = outcome(fast({ ...query }), query) as { value?: unknown; error?: unknown };
      const theirs = zod({ ...query }) as { value?: unknown; error?: unknown };
      expect(ours.value, JSON.stringify(query)).toEqual(theirs.value);
      expect(JSON.stringify(ours.error), JSON.stringify(query)).toBe(JSON.stringify(theirs.error));
    }
  });

  it('passes path names as they came, and leaves anything else to zod', () => {
    const fast = compile(validatorCompiler, ToolNameParamsSchema, 'params');
    const zod = compile(zodValidatorCompiler, ToolNameParamsSchema, 'params');
    for (const params of [{ name: 'calculator' }, { name: '' }, { name: 'a', other: 'b' }, {}, { name: 5 }]) {
      expect(outcome(fast({ ...params }), params), JSON.stringify(params)).toEqual(zod({ ...params }));
    }
  });

  it('serves a page kept since the last write, and the new page after a write', async () => {
    t = await createTestApp();
    const admin = bearer(t.token(['registry:write']));
    for (const name of ['alpha', 'bravo', 'charlie', 'delta']) {
      expect((await t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: tool(name) })).statusCode).toBe(201);
    }
    const get = (url: string) => t!.app.inject({ method: 'GET', url });
    const first = await get('/?limit=2');
    expect((await get('/?limit=2')).body).toBe(first.body);
    const second = await get(`/?limit=2&cursor=${first.json<{ nextCursor: string }>().nextCursor}`);
    expect(second.json<{ tools: { name: string }[] }>().tools.map((x) => x.name)).toEqual(['charlie', 'delta']);
    // Another view's page is its own.
    expect((await get('/?limit=3')).json<{ tools: unknown[] }>().tools).toHaveLength(3);

    await t.app.inject({ method: 'PUT', url: '/tools/bravo', headers: admin, payload: tool('bravo', 'changed') });
    const after = await get('/?limit=2');
    expect(after.headers['x-registry-index']).not.toBe(first.headers['x-registry-index']);
    expect(after.json<{ tools: { description: string }[] }>().tools[1]?.description).toBe('changed');
    await t.app.inject({ method: 'DELETE', url: '/tools/charlie', headers: admin });
    // The walk pinned before the delete still lists it, as a tombstone.
    const pinned = await get(`/?limit=2&cursor=${first.json<{ nextCursor: string }>().nextCursor}`);
    expect(pinned.json<{ tools: { name: string; status: string }[] }>().tools[0]).toMatchObject({ name: 'charlie', status: 'deleted' });
  });

  it('logs through a child bound to the request id when a request logs', async () => {
    t = await createTestApp({}, { keepLogs: true });
    const res = await t.app.inject({ method: 'GET', url: '/tools/nothing-here' });
    expect(res.statusCode).toBe(404);
    const refused = t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => entry['msg'] === 'request refused');
    expect(refused).toMatchObject({ reqId: res.headers['x-request-id'], code: 'TR_ERR_NOT_FOUND' });
    expect(t.logs.some((line) => line.includes('"incoming request"') && line.includes(String(res.headers['x-request-id'])))).toBe(true);
  });
});
