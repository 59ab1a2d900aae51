/**
 * Issue 12, as properties (fast-check) through the real HTTP app: any schema of the generated
 * vocabulary (nested objects and arrays, enums, formats, patterns, anyOf, $defs with a local
 * $ref, property names that need escaping) registers and reads back equal, and arguments made
 * to fit it reach the tool host unchanged, also when sent as a strict-mode client sends them
 * (`null` for every optional key left out); one mutation, at any depth, makes a schema or the
 * arguments invalid, and then the answer is a 400 naming the mutated path, and nothing is
 * served or forwarded.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startToolHost, type ToolHost } from './support.js';

type Schema = Record<string, unknown>;

// Names that need escaping in a JSON pointer are among them ("/" and "~").
const NAMES = ['a', 'b', 'name', 'count', 'tags', 'user_id', 'weird/key', 'tilde~key', 'with space'];
const FORMATS: Record<string, string> = {
  email: 'ada@example.com',
  date: '2026-03-01',
  'date-time': '2026-03-01T12:00:00Z',
  uuid: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70',
  uri: 'https://example.com/a?b=c',
  ipv4: '192.0.2.1',
};
const PATTERN = '^[a-z]{1,8}$';

const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.integer({ min: 0, max: 3 }).map((min) => ({ type: 'string', minLength: min, maxLength: min + 5 })),
  fc.constantFrom(...Object.keys(FORMATS)).map((format) => ({ type: 'string', format })),
  fc.constant({ type: 'string', pattern: PATTERN }),
  fc
    .uniqueArray(fc.constantFrom('red', 'green', 'blue', 'x1', 'y2'), { minLength: 1, maxLength: 4 })
    .map((values) => ({ type: 'string', enum: values })),
  fc.integer({ min: -50, max: 50 }).map((min) => ({ type: 'integer', minimum: min, maximum: min + 10 })),
  fc.constant({ type: 'number', minimum: -100, maximum: 100 }),
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: 'null' }),
  fc.constant({ type: ['string', 'null'], description: 'text or nothing' }),
);

const { node } = fc.letrec<{ node: Schema; array: Schema; object: Schema; anyOf: Schema }>((tie) => ({
  node: fc.oneof({ maxDepth: 3, depthIdentifier: 'schema' }, leaf, tie('array'), tie('object'), tie('anyOf')),
  array: fc
    .record({ items: tie('node'), min: fc.integer({ min: 0, max: 2 }) })
    .map(({ items, min }) => ({ type: 'array', items, minItems: min, maxItems: min + 2 })),
  object: fc
    .dictionary(fc.constantFrom(...NAMES), tie('node'), { maxKeys: 3 })
    .chain((properties) =>
      fc.subarray(Object.keys(properties)).map((required) => ({ type: 'object', properties, required, additionalProperties: false })),
    ),
  anyOf: fc.array(leaf, { minLength: 2, maxLength: 3 }).map((anyOf) => ({ anyOf })),
}));

/** A top-level object schema; sometimes one property's schema is moved into `$defs` behind a `$ref`. */
const inputSchema: fc.Arbitrary<Schema> = fc
  .record({ properties: fc.dictionary(fc.constantFrom(...NAMES), node, { minKeys: 1, maxKeys: 4 }), viaRef: fc.boolean() })
  .chain(({ properties, viaRef }) =>
    fc.subarray(Object.keys(properties)).map((required) => {
      const schema: Schema = { type: 'object', properties: { ...properties }, required, additionalProperties: false };
      const first = Object.keys(properties)[0] as string;
      if (viaRef) {
        schema['$defs'] = { shared: properties[first] };
        (schema['properties'] as Schema)[first] = { $ref: '#/$defs/shared', description: 'by reference' };
      }
      return schema;
    }),
  );

/** The subschema a `$ref` of the generated vocabulary points at. */
function resolve(schema: Schema, root: Schema): Schema {
  return schema['$ref'] === '#/$defs/shared' ? ((root['$defs'] as Schema)['shared'] as Schema) : schema;
}

/** Values that fit a schema of the generated vocabulary, by construction. */
function valueOf(raw: Schema, root: Schema): fc.Arbitrary<unknown> {
  const schema = resolve(raw, root);
  if (Array.isArray(schema['anyOf'])) return fc.oneof(...(schema['anyOf'] as Schema[]).map((branch) => valueOf(branch, root)));
  if (Array.isArray(schema['enum'])) return fc.constantFrom(...(schema['enum'] as string[]));
  if (Array.isArray(schema['type'])) return fc.option(fc.string({ maxLength: 5 }), { nil: null });
  switch (schema['type']) {
    case 'string':
      if (typeof schema['format'] === 'string') return fc.constant(FORMATS[schema['format']]);
      if (schema['pattern'] === PATTERN) return fc.stringMatching(/^[a-z]{1,8}$/);
      return fc.string({ minLength: schema['minLength'] as number, maxLength: schema['maxLength'] as number });
    case 'integer':
      return fc.integer({ min: schema['minimum'] as number, max: schema['maximum'] as number });
    case 'number':
      // `|| 0`: JSON has no -0.
      return fc.double({ min: -100, max: 100, noNaN: true }).map((n) => n || 0);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(valueOf(schema['items'] as Schema, root), {
        minLength: schema['minItems'] as number,
        maxLength: schema['maxItems'] as number,
      });
    case 'object': {
      const properties = schema['properties'] as Record<string, Schema>;
      const model = Object.fromEntries(Object.entries(properties).map(([name, sub]) => [name, valueOf(sub, root)]));
      return fc.record(model, { requiredKeys: schema['required'] as string[] });
    }
  }
  throw new Error(`no values for ${JSON.stringify(schema)}`);
}

/** A value of another JSON type than a single-typed schema takes. */
const WRONG: Record<string, unknown> = { string: 12345, integer: 'x', number: 'x', boolean: 'x', null: 'x', array: 'x', object: 'x' };

const pointer = (name: string) => `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`;

type Path = (string | number)[];

/**
 * Every place in `value` whose schema has one JSON type (at any depth: through objects'
 * properties, arrays' items and the `$ref`), with the type: where a value of another type is
 * a mutation with a known path. Not into `anyOf`, whose failures Ajv reports per branch.
 */
function typedPlaces(raw: Schema, value: unknown, root: Schema, path: Path = []): { path: Path; type: string }[] {
  const schema = resolve(raw, root);
  const type = schema['type'];
  if (typeof type !== 'string') return [];
  const places = path.length > 0 ? [{ path, type }] : [];
  if (type === 'object' && typeof value === 'object' && value !== null) {
    for (const [key, sub] of Object.entries(schema['properties'] as Record<string, Schema>)) {
      if (Object.hasOwn(value, key)) places.push(...typedPlaces(sub, (value as Record<string, unknown>)[key], root, [...path, key]));
    }
  }
  if (type === 'array' && Array.isArray(value))
    value.forEach((item, i) => places.push(...typedPlaces(schema['items'] as Schema, item, root, [...path, i])));
  return places;
}

/** `value` with `replacement` at `path` (a copy; the original is left alone). */
function replaced(value: unknown, path: Path, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [string | number, ...Path];
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? replaced(item, rest, replacement) : item));
  const object = value as Record<string, unknown>;
  return { ...object, [head]: replaced(object[head], rest, replacement) };
}

const pointerOf = (path: Path) => path.map((segment) => pointer(String(segment))).join('');

/**
 * `value` as a strict-mode client sends it (GET /?format=openai-strict): every optional key left
 * out is there, as `null`, where its schema cannot take null, at any depth. The registry must
 * drop them all, and forward `value` itself.
 */
function withStrictNulls(raw: Schema, value: unknown, root: Schema): unknown {
  const schema = resolve(raw, root);
  if (schema['type'] === 'array' && Array.isArray(value))
    return value.map((item) => withStrictNulls(schema['items'] as Schema, item, root));
  if (schema['type'] !== 'object' || typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(schema['properties'] as Record<string, Schema>)) {
    const own = Object.hasOwn(value, key);
    const target = resolve(sub, root);
    if (own) out[key] = withStrictNulls(sub, (value as Record<string, unknown>)[key], root);
    else if (
      !(schema['required'] as string[]).includes(key) &&
      (typeof target['type'] === 'string' ? target['type'] !== 'null' : Array.isArray(target['enum']))
    )
      out[key] = null;
  }
  return out;
}

/** Every subschema of a generated schema with its path: where a mutation can go, at any depth. */
function subschemaPaths(schema: Schema, path: Path = []): Path[] {
  const paths: Path[] = path.length > 0 ? [path] : [];
  for (const keyword of ['properties', '$defs'] as const) {
    const map = schema[keyword] as Record<string, Schema> | undefined;
    if (map) for (const [name, sub] of Object.entries(map)) paths.push(...subschemaPaths(sub, [...path, keyword, name]));
  }
  if (schema['items']) paths.push(...subschemaPaths(schema['items'] as Schema, [...path, 'items']));
  if (Array.isArray(schema['anyOf']))
    (schema['anyOf'] as Schema[]).forEach((sub, i) => paths.push(...subschemaPaths(sub, [...path, 'anyOf', i])));
  return paths;
}

/** Ways to break a property's schema, each with the keyword its 400 must name. */
const SCHEMA_MUTATIONS: [Schema, string][] = [
  [{ type: 'strnig' }, 'type'],
  [{ $ref: 'https://example.com/remote.json' }, '$ref'],
  [{ $ref: '#/$defs/missing' }, '$ref'],
  [{ frobnicate: true }, 'frobnicate'],
  [{ format: 'no-such-format' }, 'format'],
  [{ pattern: '(' }, 'pattern'],
  [{ enum: [] }, 'enum'],
  [{ minimum: 'x' }, 'minimum'],
  [{ $id: 'urn:example:x' }, '$id'],
];

describe('schemas and arguments as properties (issue 12)', () => {
  let t: TestApp;
  let host: ToolHost;
  let admin: Record<string, string>;
  let agent: Record<string, string>;
  let counter = 0;

  beforeAll(async () => {
    host = await startToolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    agent = bearer(t.token([]));
  });
  afterAll(async () => {
    await t.close();
    await host.close();
  });

  const register = (name: string, schema: unknown) =>
    t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { name, endpoint: `/tools/${name}`, description: 'Generated', host: '127.0.0.1', port: host.port, inputSchema: schema },
    });
  const invoke = (name: string, args: unknown) =>
    t.app.inject({
      method: 'POST',
      url: `/tools/${name}/invoke`,
      headers: { ...agent, 'content-type': 'application/json' },
      payload: JSON.stringify(args),
    });

  it('a valid schema reads back equal; arguments that fit reach the host unchanged; one broken field is a 400 naming it, forwarded nowhere', async () => {
    await fc.assert(
      fc.asyncProperty(
        inputSchema.chain((schema) =>
          fc.record({
            schema: fc.constant(schema),
            args: valueOf(schema, schema) as fc.Arbitrary<Record<string, unknown>>,
            mutation: fc.nat(),
            pick: fc.nat(),
          }),
        ),
        async ({ schema, args, mutation, pick }) => {
          const name = `pv_${++counter}`;
          const res = await register(name, schema);
          expect(res.statusCode, res.body).toBe(201);
          const served = (await t.app.inject({ method: 'GET', url: `/tools/${name}`, headers: agent })).json();
          expect(served.inputSchema).toEqual(schema);

          const ok = await invoke(name, args);
          expect(ok.statusCode, ok.body).toBe(200);
          expect(host.received.at(-1)).toEqual({ url: `/tools/${name}`, body: JSON.parse(JSON.stringify(args)) });

          // A strict-mode client's nulls for the optional keys it leaves out: dropped, the rest forwarded as it was.
          const nulled = await invoke(name, withStrictNulls(schema, args, schema));
          expect(nulled.statusCode, nulled.body).toBe(200);
          expect(host.received.at(-1)).toEqual({ url: `/tools/${name}`, body: JSON.parse(JSON.stringify(args)) });

          // One mutation with a known path: a required field left out, a field the schema does
          // not list, or a single-typed value, at any depth, given another JSON type.
          const typed = typedPlaces(schema, args, schema);
          const required = schema['required'] as string[];
          const options: (() => [Record<string, unknown>, string])[] = [() => [{ ...args, zz_extra: 1 }, '/zz_extra']];
          if (required.length > 0) {
            options.push(() => {
              const field = required[pick % required.length] as string;
              const { [field]: _dropped, ...rest } = args;
              return [rest, pointer(field)];
            });
          }
          if (typed.length > 0) {
            options.push(() => {
              const place = typed[pick % typed.length] as { path: Path; type: string };
              return [replaced(args, place.path, WRONG[place.type]) as Record<string, unknown>, pointerOf(place.path)];
            });
          }
          const [bad, path] = (options[mutation % options.length] as () => [Record<string, unknown>, string])();
          const received = host.received.length;
          const refused = await invoke(name, bad);
          expect(refused.statusCode, refused.body).toBe(400);
          expect(refused.json().code).toBe('TR_ERR_INVALID_ARGUMENTS');
          expect(refused.json().errors.map((e: { path: string }) => e.path)).toContain(path);
          expect(host.received.length).toBe(received);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a schema broken in one place is a 400 naming that place, and is never served', async () => {
    await fc.assert(
      fc.asyncProperty(inputSchema, fc.constantFrom(...SCHEMA_MUTATIONS), fc.nat(), async (schema, [mutation, keyword], pick) => {
        // Any subschema, however deep: in properties, items, anyOf branches or $defs.
        const paths = subschemaPaths(schema);
        const at = paths[pick % paths.length] as Path;
        const broken = replaced(schema, at, {
          ...(at.reduce<unknown>((node, segment) => (node as Record<string, unknown>)[segment], schema) as Schema),
          ...mutation,
        });
        const name = `pi_${++counter}`;
        const index = (await t.app.inject({ method: 'GET', url: '/' })).headers['x-registry-index'];
        const res = await register(name, broken);
        expect(res.statusCode, res.body).toBe(400);
        expect(res.json().code).toBe('TR_ERR_VALIDATION');
        expect(
          res.json().errors.map((e: { path: string }) => e.path),
          JSON.stringify(broken),
        ).toContain(['inputSchema', ...at, keyword].join('.'));
        expect((await t.app.inject({ method: 'GET', url: `/tools/${name}`, headers: admin })).statusCode).toBe(404);
        expect((await t.app.inject({ method: 'GET', url: '/' })).headers['x-registry-index']).toBe(index);
      }),
      { numRuns: 60 },
    );
  });
});
