/**
 * The limits of issue 12's schema check at their edges (house style 14: every limit tested),
 * and the argument validators' bound: compiled on first call, kept per catalogue entry, at most
 * two generations alive, and the check at registration fast enough for a 100,000-tool import.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ArgumentValidators, UncompilableSchemaError } from '../../src/json-schema/arguments.js';
import { MAX_PROBLEMS, MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, schemaProblems } from '../../src/json-schema/check.js';
import { hasFreeFormSchema } from '../../src/json-schema/tool-schemas.js';
import { normaliseTool, type Tool } from '../../src/model/normalise.js';
import { JsonTypeSchema, type HttpTool } from '../../src/model/schemas.js';

/** An object schema whose property `d` nests array items so that its innermost schema is at `depth`. */
function nestedTo(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < depth - 2; i++) schema = { type: 'array', items: schema };
  return { type: 'object', properties: { d: schema } };
}

/** An object schema of exactly `bytes` bytes of JSON. */
function sized(bytes: number): Record<string, unknown> {
  const base = JSON.stringify({ type: 'object', description: '' }).length;
  return { type: 'object', description: 'x'.repeat(bytes - base) };
}

function toolOf(name: string, inputSchema: Record<string, unknown>): Tool {
  return normaliseTool('http', {
    name,
    endpoint: '/x',
    description: 'A tool',
    scopes: [],
    returns: '',
    host: 'localhost',
    port: 1,
    forwardAuthorization: true,
    inputSchema: inputSchema as { type: 'object' },
  });
}

describe('the schema check at its limits', () => {
  it(`takes a subschema at depth ${MAX_SCHEMA_DEPTH} and refuses one deeper`, () => {
    expect(schemaProblems(nestedTo(MAX_SCHEMA_DEPTH))).toEqual([]);
    const problems = schemaProblems(nestedTo(MAX_SCHEMA_DEPTH + 1));
    expect(problems).toEqual([
      {
        path: ['properties', 'd', ...Array(MAX_SCHEMA_DEPTH - 1).fill('items')],
        message: `is nested deeper than ${MAX_SCHEMA_DEPTH} schemas`,
      },
    ]);
  });

  it('is not overflowed by any nesting', () => {
    // The walk is iterative and stops at the limit. The size is measured first, with JSON.stringify:
    // Node 20's overflows the stack on 100,000 levels (refused as too deep), Node 26's does not
    // (refused as too large). Either way one clear refusal, and nothing thrown.
    expect(schemaProblems(nestedTo(2000))[0]?.message).toBe(`is nested deeper than ${MAX_SCHEMA_DEPTH} schemas`);
    const deepest = schemaProblems(nestedTo(100_000));
    expect(deepest).toHaveLength(1);
    expect(deepest[0]).toMatchObject({ path: [] });
    expect(deepest[0]?.message).toMatch(/^is nested too deeply|^is \d+ bytes of JSON; a schema may have at most/);
  });

  it(`takes ${MAX_SCHEMA_BYTES} bytes of JSON and refuses one more`, () => {
    expect(schemaProblems(sized(MAX_SCHEMA_BYTES))).toEqual([]);
    expect(schemaProblems(sized(MAX_SCHEMA_BYTES + 1))).toEqual([
      { path: [], message: `is ${MAX_SCHEMA_BYTES + 1} bytes of JSON; a schema may have at most ${MAX_SCHEMA_BYTES}` },
    ]);
  });

  it(`reports at most ${MAX_PROBLEMS} problems`, () => {
    const properties = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`p${i}`, { type: 'string', bogus: i }]));
    expect(schemaProblems({ type: 'object', properties })).toHaveLength(MAX_PROBLEMS);
  });

  it('refuses what Ajv refuses only when it compiles, though the meta-schema takes it', () => {
    const at = (property: Record<string, unknown>) =>
      schemaProblems({ type: 'object', properties: { p: property } }).map((p) => p.path.join('/'));
    expect(at({ if: { type: 'string' } })).toEqual(['properties/p/if']);
    expect(at({ then: { type: 'string' } })).toEqual(['properties/p/then']);
    expect(at({ type: 'array', minContains: 1 })).toEqual(['properties/p/minContains']);
    expect(at({ type: 'array', contains: {}, minContains: 0 })).toEqual(['properties/p/minContains']);
    expect(at({ enum: [] })).toEqual(['properties/p/enum']);
    expect(at({ nullable: true })).toEqual(['properties/p/nullable']);
    expect(at({ pattern: 'a\\-b' })).toEqual(['properties/p/pattern']);
    expect(at({ type: 'object', patternProperties: { '(': {} } })).toEqual(['properties/p/patternProperties/(']);
    // A plain-name anchor is a 2020-12 keyword Ajv's strict mode does not list (dialects.ts adds it).
    expect(at({ $anchor: 'a' })).toEqual([]);
    expect(at({ $dynamicAnchor: 'a' })).toEqual(['properties/p/$dynamicAnchor']);
    expect(at({ $schema: 'https://json-schema.org/draft/2020-12/schema' })).toEqual(['properties/p/$schema']);
    expect(at({ formatMaximum: '2020-01-01', format: 'date' })).toEqual(['properties/p/formatMaximum']);
    // A $ref must point at a subschema, not at any JSON value.
    expect(at({ $ref: '#/properties' })).toEqual(['properties/p/$ref']);
    expect(at({ $ref: '#' })).toEqual([]);
  });

  it('checks a draft-07 schema by draft-07 rules', () => {
    const draft7 = (property: Record<string, unknown>) => ({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { p: property },
    });
    expect(schemaProblems(draft7({ type: 'array', items: [{ type: 'string' }], additionalItems: false }))).toEqual([]);
    expect(schemaProblems(draft7({ type: 'array', additionalItems: false })).map((p) => p.path.join('/'))).toEqual([
      'properties/p/additionalItems',
    ]);
    expect(schemaProblems(draft7({ type: 'array', prefixItems: [{ type: 'string' }] })).map((p) => p.path.join('/'))).toEqual([
      'properties/p/prefixItems',
    ]);
    expect(schemaProblems(draft7({ $ref: '#/definitions/a' })).map((p) => p.path.join('/'))).toEqual(['properties/p/$ref']);
  });

  it('costs tens of microseconds a tool, not the 1.5 ms a compile costs', () => {
    const schema = (i: number) => ({
      type: 'object',
      properties: {
        expression: { type: 'string', description: `A math expression ${i}` },
        precision: { type: 'integer', minimum: 0 },
        tags: { type: 'array', items: { type: 'string' } },
      },
      required: ['expression'],
      additionalProperties: false,
    });
    schemaProblems(schema(-1));
    const started = performance.now();
    for (let i = 0; i < 5000; i++) schemaProblems(schema(i));
    const perSchemaUs = ((performance.now() - started) / 5000) * 1000;
    // Measured at 15-25 us on the development machine; the bound leaves room for slow CI.
    expect(perSchemaUs).toBeLessThan(500);
  });
});

describe('parameters without free-form schemas', () => {
  // What zod lets through for a parameter, but `items` and an empty `enum`.
  const parameter = fc.record(
    {
      type: fc.constantFrom(...JsonTypeSchema.options),
      description: fc.string({ minLength: 1, maxLength: 20 }),
      required: fc.boolean(),
      enum: fc.array(fc.jsonValue({ maxDepth: 2 }), { minLength: 1, maxLength: 4 }),
      default: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: ['type'] },
  );
  const parameters = fc.dictionary(fc.stringMatching(/^[a-zA-Z0-9_-]{1,64}$/), parameter, { minKeys: 1, maxKeys: 6 });

  it('make a schema that passes the whole check and compiles: only its size is checked at registration', async () => {
    const validators = new ArgumentValidators();
    let n = 0;
    return fc.assert(
      fc.asyncProperty(parameters, async (params) => {
        const descriptor = {
          name: `p${n++}`,
          endpoint: '/x',
          description: 'A tool',
          scopes: [],
          returns: '',
          host: 'localhost',
          port: 1,
          forwardAuthorization: true,
          parameters: params,
        } as HttpTool;
        expect(hasFreeFormSchema(descriptor.parameters ?? {})).toBe(false);
        const tool = normaliseTool('http', descriptor);
        expect(schemaProblems(tool.inputSchema)).toEqual([]);
        // It compiles: the check answers (with the required parameters missing) rather than refusing the schema.
        await expect(validators.check(tool, {})).resolves.toBeInstanceOf(Array);
      }),
      { numRuns: 100 },
    );
  });
});

describe('argument validators', () => {
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };

  it('compiles on the first call only, and again once the tool is rewritten', async () => {
    const validators = new ArgumentValidators();
    const tool = toolOf('a', schema);
    expect(validators.size).toBe(0);
    expect(await validators.check(tool, { n: 1 })).toEqual([]);
    expect(await validators.check(tool, { n: 'x' })).toEqual([{ path: '/n', message: 'must be integer' }]);
    expect(validators.size).toBe(1);
    // A write makes a new catalogue entry: its schema, not the old one, is checked.
    const rewritten = toolOf('a', { type: 'object', properties: { n: { type: 'string' } } });
    expect(await validators.check(rewritten, { n: 'x' })).toEqual([]);
    expect(validators.size).toBe(1);
  });

  it('keeps at most two generations of validators', async () => {
    const validators = new ArgumentValidators(3);
    for (let i = 0; i < 50; i++) {
      expect(await validators.check(toolOf(`t${i}`, schema), { n: i })).toEqual([]);
      expect(validators.size).toBeLessThanOrEqual(6);
    }
    // A dropped validator compiles again and still checks.
    expect(await validators.check(toolOf('t0', schema), {})).toEqual([{ path: '/n', message: 'is required' }]);
  });

  it('compiles a stored schema larger than the limit at registration (a large schema compiles)', async () => {
    const validators = new ArgumentValidators();
    const large = { ...sized(MAX_SCHEMA_BYTES + 100), properties: { n: { type: 'integer' } } };
    expect(await validators.check(toolOf('large', large), { n: 'x' })).toEqual([{ path: '/n', message: 'must be integer' }]);
  });

  it('refuses to check against a stored schema it cannot compile', async () => {
    const validators = new ArgumentValidators();
    const tool = toolOf('legacy', { type: 'object', properties: { n: { type: 'integr' } } });
    await expect(validators.check(tool, {})).rejects.toThrow(UncompilableSchemaError);
    await expect(validators.check(tool, {})).rejects.toThrow(/\/properties\/n\/type/);
  });
});
