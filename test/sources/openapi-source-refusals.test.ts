/**
 * Issue 30, "Bad documents (unresolvable or cyclic `$ref`s, duplicate operation ids, non-JSON
 * bodies only, 10 MB of paths) get 400s naming the pointer, with nothing written": each through
 * PUT /openapi-sources/{id}, then the source and any of its tools looked for, and the registry
 * index unchanged. Also a token-exchange source: the API gets a token the authorization server
 * issued in exchange for the caller's (RFC 8693), never the caller's token itself.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startTokenExchangeServer, type TokenExchangeServer } from '../helpers/token-exchange.js';

const doc = (paths: Record<string, unknown>, components: Record<string, unknown> = {}) => ({
  openapi: '3.0.3',
  info: { title: 'Bad', version: '1' },
  servers: [{ url: 'https://api.example.com' }],
  paths,
  components,
});
const ok = { '200': { description: 'ok' } };
const jsonBody = (schema: unknown) => ({ content: { 'application/json': { schema } } });

describe('OpenAPI sources: bad documents (issue 30)', () => {
  let t: TestApp;
  let admin: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
  });
  afterAll(() => t.close());

  const cases: [string, unknown, string, RegExp][] = [
    [
      'an unresolvable $ref',
      doc({ '/a': { get: { responses: { '200': { $ref: '#/components/responses/Nowhere' } } } } }),
      '/paths/~1a/get/responses/200',
      /does not resolve/,
    ],
    [
      'a cyclic $ref',
      doc(
        { '/tree': { post: { operationId: 'plant', requestBody: jsonBody({ $ref: '#/components/schemas/Node' }), responses: ok } } },
        { schemas: { Node: { type: 'object', properties: { child: { $ref: '#/components/schemas/Node' } } } } },
      ),
      '/paths/~1tree/post/requestBody/content/application~1json/schema/properties/child',
      /circular \$ref #\/components\/schemas\/Node/,
    ],
    [
      'duplicate operation ids',
      doc({ '/a': { get: { operationId: 'same', responses: ok } }, '/b': { get: { operationId: 'same', responses: ok } } }),
      '/paths/~1b/get',
      /duplicate operationId same/,
    ],
    [
      'non-JSON bodies only',
      doc({
        '/upload': {
          post: { operationId: 'upload', requestBody: { content: { 'application/xml': { schema: { type: 'string' } } } }, responses: ok },
        },
      }),
      '/paths/~1upload/post',
      /no usable operation: only non-JSON request bodies/,
    ],
  ];

  for (const [what, document, pointer, message] of cases) {
    it(`refuses ${what} with a 400 naming ${pointer}, and writes nothing`, async () => {
      const index = t.app.catalog.index;
      const res = await t.app.inject({ method: 'PUT', url: '/openapi-sources/bad', headers: admin, payload: { prefix: 'bad_', document } });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json()).toMatchObject({ code: 'TR_ERR_VALIDATION', errors: [{ path: pointer, message: expect.stringMatching(message) }] });
      expect((await t.app.inject({ method: 'GET', url: '/openapi-sources/bad', headers: admin })).statusCode).toBe(404);
      expect(t.app.catalog.tools().filter((tool) => tool.tool.name.startsWith('bad_'))).toEqual([]);
      expect(t.app.catalog.index).toBe(index);
    });
  }

  it('refuses 10 MB of paths, inline or at a documentUrl, with a 400 naming the field', async () => {
    const paths: Record<string, unknown> = {};
    const description = 'x'.repeat(4000);
    for (let i = 0, size = 0; size < 10_000_000; i++) {
      paths[`/p${i}`] = { get: { operationId: `p${i}`, description, responses: ok } };
      size += description.length + 80;
    }
    const text = JSON.stringify(doc(paths));
    expect(text.length).toBeGreaterThan(10_000_000);
    const res = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/huge',
      headers: admin,
      payload: { prefix: 'huge_', document: text },
    });
    expect(res.statusCode, res.body.slice(0, 500)).toBe(400);
    expect(res.json().errors).toEqual([{ path: 'document', message: expect.stringContaining('OPENAPI_MAX_DOCUMENT_BYTES') }]);
    const server = createServer((_q, s) => s.writeHead(200, { 'content-type': 'application/json' }).end(text));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`;
      const byUrl = await t.app.inject({
        method: 'PUT',
        url: '/openapi-sources/huge',
        headers: admin,
        payload: { prefix: 'huge_', documentUrl: url },
      });
      expect(byUrl.statusCode).toBe(400);
      expect(byUrl.json().errors).toEqual([{ path: 'documentUrl', message: expect.stringContaining('OPENAPI_MAX_DOCUMENT_BYTES') }]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
    expect((await t.app.inject({ method: 'GET', url: '/openapi-sources/huge', headers: admin })).statusCode).toBe(404);
  });

  it('refuses more operations than a document may declare before validating it, naming /paths', async () => {
    const paths: Record<string, unknown> = {};
    for (let i = 0; i < 20_001; i++) paths[`/p${i}`] = { get: { responses: ok } };
    const res = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/many',
      headers: admin,
      payload: { prefix: 'many_', document: doc(paths) },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: '/paths', message: expect.stringContaining('20001 operations') }]);
  });

  it('refuses a credential the document cannot complete, naming credential', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/nokey',
      headers: admin,
      payload: { prefix: 'nokey_', document: doc({ '/a': { get: { operationId: 'a', responses: ok } } }), credential: { apiKey: 'k' } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ path: 'credential', message: expect.stringContaining('no apiKey security scheme') }]);
  });
});

describe('OpenAPI sources: token exchange (issue 30)', () => {
  let t: TestApp;
  let as: TokenExchangeServer;
  let api: Server;
  const seen: IncomingHttpHeaders[] = [];
  const digest = (token: string) => createHash('sha256').update(token).digest('hex').slice(0, 16);

  beforeAll(async () => {
    as = await startTokenExchangeServer({ clientId: 'registry', clientSecret: 'te-secret' }, digest);
    api = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"balance": 12}');
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const document = {
      openapi: '3.1.0',
      info: { title: 'Billing', version: '1' },
      servers: [{ url: `http://127.0.0.1:${(api.address() as AddressInfo).port}` }],
      paths: { '/balance': { get: { operationId: 'balance', responses: ok } } },
    };
    const credential = {
      tokenExchange: { tokenUrl: as.tokenUrl, clientId: 'registry', clientSecret: 'te-secret', audience: 'billing-api' },
    };
    const res = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/billing',
      headers: bearer(t.token(['registry:write'])),
      payload: { prefix: 'bill_', document, credential },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().credential).toEqual({
      kind: 'tokenExchange',
      tokenUrl: as.tokenUrl,
      clientId: 'registry',
      audience: 'billing-api',
      set: true,
    });
  });
  afterAll(async () => {
    await t?.close();
    await as?.close();
    await new Promise<void>((r) => api.close(() => r()));
  });

  it("sends the API a token issued for it in exchange for each caller's, never the caller's own", async () => {
    const alice = t.token([], { sub: 'alice' });
    const bob = t.token([], { sub: 'bob' });
    for (const caller of [alice, bob, alice]) {
      const res = await t.app.inject({ method: 'POST', url: '/tools/bill_balance/invoke', headers: bearer(caller), payload: {} });
      expect(res.statusCode, res.body).toBe(200);
    }
    expect(seen.map((h) => h.authorization)).toEqual([
      `Bearer exchanged-1-for-${digest(alice)}`,
      `Bearer exchanged-2-for-${digest(bob)}`,
      `Bearer exchanged-1-for-${digest(alice)}`,
    ]);
    expect(as.received.map((r) => r.params.subject_token)).toEqual([alice, bob]);
    expect(as.received[0]).toMatchObject({ clientId: 'registry', params: { audience: 'billing-api' } });
    for (const headers of seen) for (const caller of [alice, bob]) expect(JSON.stringify(headers)).not.toContain(caller);
  });

  it('refuses an anonymous call before anything reaches the token endpoint or the API', async () => {
    const before = { api: seen.length, exchanges: as.received.length };
    const res = await t.app.inject({ method: 'POST', url: '/tools/bill_balance/invoke', payload: {} });
    expect(res.statusCode).toBe(401);
    expect({ api: seen.length, exchanges: as.received.length }).toEqual(before);
  });
});
