/**
 * Bad input gets a 4xx in the one problem+json shape, no stack trace, and the database is
 * exactly as it was: checked by dumping the SQLite file itself before and after.
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from './helpers/app.js';
import { seed } from './helpers/fixtures.js';

function dump(dir: string): string {
  const db = new Database(join(dir, 'registry.db'), { readonly: true });
  try {
    return JSON.stringify({
      state: db.prepare('SELECT * FROM registry_state').all(),
      services: db.prepare('SELECT * FROM tool_services ORDER BY id').all(),
      tools: db.prepare('SELECT * FROM tools ORDER BY name').all(),
    });
  } finally {
    db.close();
  }
}

describe('bad input', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let before: string;

  beforeAll(async () => {
    t = await createTestApp({ BODY_LIMIT: String(64 * 1024) });
    admin = bearer(t.token(['registry:write']));
    await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') });
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('tell-joke') });
    await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') });
    before = dump(t.dir);
    expect(JSON.parse(before).tools).toHaveLength(2);
  });
  afterAll(() => t.close());

  const json = { 'content-type': 'application/json' };
  const cases: [
    string,
    { method: 'POST' | 'PUT'; url: string; headers?: Record<string, string>; payload: string },
    number,
    string | null,
  ][] = [
    ['malformed JSON', { method: 'POST', url: '/tools/register', headers: json, payload: '{"name": "calculator",' }, 400, null],
    ['a JSON array', { method: 'POST', url: '/tools/register', headers: json, payload: '[1,2]' }, 400, ''],
    [
      'a wrong type (port as string)',
      { method: 'POST', url: '/tools/register', headers: json, payload: JSON.stringify({ ...seed('calculator'), port: '8002' }) },
      400,
      'port',
    ],
    [
      'a wrong type (scopes as string)',
      {
        method: 'POST',
        url: '/tools/register',
        headers: json,
        payload: JSON.stringify({ ...seed('calculator'), scopes: 'calculator:use' }),
      },
      400,
      'scopes',
    ],
    [
      'an unknown field on an HTTP tool',
      { method: 'POST', url: '/tools/register', headers: json, payload: JSON.stringify({ ...seed('calculator'), endpont: '/x' }) },
      400,
      'endpont',
    ],
    [
      'an unknown field on a service',
      {
        method: 'PUT',
        url: '/tool-services/joke-service',
        headers: json,
        payload: JSON.stringify({ ...seed('joke-service'), queue: 'x' }),
      },
      400,
      'queue',
    ],
    [
      'a name with spaces',
      { method: 'POST', url: '/tools/register', headers: json, payload: JSON.stringify({ ...seed('calculator'), name: 'my calculator' }) },
      400,
      'name',
    ],
    [
      'a 65-character name',
      { method: 'POST', url: '/tools/register', headers: json, payload: JSON.stringify({ ...seed('calculator'), name: 'a'.repeat(65) }) },
      400,
      'name',
    ],
    [
      'a queue name that is not a topic',
      {
        method: 'PUT',
        url: '/tool-services/joke-service',
        headers: json,
        payload: JSON.stringify({ ...seed('joke-service'), 'request-queue': 'just-a-queue' }),
      },
      400,
      'request-queue',
    ],
    [
      'a queue with a bad scheme',
      {
        method: 'PUT',
        url: '/tool-services/joke-service',
        headers: json,
        payload: JSON.stringify({ ...seed('joke-service'), 'response-queue': 'kafka://tg/response/joke' }),
      },
      400,
      'response-queue',
    ],
    [
      'both topic and queues',
      {
        method: 'PUT',
        url: '/tool-services/joke-service',
        headers: json,
        payload: JSON.stringify({ ...seed('joke-service'), topic: 'joke' }),
      },
      400,
      'topic',
    ],
    [
      'a body name differing from the URL',
      { method: 'PUT', url: '/tools/calculator', headers: json, payload: JSON.stringify({ ...seed('calculator'), name: 'other' }) },
      400,
      'name',
    ],
    // Objects and lists are config values the reference agent passes on (issue 15); a group that is not a list it refuses.
    [
      'a group that is not a list',
      { method: 'POST', url: '/tools/register', headers: json, payload: JSON.stringify({ ...seed('tell-joke'), group: 'fun' }) },
      400,
      'group',
    ],
    [
      'the wrong content type',
      {
        method: 'POST',
        url: '/tools/register',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'name=calculator',
      },
      415,
      null,
    ],
    [
      'text/plain',
      { method: 'POST', url: '/tools/register', headers: { 'content-type': 'text/plain' }, payload: JSON.stringify(seed('calculator')) },
      415,
      null,
    ],
    [
      'an oversized body',
      {
        method: 'POST',
        url: '/tools/register',
        headers: json,
        payload: JSON.stringify({ ...seed('calculator'), description: 'x'.repeat(70 * 1024) }),
      },
      413,
      null,
    ],
    [
      'an invalid import bundle (second tool bad)',
      {
        method: 'POST',
        url: '/import',
        headers: json,
        payload: JSON.stringify({ tools: [{ ...seed('file_reader') }, { ...seed('calculator'), name: 'bad name' }] }),
      },
      400,
      'tools.1.name',
    ],
  ];

  it.each(cases)('refuses %s with the problem shape and changes nothing', async (_name, request, status, path) => {
    const res = await t.app.inject({ ...request, headers: { ...admin, ...request.headers } });
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json();
    expect(body).toMatchObject({
      status,
      type: expect.stringMatching(/^urn:tool-registry:error:/),
      title: expect.any(String),
      detail: expect.any(String),
    });
    expect(res.body).not.toMatch(/at .*\.(ts|js):\d+/);
    expect(body).not.toHaveProperty('stack');
    if (path !== null) expect(body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(dump(t.dir)).toBe(before);
  });

  it('answers an unknown route with 404 in the same shape', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/no/such/route' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ status: 404, code: 'TR_ERR_ROUTE_NOT_FOUND' });
  });

  it('answers an unknown tool with 404', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/tools/nothing-here', headers: admin });
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('TR_ERR_NOT_FOUND');
    expect(dump(t.dir)).toBe(before);
  });

  it('is still serving afterwards', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.json().tools.map((x: { name: string }) => x.name)).toEqual(['calculator', 'tell-joke']);
  });
});
