/**
 * Issue 9, "What must be shown", for the two routes that hold a connection: `GET /changes`
 * (a stream that never ends, so it is opened on a real socket, port 0, and dropped once its
 * head arrives) and `POST /tools/{name}/invoke` (arbitrary names, arguments, Accept headers and
 * callers; 2xx, 4xx or the documented gateway errors 502/503/504, and the catalogue unchanged).
 */
import { request, createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callerHeaders,
  callerKind,
  expectCleanAnswer,
  fuzzParams,
  GATEWAY_STATUSES,
  pathName,
  queryString,
  queryValue,
  seededApp,
  state,
  type FuzzApp,
} from './fuzz-support.js';

let t: FuzzApp;
let base: string;
let echo: Server;

beforeAll(async () => {
  // The tool the calls reach: echoes the arguments, or answers badly when asked to.
  echo = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      if (body.includes('"fail"')) res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}');
      else if (body.includes('"redirect"')) res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      else if (body.includes('"garbage"')) res.writeHead(200, { 'content-type': 'application/json' }).end('{not json');
      else res.writeHead(200, { 'content-type': 'application/json' }).end(body === '' ? '{}' : body);
    });
  });
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  const port = (echo.address() as AddressInfo).port;

  t = await seededApp({ TOOL_CALL_TIMEOUT_MS: '500' });
  const tools = [
    {
      name: 'echo',
      endpoint: '/echo',
      host: '127.0.0.1',
      port,
      description: 'echoes',
      parameters: { text: { type: 'string', required: false } },
    },
    { name: 'echo_scoped', endpoint: '/echo', host: '127.0.0.1', port, description: 'echoes', scopes: ['calculator:use'] },
    // Nothing listens there: connection refused, a 502.
    { name: 'nowhere', endpoint: '/x', host: '127.0.0.1', port: 1, description: 'unreachable' },
  ];
  for (const payload of tools) {
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: t.admin, payload });
    if (res.statusCode >= 300) throw new Error(`registering ${payload.name}: ${res.statusCode} ${res.body}`);
  }
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await t.close();
  await new Promise<void>((resolve) => echo.close(() => resolve()));
});

interface Head {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** Opens `GET url`; a 200 event stream is dropped once its head arrives, anything else read whole. */
function openStream(path: string, headers: Record<string, string>): Promise<Head> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers, agent: false }, (res) => {
      const head = { statusCode: res.statusCode ?? 0, headers: res.headers as Record<string, unknown> };
      if (res.statusCode === 200) {
        resolve({ ...head, body: '' });
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ ...head, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.setTimeout(3000, () => req.destroy(new Error(`GET ${path}: no answer head in 3 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** Header values a client can put on the wire (Node refuses the rest before sending). */
const headerValue = fc.oneof(queryValue, fc.string({ maxLength: 30 })).map((v) => v.replace(/[^\t\x20-\x7e\x80-\xff]/g, ''));

describe('fuzz: change streams and calls', () => {
  it('GET /changes answers any since / Last-Event-ID with an event stream or a clean 4xx', async () => {
    const before = await state(t);
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(
        queryString(['since']),
        fc.option(headerValue, { nil: undefined }),
        callerKind,
        async (query, lastEventId, caller) => {
          const headers = { ...callerHeaders(t, caller), ...(lastEventId !== undefined && { 'last-event-id': lastEventId }) };
          const res = await openStream(`/changes?${query}`, headers);
          seen.add(res.statusCode);
          expectCleanAnswer(res);
          if (res.statusCode === 200) expect(String(res.headers['content-type'])).toContain('text/event-stream');
        },
      ),
      fuzzParams(150),
    );
    // The generators reach both sides of the route.
    expect([...seen]).toEqual(expect.arrayContaining([200, 400]));
    expect(await state(t)).toEqual(before);
  });

  it('POST /tools/{name}/invoke answers any name, arguments, Accept and caller with 2xx, a clean 4xx or 502/503/504, and changes nothing', async () => {
    const name = fc.oneof(
      { arbitrary: fc.constantFrom('echo', 'echo_scoped', 'nowhere', 'tell-joke', 'calculator', 'weather_forecast'), weight: 3 },
      { arbitrary: pathName, weight: 1 },
    );
    const args = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }).map((v) => JSON.stringify(v)),
      fc.constantFrom(
        '{"text":"fail"}',
        '{"text":"redirect"}',
        '{"text":"garbage"}',
        '{"__proto__":{"x":1}}',
        '',
        '{',
        '[]',
        'null',
        '"text"',
      ),
      // Arguments that fit tell-joke's schema, so that some calls get past it to the missing bus (issue 12).
      { arbitrary: fc.constant('{"topic":"cats"}'), weight: 2 },
    );
    const accept = fc.constantFrom(
      undefined,
      'application/json',
      'text/event-stream',
      'text/event-stream, application/json',
      '*/*',
      'text/html',
    );
    const contentType = fc.constantFrom('application/json', 'application/json', 'text/plain', undefined);
    const before = await state(t);
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(name, args, accept, contentType, callerKind, async (tool, payload, acc, ct, caller) => {
        const headers = {
          ...callerHeaders(t, caller),
          ...(acc !== undefined && { accept: acc }),
          ...(ct !== undefined && payload !== '' && { 'content-type': ct }),
        };
        const res = await t.app.inject({ method: 'POST', url: `/tools/${tool}/invoke`, headers, ...(payload !== '' && { payload }) });
        seen.add(res.statusCode);
        expectCleanAnswer(res, GATEWAY_STATUSES);
        if (res.statusCode === 200 && String(res.headers['content-type']).includes('text/event-stream')) {
          // A stream that failed after it started ends with an `error` event in the problem shape.
          for (const match of res.body.matchAll(/^event: error\ndata: (.*)$/gm)) {
            const problem = JSON.parse(match[1] ?? '') as Record<string, unknown>;
            expect(problem).toMatchObject({
              type: expect.any(String),
              title: expect.any(String),
              status: expect.any(Number),
              detail: expect.any(String),
              code: expect.any(String),
            });
            expect([502, 503, 504, 413]).toContain(problem['status']);
          }
        }
      }),
      fuzzParams(200),
    );
    // Calls that complete, fail at the tool, find no bus, and are refused were all made.
    expect([...seen]).toEqual(expect.arrayContaining([200, 400, 401, 404, 502, 503]));
    expect(await state(t)).toEqual(before);
  });
});
