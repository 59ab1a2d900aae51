/**
 * Issue 30, "OpenAPI sources": the Petstore document (../shared/fixtures/openapi, copied into
 * test/fixtures/openapi) registered with PUT /openapi-sources/{id} against a real HTTPS server on
 * loopback that implements some of its operations, whose certificate a throwaway CA signed (given
 * to the registry with OUTBOUND_CA_FILE). Tools follow each operation's security (`write:pets`
 * and `read:pets`, or `api_key`); tokens see different tools in GET / and /mcp; calls through
 * invoke, /mcp and /ag-ui reach the right method and path with their arguments; the source's API
 * key, or a client-credentials token from a real authorization server (oidc-provider), reaches
 * the API, and the caller's token never does.
 */
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { throwawayCa, type ThrowawayCa } from '../helpers/throwaway-ca.js';
import { connect, listAll, mcpUrl } from '../mcp/support.js';

const PETSTORE = readFileSync(new URL('../fixtures/openapi/petstore-3.0.yaml', import.meta.url), 'utf8');

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('OpenAPI sources: the Petstore over HTTPS (issue 30)', () => {
  let ca: ThrowawayCa;
  let api: Server;
  let base: string;
  let as: AuthorizationServer;
  let t: TestApp;
  let admin: Record<string, string>;
  const seen: Seen[] = [];
  /** Every token a caller sent the registry in this file: none may reach the API. */
  const callerTokens: string[] = [];
  const token = (scopes: string[]) => {
    const minted = t.token(scopes);
    callerTokens.push(minted);
    return minted;
  };

  beforeAll(async () => {
    ca = throwawayCa();
    api = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const url = new URL(req.url ?? '/', 'https://x');
        const json = (value: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
        const pet = /^\/api\/v3\/pet\/(\d+)$/.exec(url.pathname);
        if (req.method === 'GET' && pet) return json({ id: Number(pet[1]), name: 'doggie', photoUrls: [], status: 'available' });
        if (req.method === 'POST' && pet)
          return json({ id: Number(pet[1]), name: url.searchParams.get('name'), status: url.searchParams.get('status') });
        if (req.method === 'DELETE' && pet) return res.writeHead(200, { 'content-type': 'text/plain' }).end(`pet ${pet[1]} deleted`);
        if (req.method === 'GET' && url.pathname === '/api/v3/pet/findByStatus')
          return json([{ id: 1, name: 'rex', photoUrls: [], status: url.searchParams.get('status') }]);
        if (req.method === 'POST' && url.pathname === '/api/v3/pet') return json(JSON.parse(body) as unknown);
        if (req.method === 'GET' && url.pathname === '/api/v3/store/inventory') return json({ available: 3, sold: 1 });
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    base = `https://localhost:${(api.address() as AddressInfo).port}/api/v3`;
    as = await startAuthorizationServer({ clients: [{ clientId: 'registry', scopes: ['pets'] }], accessTokenTTL: 300 });
    t = await createTestApp({ RATE_LIMIT_MAX: '0', OUTBOUND_CA_FILE: ca.caFile }, { keepLogs: true });
    admin = bearer(token(['registry:write']));
  });
  afterAll(async () => {
    await t?.close();
    await as?.close();
    await new Promise<void>((resolve) => api.close(() => resolve()));
    ca?.remove();
  });

  const put = (id: string, body: Record<string, unknown>) =>
    t.app.inject({ method: 'PUT', url: `/openapi-sources/${id}`, headers: admin, payload: body });
  const names = async (scopes: string[] | undefined) => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: scopes ? bearer(token(scopes)) : {} });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { tools: { name: string }[] }).tools.map((tool) => tool.name).filter((n) => n.startsWith('pet_'));
  };
  const lastRequest = () => seen.at(-1) as Seen;

  it('imports the document: one tool per operation, scopes from its security, the credential masked', async () => {
    const res = await put('petstore', { document: PETSTORE, prefix: 'pet_', baseUrl: base, credential: { apiKey: 'petstore-key-123' } });
    expect(res.statusCode, res.body).toBe(201);
    const record = res.json();
    expect(record).toMatchObject({
      id: 'petstore',
      title: 'Swagger Petstore - OpenAPI 3.0',
      credential: { kind: 'apiKey', in: 'header', name: 'api_key', set: true },
    });
    expect(JSON.stringify(record)).not.toContain('petstore-key-123');
    expect(record.tools).toEqual(expect.arrayContaining(['pet_addPet', 'pet_getPetById', 'pet_findPetsByStatus', 'pet_loginUser']));
    expect(record.tools).toHaveLength(19 - record.skipped.length);
    // uploadFile's body is application/octet-stream only.
    expect(record.skipped).toEqual([expect.objectContaining({ pointer: '/paths/~1pet~1{petId}~1uploadImage/post' })]);
    const tool = async (name: string) => (await t.app.inject({ method: 'GET', url: `/tools/${name}`, headers: admin })).json().descriptor;
    expect((await tool('pet_addPet')).scopes).toEqual(['read:pets write:pets']);
    expect((await tool('pet_getPetById')).scopes).toEqual(['api_key', 'read:pets write:pets']);
    expect((await tool('pet_loginUser')).scopes).toEqual([]);
    // The API key is the registry's to send: not an argument of deletePet.
    expect(Object.keys((await tool('pet_deletePet')).inputSchema.properties)).toEqual(['petId']);
    // GET shows the same, and the audit entry names the source only.
    const got = await t.app.inject({ method: 'GET', url: '/openapi-sources/petstore', headers: admin });
    expect(got.json()).toMatchObject({ id: 'petstore', credential: { kind: 'apiKey', set: true }, tools: record.tools });
    expect(t.logs.join('\n')).not.toContain('petstore-key-123');
  });

  it('shows each token the tools its scopes grant, in GET / and /mcp', async () => {
    const both = await names(['read:pets', 'write:pets']);
    expect(both).toEqual(expect.arrayContaining(['pet_addPet', 'pet_getPetById', 'pet_loginUser']));
    const apiKeyOnly = await names(['api_key']);
    expect(apiKeyOnly).toEqual(expect.arrayContaining(['pet_getPetById', 'pet_getInventory', 'pet_loginUser']));
    expect(apiKeyOnly).not.toContain('pet_addPet');
    // One of the two scopes alone grants no pet_* tool that needs both.
    const readOnly = await names(['read:pets']);
    expect(readOnly).not.toContain('pet_addPet');
    expect(readOnly).not.toContain('pet_getPetById');
    expect(readOnly).toContain('pet_loginUser');

    const url = await mcpUrl(t.app);
    const mcp = await connect(url, token(['api_key']));
    try {
      const listed = (await listAll(mcp.client)).tools.map((tool) => tool.name);
      expect(listed).toEqual(expect.arrayContaining(['pet_getPetById', 'pet_getInventory']));
      expect(listed).not.toContain('pet_addPet');
    } finally {
      await mcp.close();
    }
  });

  it('calls through invoke reach the method and path with path, query and body arguments, and the API key', async () => {
    const writer = bearer(token(['read:pets', 'write:pets']));
    const get = await t.app.inject({ method: 'POST', url: '/tools/pet_getPetById/invoke', headers: writer, payload: { petId: 7 } });
    expect(get.statusCode, get.body).toBe(200);
    expect(JSON.parse(get.json().result)).toMatchObject({ id: 7, name: 'doggie' });
    expect(lastRequest()).toMatchObject({ method: 'GET', url: '/api/v3/pet/7' });
    expect(lastRequest().headers['api_key']).toBe('petstore-key-123');
    expect(lastRequest().headers.authorization).toBeUndefined();

    const form = await t.app.inject({
      method: 'POST',
      url: '/tools/pet_updatePetWithForm/invoke',
      headers: writer,
      payload: { petId: 7, name: 'rex', status: 'sold' },
    });
    expect(form.statusCode, form.body).toBe(200);
    expect(lastRequest()).toMatchObject({ method: 'POST', url: '/api/v3/pet/7?name=rex&status=sold' });

    const add = await t.app.inject({
      method: 'POST',
      url: '/tools/pet_addPet/invoke',
      headers: writer,
      payload: { name: 'doggie', photoUrls: ['https://example.com/d.png'], status: 'available' },
    });
    expect(add.statusCode, add.body).toBe(200);
    expect(lastRequest()).toMatchObject({ method: 'POST', url: '/api/v3/pet' });
    expect(lastRequest().headers['content-type']).toBe('application/json');
    expect(JSON.parse(lastRequest().body)).toEqual({ name: 'doggie', photoUrls: ['https://example.com/d.png'], status: 'available' });

    // A token without the operation's scopes is refused before anything reaches the API.
    const before = seen.length;
    const refused = await t.app.inject({
      method: 'POST',
      url: '/tools/pet_addPet/invoke',
      headers: bearer(token(['read:pets'])),
      payload: {},
    });
    expect(refused.statusCode).toBe(403);
    expect(seen.length).toBe(before);
  });

  it('calls through /mcp and /ag-ui reach the API the same way', async () => {
    const url = await mcpUrl(t.app);
    const mcp = await connect(url, token(['read:pets', 'write:pets']));
    try {
      const result = await mcp.client.callTool({ name: 'pet_findPetsByStatus', arguments: { status: 'pending' } });
      expect(result.isError).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain('rex');
      expect(lastRequest()).toMatchObject({ method: 'GET', url: '/api/v3/pet/findByStatus?status=pending' });
      expect(lastRequest().headers['api_key']).toBe('petstore-key-123');
    } finally {
      await mcp.close();
    }
    const run = await t.app.inject({
      method: 'POST',
      url: '/ag-ui',
      headers: { ...bearer(token(['api_key'])), accept: 'text/event-stream' },
      payload: {
        threadId: 'thread-1',
        runId: 'run-1',
        messages: [
          { id: 'user-1', role: 'user', content: 'how many pets?' },
          {
            id: 'assistant-1',
            role: 'assistant',
            toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'pet_getInventory', arguments: '{}' } }],
          },
        ],
        tools: [],
        context: [],
      },
    });
    expect(run.statusCode, run.body).toBe(200);
    expect(run.body).toContain('TOOL_CALL_RESULT');
    expect(run.body).toContain('available');
    expect(lastRequest()).toMatchObject({ method: 'GET', url: '/api/v3/store/inventory' });
  });

  it('a client-credentials source sends a token of the authorization server, and the header argument the API key stays without an API key of its own', async () => {
    const res = await put('petstore-cc', {
      document: PETSTORE,
      prefix: 'cc_',
      baseUrl: base,
      filter: { operationIds: ['deletePet', 'getPetById'] },
      credential: {
        clientCredentials: { tokenUrl: as.tokenEndpoint, clientId: 'registry', clientSecret: 'registry-secret', scopes: ['pets'] },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().tools).toEqual(['cc_deletePet', 'cc_getPetById']);
    expect(JSON.stringify(res.json())).not.toContain('registry-secret');
    const caller = token(['read:pets', 'write:pets']);
    const del = await t.app.inject({
      method: 'POST',
      url: '/tools/cc_deletePet/invoke',
      headers: bearer(caller),
      payload: { petId: 3, api_key: 'agent-supplied' },
    });
    expect(del.statusCode, del.body).toBe(200);
    expect(del.json().result).toBe('pet 3 deleted');
    const request = lastRequest();
    expect(request).toMatchObject({ method: 'DELETE', url: '/api/v3/pet/3' });
    expect(request.headers['api_key']).toBe('agent-supplied');
    const sent = request.headers.authorization?.replace(/^Bearer /, '') ?? '';
    expect(decodeJwt(sent)).toMatchObject({ iss: as.issuer, client_id: 'registry', scope: 'pets' });
  });

  it("never sends a caller's token to the API", () => {
    expect(seen.length).toBeGreaterThan(5);
    for (const request of seen)
      for (const value of Object.values(request.headers)) for (const caller of callerTokens) expect(String(value)).not.toContain(caller);
  });

  it('refuses a name another tool holds, and writes nothing', async () => {
    const taken = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { name: 'x_getPetById', description: 'an operator tool', host: 'localhost', port: 1, endpoint: '/x', scopes: [] },
    });
    expect(taken.statusCode, taken.body).toBe(201);
    const before = await names(['read:pets', 'write:pets']);
    const res = await put('clash', { document: PETSTORE, prefix: 'x_', baseUrl: base });
    expect(res.statusCode, res.body).toBe(409);
    expect(res.json().errors).toEqual([expect.objectContaining({ path: '/paths/~1pet~1{petId}/get' })]);
    expect((await t.app.inject({ method: 'GET', url: '/openapi-sources/clash', headers: admin })).statusCode).toBe(404);
    expect(await names(['read:pets', 'write:pets'])).toEqual(before);
  });

  it("refuses operators' writes of a source's tools, and deleting the source deletes them", async () => {
    const edit = await t.app.inject({ method: 'DELETE', url: '/tools/pet_addPet', headers: admin });
    expect(edit.statusCode).toBe(409);
    expect(edit.json().detail).toContain('OpenAPI source "petstore"');
    const gone = await t.app.inject({ method: 'DELETE', url: '/openapi-sources/petstore-cc', headers: admin });
    expect(gone.statusCode, gone.body).toBe(200);
    expect(gone.json().deleted).toEqual(['cc_deletePet', 'cc_getPetById']);
    expect((await t.app.inject({ method: 'GET', url: '/tools/cc_getPetById', headers: admin })).statusCode).toBe(404);
  });

  it('keeps the source, its sealed credential and its tools across a restart', async () => {
    await t.restart();
    const got = await t.app.inject({ method: 'GET', url: '/openapi-sources/petstore', headers: admin });
    expect(got.statusCode).toBe(200);
    const call = await t.app.inject({
      method: 'POST',
      url: '/tools/pet_getPetById/invoke',
      headers: bearer(token(['api_key'])),
      payload: { petId: 9 },
    });
    expect(call.statusCode, call.body).toBe(200);
    expect(lastRequest().headers['api_key']).toBe('petstore-key-123');
    // Sealed at rest: the database file holds no clear secret.
    expect(readFileSync(t.config.databasePath).includes('petstore-key-123')).toBe(false);
  });
});
