/**
 * Issue 12: a strict-mode client's nulls. `GET /?format=openai-strict` makes an optional
 * property required and nullable, so a model sends `null` to mean "absent"; the bridge drops
 * such a null before the arguments are checked and forwarded, where the tool's own schema
 * cannot accept null and does not require the key (src/json-schema/strict-nulls.ts). A null
 * the tool's schema accepts is forwarded; a null for a required key is refused with its path.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { toStrictJsonSchema } from 'openai/lib/transform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutStrictNulls } from '../../src/json-schema/strict-nulls.js';
import type { OpenAiChatTool } from '../../src/model/exports.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startToolHost, type ToolHost } from './support.js';

const INPUT = {
  type: 'object',
  properties: {
    query: { type: 'string' },
    limit: { type: 'integer', minimum: 1 },
    note: { type: ['string', 'null'] },
    mode: { enum: ['fast', 'slow'] },
    choice: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
    filter: {
      type: 'object',
      properties: { tag: { type: 'string' }, since: { type: 'string', format: 'date' } },
      required: ['tag'],
      additionalProperties: false,
    },
    items: { type: 'array', items: { $ref: '#/$defs/item' } },
  },
  required: ['query'],
  additionalProperties: false,
  $defs: {
    item: {
      type: 'object',
      properties: { name: { type: 'string' }, qty: { type: 'integer' } },
      required: ['name'],
      additionalProperties: false,
    },
  },
};

describe('nulls from strict-mode clients (issue 12)', () => {
  let t: TestApp;
  let host: ToolHost;
  let agent: Record<string, string>;

  beforeAll(async () => {
    host = await startToolHost();
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    const admin = bearer(t.token(['registry:write']));
    agent = bearer(t.token([]));
    for (const [name, inputSchema] of [
      ['search', INPUT],
      [
        'either',
        {
          type: 'object',
          properties: {
            target: { anyOf: [{ type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false }, { type: 'string' }] },
          },
          additionalProperties: false,
        },
      ],
    ] as const) {
      const res = await t.app.inject({
        method: 'PUT',
        url: `/tools/${name}`,
        headers: admin,
        payload: { name, endpoint: `/tools/${name}`, description: 'Searches', host: '127.0.0.1', port: host.port, inputSchema },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(async () => {
    await t.close();
    await host.close();
  });

  const invoke = (name: string, args: unknown) =>
    t.app.inject({
      method: 'POST',
      url: `/tools/${name}/invoke`,
      headers: { ...agent, 'content-type': 'application/json' },
      payload: JSON.stringify(args),
    });

  it('takes what a strict client sends for "absent", and the tool gets the keys left out', async () => {
    const exported = (await t.app.inject({ method: 'GET', url: '/?format=openai-strict', headers: agent })).json<{
      tools: OpenAiChatTool[];
    }>();
    const parameters = exported.tools.find((x) => x.function.name === 'search')?.function.parameters as Record<string, unknown>;
    // OpenAI's own SDK finds nothing to change: the schema is strict already.
    expect(toStrictJsonSchema(structuredClone(parameters) as never)).toEqual(parameters);

    // Every optional property left out, as a strict model does it.
    const sent = {
      query: 'bolts',
      limit: null,
      note: null,
      mode: null,
      choice: null,
      filter: { tag: 'metal', since: null },
      items: [
        { name: 'bolt', qty: null },
        { name: 'nut', qty: 3 },
      ],
    };
    const ajv = new Ajv2020({ strict: false });
    ajvFormats.default(ajv);
    expect(ajv.validate(parameters, sent), JSON.stringify(ajv.errors)).toBe(true);

    const res = await invoke('search', sent);
    expect(res.statusCode, res.body).toBe(200);
    // `note` accepts null in the tool's own schema: an argument, forwarded.
    expect(host.received.at(-1)).toEqual({
      url: '/tools/search',
      body: { query: 'bolts', note: null, filter: { tag: 'metal' }, items: [{ name: 'bolt' }, { name: 'nut', qty: 3 }] },
    });
  });

  it('refuses a null for a required key, and one where the schema gives no certain answer, with the path', async () => {
    const before = host.received.length;
    const required = await invoke('search', { query: null, limit: null });
    expect(required.statusCode).toBe(400);
    expect(required.json()).toMatchObject({ code: 'TR_ERR_INVALID_ARGUMENTS', errors: [{ path: '/query' }] });
    const nested = await invoke('search', { query: 'x', filter: { tag: null } });
    expect(nested.statusCode).toBe(400);
    expect(nested.json().errors.map((e: { path: string }) => e.path)).toContain('/filter/tag');
    // Inside anyOf a failing branch need not fail the call: the null stays, and the check decides.
    const branch = await invoke('either', { target: { a: null } });
    expect(branch.statusCode).toBe(400);
    expect(host.received.length).toBe(before);
  });

  describe('the rule, on its own', () => {
    it('returns the same object when nothing is dropped, and copies only what changes', () => {
      const args = { query: 'x', filter: { tag: 'a' }, items: [{ name: 'n' }] };
      expect(withoutStrictNulls(INPUT, args)).toBe(args);
      const withNull = { query: 'x', filter: { tag: 'a', since: null }, items: [{ name: 'n' }] };
      const out = withoutStrictNulls(INPUT, withNull);
      expect(out).toEqual({ query: 'x', filter: { tag: 'a' }, items: [{ name: 'n' }] });
      expect(out['items']).toBe(withNull.items);
      expect(withNull.filter).toEqual({ tag: 'a', since: null });
    });

    it('decides "cannot accept null" from type, enum, const, $ref, anyOf, oneOf and allOf, and keeps a null when unsure', () => {
      const schema = {
        type: 'object',
        properties: {
          t: { type: 'string' },
          tn: { type: ['string', 'null'] },
          e: { enum: ['a'] },
          en: { enum: ['a', null] },
          c: { const: 1 },
          cn: { const: null },
          f: false,
          any: true,
          r: { $ref: '#/definitions/s' },
          loop: { $ref: '#/properties/loop' },
          remote: { $ref: 'https://example.com/s.json' },
          a: { anyOf: [{ type: 'string' }, { type: 'number' }] },
          an: { anyOf: [{ type: 'string' }, { type: 'null' }] },
          o: { oneOf: [{ type: 'string' }, { type: 'number' }] },
          all: { allOf: [{ description: 'x' }, { type: 'string' }] },
          free: { description: 'anything' },
          'we/ird~': { type: 'string' },
        },
        definitions: { s: { type: 'integer' } },
      };
      const args = Object.fromEntries(Object.keys(schema.properties).map((key) => [key, null]));
      expect(Object.keys(withoutStrictNulls(schema, args)).sort()).toEqual(
        ['an', 'any', 'cn', 'en', 'free', 'loop', 'remote', 'tn'].sort(),
      );
    });

    it('leaves keys the schema does not list alone, own keys only', () => {
      const schema = { type: 'object', properties: { a: { type: 'string' } } };
      const args = JSON.parse('{"__proto__": null, "constructor": null, "toString": null, "a": null}') as Record<string, unknown>;
      const out = withoutStrictNulls(schema, args);
      expect(Object.keys(out)).toEqual(['__proto__', 'constructor', 'toString']);
      expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    });
  });
});
