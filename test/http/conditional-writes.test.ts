/**
 * If-Match and If-None-Match on `PUT /tools/{name}` and `DELETE /tools/{name}`, and on
 * `PUT /tool-services/{id}` and `DELETE /tool-services/{id}` (RFC 9110 section 13.1; issue 34):
 * an operator's write can be made conditional on the record it read, so that two operators do
 * not overwrite each other; a failed condition is 412 and writes nothing.
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

describe('conditional tool-service writes (issue 34)', () => {
  const service = (configParams: unknown[]) => ({ topic: 'jokes', 'config-params': configParams });
  const putService = (id: string, body: object, conditions: Record<string, string> = {}) =>
    t.app.inject({ method: 'PUT', url: `/tool-services/${id}`, headers: { ...admin, ...conditions }, payload: body });
  const deleteService = (id: string, conditions: Record<string, string> = {}) =>
    t.app.inject({ method: 'DELETE', url: `/tool-services/${id}`, headers: { ...admin, ...conditions } });
  const readService = (id: string, conditions: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url: `/tool-services/${id}`, headers: { ...admin, ...conditions } });
  const paramsOf = async (id: string) => (await readService(id)).json().descriptor['config-params'].map((p: { name: string }) => p.name);

  it('answers a strong ETag of the stored record, and 304 while it is unchanged', async () => {
    const created = await putService('jokes', service(['style']));
    expect(created.statusCode).toBe(201);
    const read = await readService('jokes');
    expect(read.statusCode).toBe(200);
    const etag = read.headers['etag'] as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    // The write's answer carries the same tag as the read that follows it.
    expect(created.headers['etag']).toBe(etag);
    const unchanged = await readService('jokes', { 'if-none-match': etag });
    expect(unchanged.statusCode).toBe(304);
    expect(unchanged.body).toBe('');
    expect(unchanged.headers['etag']).toBe(etag);
    expect((await readService('jokes', { 'if-none-match': `"other", W/${etag}` })).statusCode).toBe(304);
    expect((await readService('jokes', { 'if-none-match': '"other"' })).statusCode).toBe(200);
  });

  it('replaces only while the stored service still has the entity tag the writer read', async () => {
    const read = (await readService('jokes')).headers['etag'] as string;
    const first = await putService('jokes', service(['style', 'language']), { 'if-match': read });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.headers['etag']).toBe((await readService('jokes')).headers['etag']);
    expect(first.headers['etag']).not.toBe(read);

    const stale = await putService('jokes', service(['mood']), { 'if-match': read });
    expect(stale.statusCode).toBe(412);
    expect(stale.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(stale.json()).toMatchObject({
      type: 'urn:tool-registry:error:precondition-failed',
      code: 'TR_ERR_PRECONDITION_FAILED',
      detail: `tool service "jokes" has changed: its entity tag is ${first.headers['etag'] as string} (If-Match)`,
    });
    expect(await paramsOf('jokes')).toEqual(['style', 'language']);
    // A list matches when any tag in it does; a weak tag never does (strong comparison).
    expect((await putService('jokes', service(['a']), { 'if-match': `"nope", ${first.headers['etag'] as string}` })).statusCode).toBe(200);
    const now = (await readService('jokes')).headers['etag'] as string;
    expect((await putService('jokes', service(['b']), { 'if-match': `W/${now}` })).statusCode).toBe(412);
    expect(await paramsOf('jokes')).toEqual(['a']);
  });

  it('lets one of two writers that read the same service win, even in one batch', async () => {
    const read = (await readService('jokes')).headers['etag'] as string;
    const answers = await Promise.all([
      putService('jokes', service(['writer_a']), { 'if-match': read }),
      putService('jokes', service(['writer_b']), { 'if-match': read }),
    ]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 412]);
    const winner = answers.find((a) => a.statusCode === 200)!.json().descriptor['config-params'][0].name;
    expect(await paramsOf('jokes')).toEqual([winner]);
  });

  it('creates only with If-None-Match: *, and If-Match: * needs the service to exist', async () => {
    const missing = await putService('fresh-service', service([]), { 'if-match': '*' });
    expect(missing.statusCode).toBe(412);
    expect(missing.json().detail).toBe('tool service "fresh-service" does not exist (If-Match)');
    expect((await readService('fresh-service')).statusCode).toBe(404);
    expect((await putService('fresh-service', service([]), { 'if-none-match': '*' })).statusCode).toBe(201);
    const again = await putService('fresh-service', service(['x']), { 'if-none-match': '*' });
    expect(again.statusCode).toBe(412);
    expect(again.json().detail).toBe('tool service "fresh-service" exists (If-None-Match)');
    expect((await putService('fresh-service', service(['x']), { 'if-match': '*' })).statusCode).toBe(200);
  });

  it('deletes only while the tag holds', async () => {
    const read = (await readService('fresh-service')).headers['etag'] as string;
    expect((await deleteService('fresh-service', { 'if-match': '"r-stale"' })).statusCode).toBe(412);
    expect((await readService('fresh-service')).statusCode).toBe(200);
    const deleted = await deleteService('fresh-service', { 'if-match': read });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(deleted.json()).toMatchObject({ id: 'fresh-service', status: 'deleted' });
    // Gone: nothing matches any more, `*` included.
    expect((await deleteService('fresh-service', { 'if-match': read })).statusCode).toBe(412);
    expect((await deleteService('fresh-service', { 'if-match': '*' })).statusCode).toBe(412);
    expect((await deleteService('fresh-service')).statusCode).toBe(404);
  });

  it('checks the condition before the body, and refuses a malformed one with 400, before anything is written', async () => {
    const before = (await readService('jokes')).headers['etag'] as string;
    // A stale tag wins over a body that would be refused: the precondition is looked at first.
    const stale = await putService('jokes', { topic: 'not a topic!' }, { 'if-match': '"r-stale"' });
    expect(stale.statusCode).toBe(412);
    for (const header of ['unquoted', '"a" junk', '']) {
      const res = await putService('jokes', service(['malformed']), { 'if-match': header });
      expect(res.statusCode, header).toBe(400);
      expect(res.json().detail).toContain('If-Match');
      expect((await deleteService('jokes', { 'if-match': header })).statusCode, header).toBe(400);
    }
    expect((await readService('jokes')).headers['etag']).toBe(before);
  });

  it('is audited as the write it refused', async () => {
    const res = await putService('jokes', service(['audited']), { 'if-match': '"r-stale"' });
    expect(res.statusCode).toBe(412);
    const entries = (await t.app.inject({ method: 'GET', url: '/audit?action=tool-service.put', headers: admin })).json().entries as {
      outcome: string;
      status: number;
      target: string | null;
    }[];
    expect(entries[0]).toMatchObject({ outcome: 'invalid', status: 412, target: 'jokes' });
  });
});
