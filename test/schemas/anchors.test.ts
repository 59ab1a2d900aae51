/**
 * Issue 31 (MCP 2026-07-28, SEP-2106): a tool's draft 2020-12 schema may name subschemas with
 * plain-name anchors (`"$anchor": "addressDef"`) and refer to them (`"$ref": "#addressDef"`),
 * with every guard of the local JSON pointers kept: a reference to no anchor, or two subschemas
 * with one anchor, is a 400 naming the path; loops through anchors that consume no input are
 * refused; the work bound follows anchors; two tools with the same anchor name, in the one Ajv
 * instance that compiles every tool's schema, each validate against their own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentValidators } from '../../src/json-schema/arguments.js';
import { schemaProblems } from '../../src/json-schema/check.js';
import { AjvInstances } from '../../src/json-schema/compile.js';
import { ValidationWorkError } from '../../src/json-schema/work.js';
import type { Tool } from '../../src/model/normalise.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { snapshot, startToolHost, type ToolHost } from './support.js';

type Schema = Record<string, unknown>;

/** The conformance suite's json_schema_2020_12_tool (0.2.0-alpha.12), with its `$anchor`. */
const CONFORMANCE_SCHEMA: Schema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
};

/** A tool whose `value` is checked against the anchor `val`, of the given type. */
const anchored = (type: string): Schema => ({
  type: 'object',
  $defs: { v: { $anchor: 'val', type } },
  properties: { value: { $ref: '#val' } },
  required: ['value'],
});

const paths = (schema: Schema) => schemaProblems(schema).map((p) => p.path.join('/'));

describe('anchors in a tool schema (issue 31, SEP-2106)', () => {
  it('takes plain-name anchors in 2020-12 and references to them, and compiles what it takes', () => {
    const accepted: Schema[] = [
      CONFORMANCE_SCHEMA,
      {
        ...CONFORMANCE_SCHEMA,
        properties: { address: { $ref: '#addressDef' } },
        allOf: undefined,
        if: undefined,
        then: undefined,
        else: undefined,
      },
      {
        type: 'object',
        $defs: { a: { $anchor: '_a.b-c9', type: 'string' }, b: { items: { $anchor: 'Item', type: 'integer' } } },
        properties: { x: { $ref: '#_a.b-c9' }, y: { type: 'array', items: { $ref: '#Item' } }, z: { $ref: '#/$defs/b' } },
      },
      // Under the applicators and maps Ajv looks through.
      { type: 'object', dependentSchemas: { q: { $anchor: 'dep', type: 'object' } }, properties: { x: { $ref: '#dep' } } },
      { type: 'object', anyOf: [{ not: { $anchor: 'neg', type: 'null' } }], properties: { x: { $ref: '#neg' } } },
      // An anchor where the validator cannot resolve one is fine while nothing refers to it.
      { type: 'object', $anchor: 'top' },
      { type: 'object', properties: { t: { type: 'array', prefixItems: [{ $anchor: 'first' }] } } },
      // Recursive data through an anchor descends into the value.
      {
        type: 'object',
        $defs: { node: { $anchor: 'node', type: 'object', properties: { next: { $ref: '#node' } } } },
        properties: { n: { $ref: '#node' } },
      },
    ];
    const instances = new AjvInstances();
    for (const schema of accepted) {
      for (const key of Object.keys(schema)) if (schema[key] === undefined) delete schema[key];
      expect(schemaProblems(schema), JSON.stringify(schema)).toEqual([]);
      expect(instances.compile(schema), JSON.stringify(schema)).not.toBeInstanceOf(Error);
    }
  });

  it('refuses a reference to no anchor, naming its path, as it refuses a pointer to no subschema', () => {
    expect(schemaProblems({ type: 'object', properties: { a: { $ref: '#missing' } } })).toEqual([
      { path: ['properties', 'a', '$ref'], message: '"#missing" names no anchor of this schema (no subschema has "$anchor": "missing")' },
    ]);
    // An `$anchor` inside a value (`const`) is no subschema's anchor.
    expect(paths({ type: 'object', const: { $anchor: 'c' }, properties: { a: { $ref: '#c' } } })).toEqual(['properties/a/$ref']);
  });

  it('refuses two subschemas with one anchor, naming the second', () => {
    expect(schemaProblems({ type: 'object', $defs: { a: { $anchor: 'x', type: 'string' }, b: { $anchor: 'x', type: 'string' } } })).toEqual(
      [{ path: ['$defs', 'b', '$anchor'], message: '"x" is already the anchor of #/$defs/a: an anchor names one subschema' }],
    );
    expect(paths({ type: 'object', $anchor: 'x', properties: { p: { $anchor: 'x' } } })).toEqual(['properties/p/$anchor']);
  });

  it('refuses references the validator could not resolve, and anchors outside the grammar or the dialect', () => {
    expect(schemaProblems({ type: 'object', $anchor: 'top', properties: { p: { $ref: '#top' } } })[0]?.message).toMatch(
      /anchor at the top of the schema.*refer to the top with "#"/,
    );
    expect(
      schemaProblems({ type: 'object', properties: { t: { prefixItems: [{ $anchor: 'first' }] }, p: { $ref: '#first' } } })[0]?.message,
    ).toMatch(/inside "prefixItems".*"#\/properties\/t\/prefixItems\/0"/);
    expect(paths({ type: 'object', properties: { p: { $anchor: '1st' } } })).toEqual(['properties/p/$anchor']);
    expect(paths({ type: 'object', properties: { p: { $anchor: 'a#b' } } })).toEqual(['properties/p/$anchor']);
    const draft7 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' };
    expect(schemaProblems({ ...draft7, definitions: { a: { $anchor: 'a' } } })).toEqual([
      { path: ['definitions', 'a', '$anchor'], message: 'unknown keyword "$anchor" (not a JSON Schema draft-07 keyword)' },
    ]);
    expect(paths({ ...draft7, properties: { p: { $ref: '#a' } } })).toEqual(['properties/p/$ref']);
  });

  it('still refuses $id, $dynamicAnchor, $dynamicRef and the recursive keywords', () => {
    for (const keyword of ['$id', '$dynamicAnchor', '$dynamicRef', '$recursiveAnchor', '$recursiveRef']) {
      const value = keyword.endsWith('Ref') ? '#x' : keyword === '$recursiveAnchor' ? true : 'x';
      expect(paths({ type: 'object', properties: { p: { [keyword]: value } } }), keyword).toContain(`properties/p/${keyword}`);
    }
  });

  it.each([
    [
      'a subschema that refers to its own anchor through allOf',
      { type: 'object', $defs: { a: { $anchor: 'a', allOf: [{ $ref: '#a' }] } } },
      ['$defs', 'a', 'allOf', 0, '$ref'],
    ],
    [
      'two anchors round a loop',
      {
        type: 'object',
        $defs: { a: { $anchor: 'a', $ref: '#b' }, b: { $anchor: 'b', anyOf: [{ $ref: '#a' }] } },
        properties: { x: { $ref: '#a' } },
      },
      ['$defs', 'b', 'anyOf', 0, '$ref'],
    ],
    [
      'an anchor and a pointer round a loop',
      { type: 'object', $defs: { a: { $anchor: 'a', not: { $ref: '#/$defs/b' } }, b: { $ref: '#a' } } },
      ['$defs', 'a', 'not', '$ref'],
    ],
  ])('refuses %s, a loop that consumes no input', (_name, schema, path) => {
    const problems = schemaProblems(schema);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.path).toEqual(path);
    expect(problems[0]?.message).toMatch(/never descends into the value/);
  });

  it('bounds the work of references through anchors as through pointers', async () => {
    // 30 anchors, each an anyOf of two references to the next: 2^30 checks.
    const defs: Schema = {};
    for (let i = 0; i < 30; i++) defs[`d${i}`] = { $anchor: `d${i}`, anyOf: [{ $ref: `#d${i + 1}` }, { $ref: `#d${i + 1}` }] };
    defs['d30'] = { $anchor: 'd30', type: 'string', minLength: 2 };
    const tree = { type: 'object', $defs: defs, properties: { x: { $ref: '#d0' } } };
    expect(schemaProblems(tree)).toEqual([]);
    const validators = new ArgumentValidators();
    await expect(validators.check({ name: 'tree', inputSchema: tree } as unknown as Tool, { x: 'a' })).rejects.toThrow(ValidationWorkError);
  });
});

describe('tools with anchors, registered and called (issue 31)', () => {
  let t: TestApp;
  let host: ToolHost;
  let admin: Record<string, string>;
  let agent: Record<string, string>;

  beforeAll(async () => {
    host = await startToolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    agent = bearer(t.token(['anchors:use']));
  });
  afterAll(async () => {
    await t.close();
    await host.close();
  });

  const register = (name: string, inputSchema: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: {
        name,
        endpoint: `/tools/${name}`,
        description: 'Anchored',
        scopes: ['anchors:use'],
        host: '127.0.0.1',
        port: host.port,
        inputSchema,
      },
    });
  const invoke = (name: string, args: unknown) =>
    t.app.inject({
      method: 'POST',
      url: `/tools/${name}/invoke`,
      headers: { 'content-type': 'application/json', ...agent },
      payload: JSON.stringify(args),
    });

  it('serves the schema as given, $anchor kept, and checks calls through the anchor', async () => {
    const res = await register('contact', CONFORMANCE_SCHEMA);
    expect(res.statusCode, res.body).toBe(201);
    const entry = (await t.app.inject({ method: 'GET', url: '/tools/contact', headers: agent })).json();
    expect(entry.inputSchema).toEqual(CONFORMANCE_SCHEMA);
    expect((await invoke('contact', { email: 'a@example.com', address: { city: 'Oslo' } })).statusCode).toBe(200);
    const refused = await invoke('contact', { email: 'a@example.com', address: { city: 7 } });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().errors).toEqual([{ path: '/address/city', message: 'must be string' }]);
  });

  it('keeps two tools with the same anchor name apart: each call is checked against its own tool', async () => {
    expect((await register('by_text', anchored('string'))).statusCode).toBe(201);
    expect((await register('by_number', anchored('integer'))).statusCode).toBe(201);
    // Alternating, so that each compile follows the other's in the same Ajv instance.
    for (let round = 0; round < 2; round++) {
      expect((await invoke('by_text', { value: 'seven' })).statusCode).toBe(200);
      expect(host.received.at(-1)).toEqual({ url: '/tools/by_text', body: { value: 'seven' } });
      expect((await invoke('by_number', { value: 7 })).statusCode).toBe(200);
      expect(host.received.at(-1)).toEqual({ url: '/tools/by_number', body: { value: 7 } });
      const text = await invoke('by_text', { value: 7 });
      expect(text.statusCode).toBe(400);
      expect(text.json().errors).toEqual([{ path: '/value', message: 'must be string' }]);
      const number = await invoke('by_number', { value: 'seven' });
      expect(number.statusCode).toBe(400);
      expect(number.json().errors).toEqual([{ path: '/value', message: 'must be integer' }]);
    }
    // Rewritten with the anchor's type swapped: the new schema is the one that counts.
    const swapped = await t.app.inject({
      method: 'PUT',
      url: '/tools/by_text',
      headers: admin,
      payload: {
        endpoint: '/tools/by_text',
        description: 'Anchored',
        scopes: ['anchors:use'],
        host: '127.0.0.1',
        port: host.port,
        inputSchema: anchored('integer'),
      },
    });
    expect(swapped.statusCode, swapped.body).toBe(200);
    expect((await invoke('by_text', { value: 7 })).statusCode).toBe(200);
    expect((await invoke('by_text', { value: 'seven' })).statusCode).toBe(400);
  });

  it.each([
    ['a reference to no anchor', { type: 'object', properties: { a: { $ref: '#missing' } } }, 'inputSchema.properties.a.$ref'],
    ['a duplicate anchor', { type: 'object', $defs: { a: { $anchor: 'x' }, b: { $anchor: 'x' } } }, 'inputSchema.$defs.b.$anchor'],
    [
      'a loop through an anchor',
      { type: 'object', $anchor: 'self', allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { $anchor: 'a', allOf: [{ $ref: '#a' }] } } },
      'inputSchema.$defs.a.allOf.0.$ref',
    ],
  ])('refuses %s with a 400 naming the path, and changes nothing', async (_what, inputSchema, path) => {
    const before = await snapshot(t.app, admin);
    const res = await register('bad', inputSchema);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().code).toBe('TR_ERR_VALIDATION');
    expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual([path]);
    expect(await snapshot(t.app, admin)).toEqual(before);
  });
});
