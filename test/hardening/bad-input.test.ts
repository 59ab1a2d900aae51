/**
 * Bad input gets a 4xx in the one problem+json shape, no stack trace, and changes nothing.
 *
 * First, malformed and out-of-range bodies through app.inject, the database checked by dumping
 * the SQLite file itself before and after. Then issue 9, "every bad input gets a clean 4xx and
 * changes nothing", through the real HTTP server (listening on 127.0.0.1 port 0): names that are
 * also Object.prototype members, deep nesting, duplicate JSON keys, two Authorization headers,
 * control characters, errors Fastify and Node answer before any route, and readiness on a full
 * database. Every refused write leaves GET /export as it was.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { openedDatabases } from '../helpers/opened-databases.js';
import { seed } from '../helpers/fixtures.js';

// The app's own connections, so that a test can give one a tiny max_page_count (a full disk).
vi.mock('../../src/store/database.js', async (original) =>
  (await import('../helpers/opened-databases.js')).recordingDatabaseModule(original),
);

const PROTO_NAMES = ['constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'] as const;

let t: TestApp;
let base: string;
let admin: Record<string, string>;

async function listen(): Promise<void> {
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
}

async function send(method: string, path: string, body?: string | object, headers: Record<string, string> = admin): Promise<Response> {
  return fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

async function exported(): Promise<string> {
  const res = await send('GET', '/export');
  expect(res.status).toBe(200);
  return res.text();
}

/** A problem+json answer with this status; its body. */
async function problemOf(res: Response, status: number): Promise<{ code: string; detail: string; errors?: { path: string }[] }> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  return (await res.json()) as { code: string; detail: string; errors?: { path: string }[] };
}

/** Sends raw bytes on a fresh connection and returns everything the server answers. */
function raw(request: string): Promise<string> {
  const { port } = t.app.server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
  });
}

function rawProblem(answer: string, status: number): { code: string } {
  const [head = '', body = ''] = answer.split('\r\n\r\n');
  expect(head).toMatch(new RegExp(`^HTTP/1.1 ${status} `));
  expect(head.toLowerCase()).toContain('content-type: application/problem+json');
  return JSON.parse(body) as { code: string };
}

/** `{"a":{"a":...1}}` as JSON text (JSON.stringify itself overflows the stack past a few thousand levels). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** The calculator with a parameter whose default nests `depth` levels deep. */
function deepTool(name: string, depth: number): string {
  return JSON.stringify({ ...seed('calculator'), name, parameters: { x: { type: 'object', default: 0 } } }).replace(
    '"default":0',
    `"default":${nested(depth)}`,
  );
}

beforeAll(async () => {
  t = await createTestApp();
  admin = bearer(t.token(['registry:write']));
  await listen();
  expect((await send('PUT', '/tool-services/joke-service', seed('joke-service'))).status).toBe(201);
});
afterAll(() => t.close());

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

describe('issue 9: names that are also Object.prototype members', () => {
  it('stores, lists, counts and survives a restart with them as tool names, scopes, parameter and argument names', async () => {
    for (const name of PROTO_NAMES) {
      const res = await send('POST', '/tools/register', {
        name,
        endpoint: `/tools/${name}`,
        description: `the ${name} tool`,
        scopes: [name, 'shared'],
        parameters: { [name]: { type: 'string', description: 'x' }, toString: { type: 'number' } },
      });
      expect(res.status).toBe(201);
    }
    const bus = await send('PUT', '/tool-services/constructor', { id: 'constructor', topic: 'ctor', 'config-params': ['toString'] });
    expect(bus.status).toBe(201);
    const tool = await send('POST', '/tools/register', {
      type: 'tool-service',
      name: 'bus-ctor',
      description: 'bus',
      service: 'constructor',
      toString: 'x',
      arguments: [
        { name: 'constructor', type: 'string', description: 'c' },
        { name: 'hasOwnProperty', type: 'string', description: 'h' },
      ],
    });
    expect(tool.status).toBe(201);

    const check = async () => {
      const stats = (await (await send('GET', '/stats')).json()) as { scope_usage: Record<string, unknown>; unique_scopes: number };
      for (const name of PROTO_NAMES) expect(stats.scope_usage[name]).toBe(1);
      expect(stats.scope_usage['shared']).toBe(PROTO_NAMES.length);
      expect(stats.unique_scopes).toBe(PROTO_NAMES.length + 1);
      const reader = bearer(t.token([...PROTO_NAMES]));
      const one = (await (await send('GET', '/tools/constructor', undefined, reader)).json()) as { parameters: Record<string, unknown> };
      expect(Object.keys(one.parameters).sort()).toEqual(['constructor', 'toString']);
      const busTool = (await (await send('GET', '/tools/bus-ctor', undefined, reader)).json()) as { parameters: Record<string, unknown> };
      expect(Object.keys(busTool.parameters).sort()).toEqual(['constructor', 'hasOwnProperty']);
      const listed = (await (await send('GET', '/', undefined, bearer(t.token(['constructor'])))).json()) as { tools: { name: string }[] };
      expect(listed.tools.map((x) => x.name)).toContain('constructor');
    };
    await check();
    await t.restart();
    await listen();
    await check();
  });

  it('refuses __proto__ as a tool name, scope, parameter, argument, service id or config param, changing nothing', async () => {
    const before = await exported();
    const calc = seed('calculator');
    const bodies: [string, string][] = [
      ['/tools/register', JSON.stringify({ ...calc, name: '__proto__' })],
      ['/tools/register', JSON.stringify({ ...calc, scopes: ['__proto__'] })],
      ['/tools/register', '{"name":"p","endpoint":"/p","description":"d","parameters":{"__proto__":{"type":"string"}}}'],
      [
        '/tools/register',
        JSON.stringify({ ...seed('tell-joke'), name: 'p2', arguments: [{ name: '__proto__', type: 'string', description: 'd' }] }),
      ],
      ['/import', JSON.stringify({ 'tool-services': [{ id: '__proto__', topic: 'p' }] })],
      ['/import', JSON.stringify({ 'tool-services': [{ id: 'p3', topic: 'p', 'config-params': ['__proto__'] }] })],
      ['/tools/register', '{"name":"p4","endpoint":"/p","description":"d","constructor":{"prototype":{"x":1}}}'],
    ];
    for (const [path, body] of bodies) await problemOf(await send('POST', path, body), 400);
    expect(await exported()).toBe(before);
  });
});

describe('issue 9: deep nesting', () => {
  it('refuses a body nested deeper than JSON_MAX_DEPTH with a 400 naming the limit (was a 500 or a 409)', async () => {
    const before = await exported();
    for (const depth of [70, 1_200, 1_500, 100_000]) {
      const body = await problemOf(await send('POST', '/tools/register', deepTool(`deep${depth}`, depth)), 400);
      expect(body.detail).toContain('64');
      expect(body.errors?.[0]?.path).toMatch(/^parameters\.x\.default\.a\.a/);
    }
    const imported = await problemOf(await send('POST', '/import', `{"tools":[${deepTool('deep-import', 2_000)}]}`), 400);
    expect(imported.detail).toContain('64');
    expect(await exported()).toBe(before);
  });

  it('still takes nesting within the limit', async () => {
    const res = await send('POST', '/tools/register', deepTool('nested-ok', 55));
    expect(res.status).toBe(201);
  });
});

describe('issue 9: duplicate JSON keys', () => {
  it('refuses a key given twice with a 400 naming its path (was: the last one won)', async () => {
    const before = await exported();
    const calc = JSON.stringify({ ...seed('calculator'), name: 'dup' }).slice(1, -1);
    const cases: [string, string, string][] = [
      ['/tools/register', `{"scopes":["a"],${calc.replace(/"scopes":\[[^\]]*\],/, '')},"scopes":[]}`, 'scopes'],
      ['/tools/register', `{"sc\\u006fpes":["a"],${calc}}`, 'scopes'],
      ['/tools/register', `{${calc.replace('"parameters":{', '"parameters":{"expression":{"type":"number"},')}}`, 'parameters.expression'],
      ['/import', `{"tools":[{"name":"ok","endpoint":"/ok","description":"d"},{${calc},"name":"dup2"}]}`, 'tools.1.name'],
      ['/tool-services/joke-service', '{"id":"joke-service","topic":"a","topic":"b"}', 'topic'],
    ];
    for (const [path, body, keyPath] of cases) {
      const problem = await problemOf(await send(path.startsWith('/tool-services') ? 'PUT' : 'POST', path, body), 400);
      expect(problem.errors?.map((e) => e.path)).toEqual([keyPath]);
      expect(problem.detail).toContain(keyPath);
    }
    expect(await exported()).toBe(before);
  });

  it('takes equal keys in different objects', async () => {
    const res = await send('POST', '/tools/register', {
      ...seed('calculator'),
      name: 'same-keys',
      parameters: { a: { type: 'string', description: 'x' }, b: { type: 'string', description: 'x' } },
    });
    expect(res.status).toBe(201);
  });
});

describe('issue 9: two Authorization headers', () => {
  it('answers 400 invalid_request with a challenge, and a write with them changes nothing', async () => {
    const before = await exported();
    const token = t.token(['registry:write']);
    const body = JSON.stringify({ ...seed('calculator'), name: 'two-headers' });
    for (const [method, path, payload] of [
      ['GET', '/', ''],
      ['POST', '/tools/register', body],
    ] as const) {
      const answer = await raw(
        `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nauthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`,
      );
      expect(rawProblem(answer, 400).code).toBe('TR_ERR_INVALID_REQUEST');
      expect(answer).toMatch(/www-authenticate: Bearer realm="tool-registry".*error="invalid_request"/i);
    }
    expect(await exported()).toBe(before);
  });
});

describe('issue 9: control characters', () => {
  it('refuses C0 (but newline and tab in descriptions), DEL and C1 in text fields, changing nothing', async () => {
    const before = await exported();
    const calc = seed('calculator');
    for (const bad of ['\u001b[2J', 'a\u0000b', 'a\rb', 'a\u007fb', 'a\u009b31m']) {
      await problemOf(await send('POST', '/tools/register', { ...calc, name: 'ctl', description: bad }), 400);
      await problemOf(await send('POST', '/tools/register', { ...calc, name: 'ctl', returns: bad }), 400);
      await problemOf(await send('POST', '/tools/register', { ...seed('tell-joke'), name: 'ctl', style: bad }), 400);
      await problemOf(
        await send('POST', '/tools/register', {
          ...seed('tell-joke'),
          name: 'ctl',
          arguments: [{ name: 'a', type: 'string', description: bad }],
        }),
        400,
      );
    }
    await problemOf(await send('POST', '/tools/register', { ...calc, name: 'ctl\u001b' }), 400);
    expect(await exported()).toBe(before);
    expect((await send('POST', '/tools/register', { ...calc, name: 'multi-line', description: 'line one\n\tline two' })).status).toBe(201);
  });

  it('escapes control characters in what the CLI prints', async () => {
    const evil = {
      name: 'x\u001b[31m',
      type: 'http',
      scopes: ['s\u009b2J'],
      description: 'd\u001b]0;title\u0007 \u202e',
      'request-queue': 'q\u001b',
    };
    const fake: Server = createServer((req, res) => {
      const body =
        req.url === '/export' ? { tools: [evil], 'tool-services': [{ id: 'i\u001bd', 'request-queue': 'q\u0085' }] } : { descriptor: evil };
      res.writeHead(req.url?.startsWith('/tools/bad') ? 400 : 200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(req.url?.startsWith('/tools/bad') ? { detail: 'no\u001b[2J', errors: [{ path: 'p\u009b', message: 'm' }] } : body),
      );
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
    let out = '';
    let err = '';
    const io = {
      stdout: (s: string) => void (out += s),
      stderr: (s: string) => void (err += s),
      env: { REGISTRY_TOKEN: 'x' },
      readStdin: () => Promise.resolve(undefined),
    };
    try {
      await main(['get', 'tool/x', '--url', url], io);
      await main(['list', 'tools', '--url', url], io);
      await main(['list', 'tool-services', '--url', url], io);
      await main(['get', 'tool/bad', '--url', url], io);
    } finally {
      await new Promise((resolve) => fake.close(resolve));
    }
    // eslint-disable-next-line no-control-regex
    const unsafe = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u202A-\u202E]/;
    expect(out).not.toMatch(unsafe);
    expect(err).not.toMatch(unsafe);
    expect(out).toContain('x\\u001b[31m');
    expect(err).toContain('no\\u001b[2J');
  });
});

describe('issue 9: errors answered before any route are problem+json', () => {
  it('a too long path parameter: 414', async () => {
    expect((await problemOf(await send('GET', `/tools/${'a'.repeat(300)}`), 414)).code).toBe('TR_ERR_URI_TOO_LONG');
  });

  it('a malformed URL: 400', async () => {
    expect((await problemOf(await send('GET', '/tools/%E0%A4%A'), 400)).code).toBe('TR_ERR_BAD_REQUEST');
  });

  it('a header block over MAX_HEADER_SIZE: 431', async () => {
    const answer = await raw(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expect(rawProblem(answer, 431).code).toBe('TR_ERR_HEADERS_TOO_LARGE');
  });

  it('an invalid method and a bad Content-Length: 400', async () => {
    expect(rawProblem(await raw('G@T / HTTP/1.1\r\nHost: x\r\n\r\n'), 400).code).toBe('TR_ERR_BAD_REQUEST');
    expect(rawProblem(await raw('POST /tools/register HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n'), 400).code).toBe(
      'TR_ERR_BAD_REQUEST',
    );
  });

  it('an empty JSON body and invalid JSON: 400, the media type check and body limit unchanged', async () => {
    expect((await problemOf(await send('POST', '/tools/register', ''), 400)).code).toBe('TR_ERR_INVALID_JSON');
    expect((await problemOf(await send('POST', '/tools/register', '{"a":'), 400)).code).toBe('TR_ERR_INVALID_JSON');
    const res = await fetch(`${base}/tools/register`, { method: 'POST', headers: { ...admin, 'content-type': 'text/plain' }, body: '{}' });
    await problemOf(res, 415);
    await problemOf(await send('POST', '/tools/register', { ...seed('calculator'), description: 'x'.repeat(2 * 1024 * 1024) }), 413);
  });
});

describe('errors Node answered without a body: problem+json, with the headers of every answer', () => {
  const headersOf = (answer: string) => (answer.split('\r\n\r\n')[0] ?? '').toLowerCase();

  it('a header block over MAX_HEADER_SIZE carries the charset, nosniff and a request id', async () => {
    const head = headersOf(await raw(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`));
    expect(head).toContain('content-type: application/problem+json; charset=utf-8');
    expect(head).toContain('x-content-type-options: nosniff');
    expect(head).toMatch(/x-request-id: [0-9a-f-]{36}/);
  });

  it('an HTTP/1.1 request without Host: 400, while HTTP/1.0 needs none', async () => {
    const answer = await raw('GET / HTTP/1.1\r\n\r\n');
    expect(rawProblem(answer, 400).code).toBe('TR_ERR_BAD_REQUEST');
    expect(answer).toContain('Host header');
    expect(headersOf(answer)).toContain('x-content-type-options: nosniff');
    expect(await raw('GET /healthz HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1.1 200 /);
  });

  it('an Expect other than 100-continue: 417', async () => {
    const answer = await raw('GET / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n');
    expect(rawProblem(answer, 417).code).toBe('TR_ERR_EXPECTATION_FAILED');
    expect(headersOf(answer)).toContain('content-type: application/problem+json; charset=utf-8');
  });

  it('a query string whose escapes do not decode: 400, as the same bytes in the path are', async () => {
    for (const path of ['/?q=%E0%A4%A', '/?q=%ZZ', '/stats?x=100%', '/tools/calculator?a=%C3']) {
      expect((await problemOf(await send('GET', path), 400)).detail).toContain('percent-encoded');
    }
    expect((await send('GET', '/?q=%E2%82%AC+100%25')).status).toBe(200);
  });

  it('a method a known path does not take: 405 with Allow; an unknown path stays 404', async () => {
    const patch = await send('PATCH', '/import', {});
    expect((await problemOf(patch, 405)).code).toBe('TR_ERR_METHOD_NOT_ALLOWED');
    expect(patch.headers.get('allow')).toBe('POST');
    // GET, PUT and DELETE of /tools/{name} take the name "register" too.
    expect((await send('PATCH', '/tools/register', {})).headers.get('allow')).toBe('DELETE, GET, HEAD, POST, PUT');
    const tool = await send('PATCH', '/tools/any-name-at-all');
    await problemOf(tool, 405);
    expect(tool.headers.get('allow')).toBe('DELETE, GET, HEAD, PUT');
    expect((await send('DELETE', '/')).headers.get('allow')).toBe('GET, HEAD');
    // /mcp serves no HEAD, so it is not offered.
    const head = await fetch(`${base}/mcp`, { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('allow')).toBe('DELETE, GET, OPTIONS, POST');
    expect((await problemOf(await send('PATCH', '/no/such/path'), 404)).code).toBe('TR_ERR_ROUTE_NOT_FOUND');
    const long = await problemOf(await send('GET', `/x${'/abc'.repeat(2_000)}`), 404);
    expect(long.detail.length).toBeLessThan(300);
  });

  it('a body over the limit names the limit and its setting; a repeated query parameter says so', async () => {
    const big = await problemOf(
      await send('POST', '/tools/register', { ...seed('calculator'), description: 'x'.repeat(2 * 1024 * 1024) }),
      413,
    );
    expect(big.detail).toMatch(/\d+ bytes .*BODY_LIMIT/);
    const twice = await problemOf(await send('GET', '/?limit=1&limit=2'), 400);
    expect(twice.errors).toEqual([{ path: 'limit', message: 'is given 2 times; give it once' }]);
    // An enum's "expected one of" hid it too.
    const formats = await problemOf(await send('GET', '/?format=openai&format=mcp&format=openai'), 400);
    expect(formats.errors).toEqual([{ path: 'format', message: 'is given 3 times; give it once' }]);
  });

  it('a JSON body in another charset than UTF-8: 415, changing nothing', async () => {
    const before = await exported();
    for (const path of ['/tools/register', '/import']) {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json; charset=latin1' },
        body: JSON.stringify({ ...seed('calculator'), name: 'latin' }),
      });
      expect((await problemOf(res, 415)).detail).toContain('charset=latin1');
    }
    expect(await exported()).toBe(before);
    const utf8 = await fetch(`${base}/tools/register`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json; charset="UTF-8"' },
      body: JSON.stringify({ ...seed('calculator'), name: 'utf8-declared' }),
    });
    expect(utf8.status).toBe(201);
  });
});

describe('issue 9: /readyz on a full database', () => {
  it('reports the database not ready when it has no room for a write, and the refused write changes nothing', async () => {
    // Past the 1 s shared probe result of earlier tests.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await send('GET', '/readyz')).status).toBe(200);
    const before = await exported();
    const db = openedDatabases.at(-1);
    if (!db) throw new Error('no database opened');
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const tools = Array.from({ length: 50 }, (_, i) => ({ ...seed('calculator'), name: `no-room-${i}`, description: 'x'.repeat(8_000) }));
    await problemOf(await send('POST', '/import', { tools }), 503);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await problemOf(await send('GET', '/readyz'), 503)).code).toBe('TR_ERR_UNAVAILABLE');
    expect(await exported()).toBe(before);
    db.pragma('max_page_count = 1073741823');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await send('GET', '/readyz')).status).toBe(200);
  });

  it('takes the room it wants from READY_MIN_FREE_BYTES', async () => {
    // More room than any disk here has: never ready; none at all: ready.
    for (const [bytes, status] of [
      [String(2 ** 50), 503],
      ['0', 200],
    ] as const) {
      const wanting = await createTestApp({ READY_MIN_FREE_BYTES: bytes }, { keepLogs: true });
      try {
        const res = await wanting.app.inject({ method: 'GET', url: '/readyz' });
        expect(res.statusCode, res.body).toBe(status);
        // The operator's log says why; the unauthenticated answer does not.
        if (status === 503) expect(wanting.logs.join('')).toContain('READY_MIN_FREE_BYTES');
      } finally {
        await wanting.close();
      }
    }
  });
});
