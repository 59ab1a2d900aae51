import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseToolPutBody } from '../../src/json-schema/tool-schemas.js';
import { importOpenApi, type ImportedDocument } from '../../src/sources/openapi/import.js';

/** Petstore 3.0 (Apache-2.0, see test/fixtures/openapi/README.md). */
const petstore = readFileSync(new URL('../fixtures/openapi/petstore-3.0.yaml', import.meta.url), 'utf8');
const BASE = 'https://petstore.example.com/api/v3';

/**
 * Every produced body must pass the registry's own `PUT /tools/{name}` parser, schemas checked.
 * Until the SCOPE RULE (multi-token entries) lands on this branch, ScopeSchema takes one token, so
 * the entries are checked token by token; drop the flattening once it has landed.
 */
function expectAccepted(doc: ImportedDocument): void {
  for (const op of doc.operations) expect(() => parseToolPutBody(op.body, op.name), op.name).not.toThrow();
}
const op = (doc: ImportedDocument, id: string) => doc.operations.find((o) => o.operationId === id)!;
const target = (doc: ImportedDocument, id: string) => op(doc, id).body.target as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A refusal: TR_ERR_VALIDATION with the pointer among its field errors. */
async function refused(document: unknown, pointer: string | RegExp, message?: RegExp): Promise<void> {
  const error = await importOpenApi({ document: document as never, prefix: 'x_', baseUrl: 'https://a.example' }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ code: 'TR_ERR_VALIDATION' });
  const fields = (error as { fieldErrors: Array<{ path: string; message: string }> }).fieldErrors;
  expect(fields[0]!.path).toMatch(pointer);
  if (message) expect(fields[0]!.message).toMatch(message);
}
const minimal = (paths: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  openapi: '3.0.3',
  info: { title: 't', version: '1' },
  paths,
  ...extra,
});
const ok = { responses: { '200': { description: 'ok' } } };

describe('importOpenApi: the Petstore', () => {
  it('names, methods, paths and placements', async () => {
    const doc = await importOpenApi({ document: petstore, prefix: 'pet_', baseUrl: BASE });
    expectAccepted(doc);
    expect(doc.title).toMatch(/Petstore/);
    const names = doc.operations.map((o) => o.name);
    expect(names).toContain('pet_addPet');
    expect(new Set(names).size).toBe(names.length);
    expect(op(doc, 'getPetById')).toMatchObject({ method: 'GET', path: '/pet/{petId}', pointer: '/paths/~1pet~1{petId}/get' });
    expect(target(doc, 'getPetById')).toMatchObject({ baseUrl: BASE, arguments: { petId: { in: 'path' } } });
    expect(target(doc, 'findPetsByStatus').arguments.status).toMatchObject({ in: 'query' });
    expect(target(doc, 'addPet').arguments).toMatchObject({ name: { in: 'body' }, photoUrls: { in: 'body' } });
    expect((op(doc, 'addPet').body.inputSchema as { required: string[] }).required).toEqual(expect.arrayContaining(['name', 'photoUrls']));
    // deletePet's api_key header is the api_key security scheme: the credential machinery fills it.
    expect(target(doc, 'deletePet').arguments).toEqual({ petId: { in: 'path' } });
    // uploadFile takes only application/octet-stream.
    expect(doc.skipped).toContainEqual({ pointer: '/paths/~1pet~1{petId}~1uploadImage/post', reason: 'only non-JSON request bodies' });
    expect(names).not.toContain('pet_uploadFile');
  });

  it('scopes, output schemas, deprecated, security schemes', async () => {
    const doc = await importOpenApi({ document: petstore, prefix: 'pet_', baseUrl: BASE });
    expect(op(doc, 'addPet').body.scopes).toEqual(['read:pets write:pets']);
    expect(op(doc, 'getPetById').body.scopes).toEqual(['api_key', 'read:pets write:pets']);
    expect(op(doc, 'getPetById').security).toEqual([{ api_key: [] }, { petstore_auth: ['write:pets', 'read:pets'] }]);
    expect(op(doc, 'getInventory').body.scopes).toEqual(['api_key']);
    expect(op(doc, 'placeOrder').body.scopes).toEqual([]);
    expect(op(doc, 'getPetById').body.outputSchema).toMatchObject({ type: 'object', required: ['name', 'photoUrls'] });
    expect(op(doc, 'findPetsByStatus').body.outputSchema).toBeUndefined(); // an array, not an object
    // This Petstore copy marks no operation deprecated: the 3.1 test below covers `deprecated: true`.
    expect(op(doc, 'addPet').deprecated).toBe(false);
    expect(doc.securitySchemes.api_key).toEqual({ type: 'apiKey', in: 'header', name: 'api_key' });
    expect(doc.securitySchemes.petstore_auth).toMatchObject({ type: 'oauth2', scopes: ['write:pets', 'read:pets'] });
  });

  it('scopeMap renames tokens; options.scopes serve open operations; filters narrow', async () => {
    const doc = await importOpenApi({
      document: petstore,
      prefix: 'p-',
      baseUrl: BASE,
      scopes: ['store'],
      scopeMap: { 'read:pets': 'pets.read', api_key: 'pets.key' },
      filter: { tags: ['pet', 'store'], methods: ['get', 'post'] },
      timeoutMs: 5000,
    });
    expectAccepted(doc);
    expect(op(doc, 'getPetById').body.scopes).toEqual(['pets.key', 'pets.read write:pets']);
    expect(op(doc, 'placeOrder').body.scopes).toEqual(['store']);
    expect(op(doc, 'addPet').body.timeoutMs).toBe(5000);
    expect(doc.operations.every((o) => o.method === 'GET' || o.method === 'POST')).toBe(true);
    expect(doc.operations.find((o) => o.path.startsWith('/user'))).toBeUndefined();
  });
});

describe('importOpenApi: 3.1 and conversions', () => {
  it('converts a 3.1 document: type lists with null, nullable, readOnly/writeOnly, reserved headers', async () => {
    const document = {
      openapi: '3.1.0',
      info: { title: 'n', version: '2' },
      servers: [{ url: 'https://{host}/v1', variables: { host: { default: 'api.example.com' } } }],
      components: {
        schemas: {
          Thing: {
            type: 'object',
            required: ['id', 'label'],
            properties: {
              id: { type: 'string', readOnly: true },
              label: { type: ['string', 'null'] },
              secret: { type: 'string', writeOnly: true },
            },
          },
        },
      },
      paths: {
        '/things': {
          post: {
            operationId: 'make thing!',
            parameters: [{ name: 'Authorization', in: 'header', schema: { type: 'string' } }],
            requestBody: { content: { 'application/vnd.x+json': { schema: { $ref: '#/components/schemas/Thing' } } } },
            responses: {
              '201': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Thing' } } } },
            },
          },
          get: { summary: 'List', deprecated: true, responses: { '200': { description: 'ok' } } },
        },
      },
    };
    const doc = await importOpenApi({ document, prefix: 'n_' });
    expectAccepted(doc);
    const make = doc.operations.find((o) => o.method === 'POST')!;
    expect(make.name).toBe('n_make_thing_');
    expect(make.body.target).toMatchObject({
      baseUrl: 'https://api.example.com/v1',
      arguments: { label: { in: 'body' }, secret: { in: 'body' } },
    });
    expect(make.body.inputSchema).toEqual({
      type: 'object',
      properties: { label: { type: ['string', 'null'] }, secret: { type: 'string', writeOnly: true } },
      required: ['label'],
    });
    expect((make.body.outputSchema as { properties: object }).properties).not.toHaveProperty('secret');
    const list = doc.operations.find((o) => o.method === 'GET')!;
    expect(list.name).toBe('n_get__things');
    expect(list.body.description).toBe('List');
    expect(list.deprecated).toBe(true);
    expect(make.deprecated).toBe(false);
  });

  it('keeps every argument when a body property is named like a parameter, and body_<name> is taken too', async () => {
    const string = { type: 'string' };
    const doc = await importOpenApi({
      document: minimal({
        '/users/{id}': {
          put: {
            operationId: 'updateUser',
            parameters: [
              { name: 'id', in: 'path', required: true, schema: string },
              { name: 'body_id', in: 'query', schema: string },
            ],
            requestBody: {
              content: {
                'application/json': {
                  schema: { type: 'object', required: ['id'], properties: { id: string, body_id_2: string, name: string } },
                },
              },
            },
            ...ok,
          },
        },
      }) as never,
      prefix: 'u_',
      baseUrl: 'https://a.example',
    });
    expectAccepted(doc);
    expect(target(doc, 'updateUser').arguments).toEqual({
      id: { in: 'path' },
      body_id: { in: 'query' },
      body_id_3: { in: 'body', name: 'id' },
      body_id_2: { in: 'body' },
      name: { in: 'body' },
    });
    const input = op(doc, 'updateUser').body.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(input.properties).sort()).toEqual(['body_id', 'body_id_2', 'body_id_3', 'id', 'name']);
    expect(input.required.sort()).toEqual(['body_id_3', 'id']);
  });

  it('turns 3.0 nullable into a type list', async () => {
    const document = minimal({
      '/a': { get: { operationId: 'a', parameters: [{ name: 'q', in: 'query', schema: { type: 'integer', nullable: true } }], ...ok } },
    });
    const doc = await importOpenApi({ document, prefix: 'x_', baseUrl: 'https://a.example' });
    expectAccepted(doc);
    expect((doc.operations[0]!.body.inputSchema as { properties: Record<string, unknown> }).properties.q).toEqual({
      type: ['integer', 'null'],
    });
  });
});

describe('importOpenApi: bad documents are a 400 with the pointer', () => {
  it('an unresolvable $ref', async () => {
    await refused(
      minimal({ '/a': { get: { responses: { '200': { $ref: '#/components/responses/Nope' } } } } }),
      '/paths/~1a/get/responses/200',
      /does not resolve/,
    );
  });
  it('a cyclic $ref', async () => {
    const document = minimal(
      {
        '/a': {
          get: {
            responses: { '200': { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } } } },
          },
        },
      },
      { components: { schemas: { Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } } } } },
    );
    await refused(
      document,
      /^\/paths\/~1a\/get\/responses\/200\/content\/application~1json\/schema/,
      /circular \$ref #\/components\/schemas\/Node/,
    );
  });
  it('an external $ref', async () => {
    await refused(minimal({ '/a': { get: { responses: { '200': { $ref: 'http://x/y' } } } } }), '/paths/~1a/get/responses/200', /external/);
  });
  it('duplicate operationIds, naming both pointers', async () => {
    const document = minimal({ '/a': { get: { operationId: 'same', ...ok } }, '/b': { get: { operationId: 'same', ...ok } } });
    await refused(document, '/paths/~1b/get', /duplicate operationId same \(also at \/paths\/~1a\/get\)/);
  });
  it('only non-JSON request bodies', async () => {
    const document = minimal({ '/a': { post: { requestBody: { content: { 'text/plain': { schema: { type: 'string' } } } }, ...ok } } });
    await refused(document, '/paths/~1a/post', /non-JSON/);
  });
  it('10 MB of paths', async () => {
    const paths: Record<string, unknown> = {};
    for (let i = 0; i < 120_000; i++) paths[`/p${i}/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`] = ok;
    const text = JSON.stringify(minimal(paths));
    expect(text.length).toBeGreaterThan(10 * 1024 * 1024);
    await refused(text, '', /too large/);
  });
  it('not OpenAPI at all', async () => {
    await refused({ swagger: '2.0', info: {}, paths: {} }, '/openapi', /not an OpenAPI 3/);
    await refused('just some words', '/openapi', /not an OpenAPI 3/);
  });
  it('a YAML syntax error', async () => {
    await refused('openapi: 3.0.3\ninfo: [unclosed\n', '', /not JSON or YAML/);
  });
  it('a relative servers url without baseUrl', async () => {
    const error = await importOpenApi({ document: minimal({ '/a': { get: ok } }, { servers: [{ url: '/v3' }] }), prefix: 'x' }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'TR_ERR_VALIDATION', fieldErrors: [{ path: '/servers/0/url' }] });
  });
});
