/**
 * Every check in bounded time (issue 28): `$ref` loops refused at registration, `uniqueItems`
 * hashed, a work bound known before a check runs, and costly checks on the worker thread.
 */
import { describe, expect, it } from 'vitest';
import { ArgumentValidators } from '../../src/json-schema/arguments.js';
import { schemaProblems } from '../../src/json-schema/check.js';
import { ValidationBusyError, ValidationPool } from '../../src/json-schema/validation-pool.js';
import { MAX_VALIDATION_WORK, ValidationWork, ValidationWorkError } from '../../src/json-schema/work.js';
import type { Tool } from '../../src/model/normalise.js';

let n = 0;
const toolOf = (inputSchema: Record<string, unknown>) => ({ name: `t${n++}`, inputSchema }) as unknown as Tool;

/** `depth` levels of `$defs`, each an `anyOf` of two references to the next: 2^depth checks. */
function referenceTree(depth: number): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  defs[`d${depth}`] = { type: 'string', minLength: 2 };
  return { type: 'object', $defs: defs, properties: { x: { $ref: '#/$defs/d0' } } };
}

/** Two `items` branches referring back: the work doubles at every level of nesting. */
const DOUBLING = {
  type: 'object',
  properties: { x: { $ref: '#/$defs/t' } },
  $defs: {
    t: { anyOf: [{ type: 'array', items: { $ref: '#/$defs/t' } }, { type: 'array', items: { $ref: '#/$defs/t' } }, { type: 'number' }] },
  },
};
const nested = (depth: number): unknown => (depth === 0 ? 1 : [nested(depth - 1)]);

describe('$ref loops that consume no input', () => {
  it.each([
    ['a schema that refers to itself', { type: 'object', $ref: '#' }, ['$ref']],
    [
      'two $defs round a loop',
      { type: 'object', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, properties: { x: { $ref: '#/$defs/a' } } },
      ['$defs', 'a', '$ref'],
    ],
    ['a loop through allOf', { type: 'object', allOf: [{ $ref: '#' }] }, ['allOf', 0, '$ref']],
    ['a loop through not and anyOf', { type: 'object', anyOf: [{ not: { $ref: '#/anyOf/0' } }] }, ['anyOf', 0, 'not', '$ref']],
    [
      'a loop through if/then',
      { type: 'object', $defs: { a: { if: { $ref: '#/$defs/a' }, then: true } }, properties: { x: { $ref: '#/$defs/a' } } },
      ['$defs', 'a', 'if', '$ref'],
    ],
  ])('refuses %s, naming the $ref', (_name, schema, path) => {
    const problems = schemaProblems(schema);
    expect(problems).toHaveLength(1);
    expect(problems[0]?.path).toEqual(path);
    expect(problems[0]?.message).toMatch(/never descends into the value/);
  });

  it('accepts references that descend into the value (recursive data)', () => {
    expect(
      schemaProblems({ type: 'object', properties: { children: { type: 'array', items: { $ref: '#' } }, next: { $ref: '#' } } }),
    ).toEqual([]);
    expect(schemaProblems(DOUBLING)).toEqual([]);
    expect(schemaProblems(referenceTree(30))).toEqual([]);
  });
});

describe('uniqueItems', () => {
  const validators = new ArgumentValidators();
  const tool = toolOf({ type: 'object', properties: { u: { type: 'array', uniqueItems: true } } });

  it("finds equal items whatever their keys' order, and only equal ones", async () => {
    expect(
      await validators.check(tool, {
        u: [
          { a: 1, b: [2, { c: 3 }] },
          { b: [2, { c: 3 }], a: 1 },
        ],
      }),
    ).toEqual([{ path: '/u', message: 'must NOT have duplicate items (items ## 0 and 1 are identical)' }]);
    expect(await validators.check(tool, { u: [{ a: 1 }, { a: '1' }, [1], '1', 1, null, true, 'true'] })).toEqual([]);
  });

  it('checks 15,000 small arrays (124 KB, which took Ajv 3.5 s) and finds a repeat among them', async () => {
    const items = Array.from({ length: 15_000 }, (_, i) => [i % 97, Math.floor(i / 97)]);
    expect(await validators.check(tool, { u: items })).toEqual([]);
    expect(await validators.check(tool, { u: [...items, [5, 3]] })).toEqual([
      { path: '/u', message: expect.stringMatching(/items ## \d+ and 15000 are identical/) },
    ]);
  });
});

describe('the work bound', () => {
  it('is the exact estimate where references multiply the work, and E x S where they do not', () => {
    const tree = new ValidationWork(referenceTree(30));
    expect(tree.bound({ x: 'a' }, MAX_VALIDATION_WORK)).toBe(Infinity);
    expect(tree.fits({ x: 'a' }, MAX_VALIDATION_WORK)).toBe(false);
    expect(new ValidationWork(referenceTree(8)).fits({ x: 'a' }, MAX_VALIDATION_WORK)).toBe(true);
    const doubling = new ValidationWork(DOUBLING);
    expect(doubling.fits({ x: nested(8) }, MAX_VALIDATION_WORK)).toBe(true);
    expect(doubling.fits({ x: nested(40) }, MAX_VALIDATION_WORK)).toBe(false);
    const plain = new ValidationWork({ type: 'object', properties: { a: { type: 'string' } } });
    expect(plain.bound({ a: 'x' }, 1000)).toBeLessThan(100);
  });

  it('refuses a value whose check would cost more, before checking it', async () => {
    const validators = new ArgumentValidators();
    await expect(validators.check(toolOf(referenceTree(30)), { x: 'a' })).rejects.toThrow(ValidationWorkError);
    await expect(validators.check(toolOf(DOUBLING), { x: nested(40) })).rejects.toThrow(/more work than the registry allows/);
    // Within the budget, the same schemas check as before.
    expect(await validators.check(toolOf(referenceTree(6)), { x: 'a' })).toEqual([
      { path: '/x', message: expect.stringMatching(/must NOT have fewer than 2 characters/) },
    ]);
    expect(await validators.check(toolOf(DOUBLING), { x: nested(6) })).toEqual([]);
  });

  it('checks costly values on the worker with the same answers as on the event loop', async () => {
    const validators = new ArgumentValidators();
    const schema = {
      type: 'object',
      properties: {
        rows: {
          type: 'array',
          items: {
            type: 'object',
            properties: { id: { type: 'integer' }, name: { type: 'string', pattern: '^[a-z]+$' } },
            required: ['id'],
          },
        },
      },
    };
    const rows = Array.from({ length: 5_000 }, (_, id) => ({ id, name: 'abc' }));
    rows[4_321] = { id: 'x' as unknown as number, name: 'ABC' };
    const tool = toolOf(schema);
    expect(new ValidationWork(schema).bound({ rows }, 20_000)).toBe(Infinity);
    expect(await validators.check(tool, { rows })).toEqual([
      { path: '/rows/4321/id', message: 'must be integer' },
      { path: '/rows/4321/name', message: 'must match pattern "^[a-z]+$"' },
    ]);
    expect(await validators.check(tool, { rows: rows.slice(0, 3) })).toEqual([]);
  });
});

describe('the validation worker', () => {
  const schema = {
    type: 'object',
    properties: { rows: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' } } } } },
  };
  const rows = Array.from({ length: 50_000 }, (_, id) => ({ id }));
  const options = { what: 'arguments', budget: MAX_VALIDATION_WORK, timeoutMs: 30_000 };

  it('gives each owner only a share of its queue', async () => {
    const pool = new ValidationPool();
    try {
      const first = pool.check(1, schema, { rows }, { ...options, owner: 'a' });
      const second = pool.check(1, schema, { rows }, { ...options, owner: 'a' });
      await expect(pool.check(1, schema, { rows }, { ...options, owner: 'a' })).rejects.toThrow(ValidationBusyError);
      const other = pool.check(1, schema, { rows }, { ...options, owner: 'b' });
      expect(await Promise.all([first, second, other])).toEqual([[], [], []]);
    } finally {
      pool.close();
    }
  });

  it('stops a check that overruns its time, and goes on with the next', async () => {
    const pool = new ValidationPool();
    try {
      const slow = pool.check(2, schema, { rows }, { ...options, owner: 'a', timeoutMs: 1 });
      const next = pool.check(2, schema, { rows: rows.slice(0, 10) }, { ...options, owner: 'b' });
      await expect(slow).rejects.toThrow(/took longer than 1 ms, and was stopped/);
      expect(await next).toEqual([]);
    } finally {
      pool.close();
    }
  });
});
