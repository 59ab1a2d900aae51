/**
 * If-Match and If-None-Match on `PUT /tools/{name}` and `DELETE /tools/{name}` (RFC 9110
 * section 13.1): an operator's write can be made conditional on the record it read, so that two
 * operators do not overwrite each other; a failed condition is 412 and writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  admin = bearer(t.token(['registry:write']));
});
afterAll(() => t.close());

const calculator = (description: string) => ({ ...seed('calculator'), description });

async function put(name: string, body: object, conditions: Record<string, string> = {}) {
  return t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: { ...admin, ...conditions }, payload: { ...body, name } });
}

async function etagOf(name: string): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: `/tools/${name}`, headers: admin });
  expect(res.statusCode).toBe(200);
  return res.headers['etag'] as string;
}

describe('conditional tool writes', () => {
  it('replaces only while the stored record still has the entity tag the writer read', async () => {
    expect((await put('calculator', calculator('one'))).statusCode).toBe(201);
    const read = await etagOf('calculator');
    const first = await put('calculator', calculator('two'), { 'if-match': read });
    expect(first.statusCode).toBe(200);
    // The answer's ETag is what the next GET gives: writes can be chained on it.
    expect(first.headers['etag']).toBe(await etagOf('calculator'));
    expect(first.headers['etag']).not.toBe(read);

    const stale = await put('calculator', calculator('three'), { 'if-match': read });
    expect(stale.statusCode).toBe(412);
    expect(stale.json()).toMatchObject({ code: 'TR_ERR_PRECONDITION_FAILED', detail: expect.stringContaining('has changed') });
    expect((await t.app.inject({ method: 'GET', url: '/tools/calculator', headers: admin })).json().descriptor.description).toBe('two');
    // A list matches when any tag in it does; a weak tag never does (strong comparison).
    expect((await put('calculator', calculator('four'), { 'if-match': `"nope", ${first.headers['etag'] as string}` })).statusCode).toBe(
      200,
    );
    expect((await put('calculator', calculator('five'), { 'if-match': `W/${await etagOf('calculator')}` })).statusCode).toBe(412);
  });

  it('lets one of two writers that read the same record win, even in one batch', async () => {
    const read = await etagOf('calculator');
    const answers = await Promise.all([
      put('calculator', calculator('writer a'), { 'if-match': read }),
      put('calculator', calculator('writer b'), { 'if-match': read }),
    ]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 412]);
  });

  it('creates only with If-None-Match: *, and If-Match: * needs the tool to exist', async () => {
    expect((await put('fresh', calculator('new'), { 'if-match': '*' })).statusCode).toBe(412);
    expect((await t.app.inject({ method: 'GET', url: '/tools/fresh', headers: admin })).statusCode).toBe(404);
    expect((await put('fresh', calculator('new'), { 'if-none-match': '*' })).statusCode).toBe(201);
    const again = await put('fresh', calculator('again'), { 'if-none-match': '*' });
    expect(again.statusCode).toBe(412);
    expect(again.json().detail).toContain('exists');
    expect((await put('fresh', calculator('again'), { 'if-match': '*' })).statusCode).toBe(200);
  });

  it('deletes only while the tag holds', async () => {
    const read = await etagOf('fresh');
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/fresh', headers: { ...admin, 'if-match': '"r-stale"' } })).statusCode).toBe(
      412,
    );
    expect((await t.app.inject({ method: 'GET', url: '/tools/fresh', headers: admin })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/fresh', headers: { ...admin, 'if-match': read } })).statusCode).toBe(200);
    // Gone: nothing matches any more.
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/fresh', headers: { ...admin, 'if-match': read } })).statusCode).toBe(412);
  });

  it('takes a DELETE that declares a JSON body but sends none, as clients that always set Content-Type do', async () => {
    expect((await put('bodiless', calculator('x'))).statusCode).toBe(201);
    const res = await t.app.inject({ method: 'DELETE', url: '/tools/bodiless', headers: { ...admin, 'content-type': 'application/json' } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: 'bodiless', status: 'deleted' });
  });

  it('refuses a malformed condition with 400, before anything is written', async () => {
    const before = await etagOf('calculator');
    for (const header of ['unquoted', '"a" junk', '']) {
      const res = await put('calculator', calculator('malformed'), { 'if-match': header });
      expect(res.statusCode, header).toBe(400);
      expect(res.json().detail).toContain('If-Match');
    }
    expect(await etagOf('calculator')).toBe(before);
  });
});
