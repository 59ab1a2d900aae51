/**
 * Issue 12, "JSON Schema for inputs and outputs": a tool may declare a full JSON Schema
 * `inputSchema` (instead of the article's `parameters`) and an `outputSchema`, served as given;
 * every schema a descriptor carries is checked when it is written, and an invalid one is a 400
 * naming its path that changes nothing, in the catalogue or in the database.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { ORDER_INPUT, ORDER_OUTPUT, snapshot } from './support.js';

describe('tool schemas at registration (issue 12)', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let agent: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    agent = bearer(t.token(['orders:write']));
  });
  afterAll(() => t.close());

  const register = (payload: unknown) =>
    t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: payload as object });
  const order = (extra: Record<string, unknown> = {}) => ({
    name: 'place_order',
    endpoint: '/tools/order',
    description: 'Places an order',
    scopes: ['orders:write'],
    inputSchema: ORDER_INPUT,
    outputSchema: ORDER_OUTPUT,
    ...extra,
  });

  it('registers a full input schema and an output schema, and serves both unchanged', async () => {
    const res = await register(order());
    expect(res.statusCode, res.body).toBe(201);
    // Stored as given: no `parameters` beside the schema, so that an export imports again.
    expect(res.json().descriptor).toEqual({ ...order(), returns: '', host: 'localhost', port: 8002, forwardAuthorization: false });

    const entry = (await t.app.inject({ method: 'GET', url: '/tools/place_order', headers: agent })).json();
    expect(entry.inputSchema).toEqual(ORDER_INPUT);
    expect(entry.outputSchema).toEqual(ORDER_OUTPUT);
    // The article's parameters, made from the top-level properties for agents that read them,
    // with their `enum` and `items` (issue 31: without them the allowed values were lost).
    const properties = ORDER_INPUT.properties as Record<string, { items?: unknown; enum?: unknown }>;
    expect(entry.parameters).toEqual({
      customer: { type: 'object' },
      items: { type: 'array', items: properties['items']?.items },
      priority: { type: 'string', description: 'How soon', required: false, enum: properties['priority']?.enum },
      contact: { type: 'string', required: false },
      deliverBy: { type: 'string', required: false },
      note: { type: 'string', required: false },
    });
    const listed = (await t.app.inject({ method: 'GET', url: '/', headers: agent }))
      .json()
      .tools.find((x: { name: string }) => x.name === 'place_order');
    expect(listed).toEqual(entry);
  });

  it('keeps the article form: parameters with items, enum and default make the served schema', async () => {
    const res = await register({
      ...seed('calculator'),
      name: 'tagger',
      scopes: [],
      parameters: {
        tags: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Tags' },
        mode: { type: 'string', enum: ['add', 'remove'], default: 'add', required: false },
      },
      outputSchema: { type: 'object' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const entry = (await t.app.inject({ method: 'GET', url: '/tools/tagger', headers: agent })).json();
    expect(entry.inputSchema).toEqual({
      type: 'object',
      properties: {
        tags: { type: 'array', items: { type: 'string', minLength: 1 }, description: 'Tags' },
        mode: { type: 'string', enum: ['add', 'remove'], default: 'add' },
      },
      required: ['tags'],
      additionalProperties: false,
    });
    expect(entry.outputSchema).toEqual({ type: 'object' });
  });

  it('takes a draft-07 schema that says so (what the MCP TypeScript SDK sends)', async () => {
    const inputSchema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        pair: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false },
        when: { type: 'string', format: 'date-time' },
      },
      definitions: { unused: { type: 'string' } },
    };
    const res = await register({ ...order({ inputSchema, outputSchema: undefined }), name: 'draft7_tool' });
    expect(res.statusCode, res.body).toBe(201);
    expect((await t.app.inject({ method: 'GET', url: '/tools/draft7_tool', headers: agent })).json().inputSchema).toEqual(inputSchema);
  });

  it('takes a schema nested exactly 32 deep', async () => {
    const res = await register(order({ name: 'deep_tool', inputSchema: deep(30), outputSchema: undefined }));
    expect(res.statusCode, res.body).toBe(201);
    expect((await t.app.inject({ method: 'GET', url: '/tools/deep_tool', headers: agent })).json().inputSchema).toEqual(deep(30));
  });

  it('gives message-bus tools an optional outputSchema, served in discovery', async () => {
    expect(
      (await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') })).statusCode,
    ).toBe(201);
    const outputSchema = { type: 'object', properties: { joke: { type: 'string' } } };
    const res = await register({ ...seed('tell-joke'), outputSchema });
    expect(res.statusCode, res.body).toBe(201);
    const entry = (await t.app.inject({ method: 'GET', url: '/tools/tell-joke', headers: bearer(t.token(['jokes:read'])) })).json();
    expect(entry.outputSchema).toEqual(outputSchema);
    const bad = await register({ ...seed('tell-joke'), outputSchema: { type: 'object', properties: { joke: { type: 'text' } } } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.map((e: { path: string }) => e.path)).toEqual(['outputSchema.properties.joke.type']);
    // The input schema made from `arguments` is served like any other, so held to the same size.
    const long = Array.from({ length: 9 }, (_, i) => ({ name: `a${i}`, type: 'string', description: 'd'.repeat(8000) }));
    const large = await register({ ...seed('tell-joke'), name: 'long-joke', arguments: long });
    expect(large.statusCode).toBe(400);
    expect(large.json().errors).toEqual([
      { path: 'arguments', message: expect.stringMatching(/^is \d+ bytes of JSON; a schema may have at most 65536$/) },
    ]);
  });

  // Each: a descriptor, and a path its 400 must name.
  // A property `d` whose array items nest `levels` deep: its innermost schema is at depth 2 + levels.
  const deep = (levels: number) => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < levels; i++) schema = { type: 'array', items: schema };
    return { type: 'object', properties: { d: schema } };
  };
  const invalid: [string, Record<string, unknown>, string][] = [
    [
      'the issue\'s "strnig" item type in parameters',
      { ...seed('calculator'), name: 'bad', parameters: { tags: { type: 'array', items: { type: 'strnig' } } } },
      'parameters.tags.items.type',
    ],
    [
      'a bad type in an inputSchema',
      order({ name: 'bad', inputSchema: { type: 'object', properties: { x: { type: 'array', items: { type: 'strnig' } } } } }),
      'inputSchema.properties.x.items.type',
    ],
    [
      'a remote $ref',
      order({ name: 'bad', inputSchema: { type: 'object', properties: { a: { $ref: 'https://schemas.example.com/a.json' } } } }),
      'inputSchema.properties.a.$ref',
    ],
    [
      'a local $ref that does not resolve',
      order({ name: 'bad', inputSchema: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } }),
      'inputSchema.properties.a.$ref',
    ],
    [
      'a schema nested deeper than 32',
      order({ name: 'bad', inputSchema: deep(31) }),
      `inputSchema.properties.d.${Array(31).fill('items').join('.')}`,
    ],
    [
      'a schema larger than 64 KiB',
      order({
        name: 'bad',
        inputSchema: {
          type: 'object',
          description: 'x'.repeat(8000),
          properties: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`p${i}`, { type: 'string', description: 'y'.repeat(8000) }])),
        },
      }),
      'inputSchema',
    ],
    [
      'an input schema that is not an object schema',
      order({ name: 'bad', inputSchema: { type: 'array', items: { type: 'string' } } }),
      'inputSchema.type',
    ],
    ['an input schema that is not a schema object', order({ name: 'bad', inputSchema: true }), 'inputSchema'],
    [
      'an unknown keyword (Ajv strict mode)',
      order({ name: 'bad', inputSchema: { type: 'object', properties: { a: { type: 'string', maxLenght: 3 } } } }),
      'inputSchema.properties.a.maxLenght',
    ],
    [
      'an unknown format',
      order({ name: 'bad', inputSchema: { type: 'object', properties: { a: { type: 'string', format: 'e-mail' } } } }),
      'inputSchema.properties.a.format',
    ],
    [
      'a pattern that is no regular expression',
      order({ name: 'bad', inputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '([a-z]' } } } }),
      'inputSchema.properties.a.pattern',
    ],
    [
      'a $ref to an anchor that does not exist',
      order({ name: 'bad', inputSchema: { type: 'object', $defs: { a: { $anchor: 'here' } }, properties: { a: { $ref: '#there' } } } }),
      'inputSchema.properties.a.$ref',
    ],
    [
      'a duplicate anchor',
      order({ name: 'bad', inputSchema: { type: 'object', $defs: { a: { $anchor: 'x' }, b: { $anchor: 'x' } } } }),
      'inputSchema.$defs.b.$anchor',
    ],
    [
      'a $dynamicAnchor',
      order({ name: 'bad', inputSchema: { type: 'object', $defs: { a: { $dynamicAnchor: 'x' } } } }),
      'inputSchema.$defs.a.$dynamicAnchor',
    ],
    ['an $id', order({ name: 'bad', inputSchema: { type: 'object', $id: 'https://example.com/order.json' } }), 'inputSchema.$id'],
    [
      'an unsupported $schema',
      order({ name: 'bad', inputSchema: { type: 'object', $schema: 'http://json-schema.org/draft-04/schema#' } }),
      'inputSchema.$schema',
    ],
    [
      'an empty enum in parameters',
      { ...seed('calculator'), name: 'bad', parameters: { color: { type: 'string', enum: [] } } },
      'parameters.color.enum',
    ],
    [
      'an invalid outputSchema',
      order({ name: 'bad', outputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 'one' } } } }),
      'outputSchema.properties.n.minimum',
    ],
    ['an outputSchema that is not an object schema', order({ name: 'bad', outputSchema: { type: 'string' } }), 'outputSchema.type'],
  ];

  it.each(invalid)('refuses %s with a 400 naming the path, and changes nothing', async (_what, descriptor, path) => {
    const before = await snapshot(t.app, admin);
    const res = await register(descriptor);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json();
    expect(body.code).toBe('TR_ERR_VALIDATION');
    expect(body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(body.detail).toContain(path);
    expect(await snapshot(t.app, admin)).toEqual(before);
    expect((await t.app.inject({ method: 'GET', url: '/tools/bad', headers: admin })).statusCode).toBe(404);
  });

  it('refuses parameters and inputSchema together, naming both', async () => {
    const res = await register(order({ parameters: { q: { type: 'string' } } }));
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      { path: 'parameters', message: 'give either "parameters" or "inputSchema", not both' },
      { path: 'inputSchema', message: 'give either "parameters" or "inputSchema", not both' },
    ]);
  });

  it('keeps the stored tool when a replacement has an invalid schema', async () => {
    const before = await snapshot(t.app, admin);
    const res = await t.app.inject({
      method: 'PUT',
      url: '/tools/place_order',
      headers: admin,
      payload: order({ inputSchema: { type: 'object', properties: { customer: { $ref: '#/$defs/customer' } } } }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      { path: 'inputSchema.properties.customer.$ref', message: '"#/$defs/customer" does not point at a subschema of this schema' },
    ]);
    expect(await snapshot(t.app, admin)).toEqual(before);
  });

  it('refuses an import whose one tool has an invalid schema, naming it in the bundle, and imports nothing', async () => {
    const before = await snapshot(t.app, admin);
    const tools = [
      { ...seed('calculator'), name: 'fine_one' },
      { ...seed('calculator'), name: 'broken_one', parameters: { xs: { type: 'array', items: { type: 'strnig' } } } },
    ];
    const res = await t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: { tools } });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual(['tools.1.parameters.xs.items.type']);
    expect(await snapshot(t.app, admin)).toEqual(before);
  });

  it('stored nothing of the refused writes: the database reads back the same after a restart', async () => {
    const before = await snapshot(t.app, admin);
    await t.restart();
    expect(await snapshot(t.app, admin)).toEqual(before);
    const names = (await t.app.inject({ method: 'GET', url: '/', headers: admin })).json().tools.map((x: { name: string }) => x.name);
    expect(names).toEqual(['deep_tool', 'draft7_tool', 'place_order', 'tagger', 'tell-joke']);
  });
});
