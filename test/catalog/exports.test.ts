/**
 * Issue 12: `GET /?format=` exports the caller's view in the shapes the vendor SDKs and
 * protocols take, checked against the SDKs' own types and schemas.
 */
import type { Tool as AgUiSdkTool } from '@ag-ui/core';
import type Anthropic from '@anthropic-ai/sdk';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type OpenAI from 'openai';
import { toStrictJsonSchema } from 'openai/lib/transform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportOf } from '../../src/catalog/exports.js';
import {
  EXPORT_FORMATS,
  openAiStrictToolOf,
  type AgUiTool,
  type AnthropicTool,
  type OpenAiChatTool,
  type OpenAiResponsesTool,
  type SkippedTool,
} from '../../src/model/exports.js';
import type { Tool } from '../../src/model/normalise.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

let handle: TestApp;
let calcUser: Record<string, string>;
let fileUser: Record<string, string>;

const httpTool = (name: string, scope: string, inputSchema: Record<string, unknown>) => ({
  name,
  endpoint: `/tools/${name}`,
  scopes: [scope],
  description: `The ${name} tool\nover two lines`,
  inputSchema,
  returns: 'Something',
});

const TOOLS = [
  seed('calculator'),
  seed('file_reader'),
  httpTool('lookup', 'calculator:use', {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      verbose: { type: 'boolean', description: 'Optional' },
      mode: { type: 'string', enum: ['a', 'b'] },
      tags: {
        type: 'array',
        items: {
          type: 'object',
          properties: { k: { type: 'string' }, v: { type: 'number' } },
          required: ['k'],
          additionalProperties: false,
        },
      },
    },
    required: ['id'],
    additionalProperties: false,
  }),
  httpTool('open_tool', 'calculator:use', { type: 'object', properties: { q: { type: 'string' } } }),
  httpTool('short_text', 'file_reader:use', {
    type: 'object',
    properties: { s: { type: 'string', minLength: 1 } },
    required: ['s'],
    additionalProperties: false,
  }),
];

beforeAll(async () => {
  handle = await createTestApp();
  const admin = bearer(handle.token(['registry:write']));
  for (const tool of TOOLS) {
    const res = await handle.app.inject({ method: 'PUT', url: `/tools/${String(tool['name'])}`, headers: admin, payload: tool });
    expect(res.statusCode, res.body).toBe(201);
  }
  calcUser = bearer(handle.token(['calculator:use']));
  fileUser = bearer(handle.token(['file_reader:use']));
});

afterAll(async () => {
  await handle.close();
});

const get = (url: string, headers: Record<string, string> = {}) => handle.app.inject({ method: 'GET', url, headers });

async function viewNames(headers: Record<string, string>): Promise<string[]> {
  return get('/', headers).then((r) => (r.json() as { tools: { name: string }[] }).tools.map((t) => t.name));
}

/** OpenAI strict mode's rules: every object closed and every property required. */
function expectStrict(schema: unknown, path = ''): void {
  if (typeof schema !== 'object' || schema === null) return;
  if (Array.isArray(schema)) {
    schema.forEach((s, i) => expectStrict(s, `${path}/${i}`));
    return;
  }
  const s = schema as Record<string, unknown>;
  const types = ([] as unknown[]).concat(s['type'] ?? []);
  if (types.includes('object') || 'properties' in s) {
    expect(s['additionalProperties'], `${path} is closed`).toBe(false);
    expect([...((s['required'] as string[] | undefined) ?? [])].sort(), `${path} requires every property`).toEqual(
      Object.keys((s['properties'] as object | undefined) ?? {}).sort(),
    );
  }
  for (const keyword of [
    'minLength',
    'maxLength',
    'minProperties',
    'maxProperties',
    'uniqueItems',
    'allOf',
    'not',
    'if',
    'patternProperties',
    'default',
  ])
    expect(s, path).not.toHaveProperty(keyword);
  for (const [key, value] of Object.entries(s)) if (key !== 'enum' && key !== 'const') expectStrict(value, `${path}/${key}`);
}

describe('GET /?format= (issue 12)', () => {
  it.each([
    ['calculator:use', () => calcUser],
    ['file_reader:use', () => fileUser],
  ])("lists exactly the caller's view in every format (%s)", async (_scope, headers) => {
    const names = await viewNames(headers());
    expect(names.length).toBeGreaterThan(0);

    const openai = await get('/?format=openai', headers());
    expect(openai.statusCode).toBe(200);
    const chatTools: OpenAI.Chat.Completions.ChatCompletionTool[] = openai.json<OpenAiChatTool[]>();
    expect(chatTools.map((t) => (t.type === 'function' ? t.function.name : ''))).toEqual(names);

    const responses: OpenAI.Responses.FunctionTool[] = (await get('/?format=openai-responses', headers())).json<OpenAiResponsesTool[]>();
    expect(responses.map((t) => t.name)).toEqual(names);

    const anthropic: Anthropic.Tool[] = (await get('/?format=anthropic', headers())).json<AnthropicTool[]>();
    expect(anthropic.map((t) => t.name)).toEqual(names);
    for (const tool of anthropic) expect(tool.input_schema.type).toBe('object');

    const agUi: AgUiSdkTool[] = (await get('/?format=ag-ui', headers())).json<AgUiTool[]>();
    expect(agUi.map((t) => t.name)).toEqual(names);

    const mcp = ListToolsResultSchema.parse((await get('/?format=mcp', headers())).json());
    expect(mcp.tools.map((t) => t.name)).toEqual(names);

    const strict = (await get('/?format=openai-strict', headers())).json<{ tools: OpenAiChatTool[]; skipped: SkippedTool[] }>();
    const strictTools: OpenAI.Chat.Completions.ChatCompletionTool[] = strict.tools;
    expect([...strict.tools.map((t) => t.function.name), ...strict.skipped.map((t) => t.name)].sort()).toEqual([...names].sort());
    expect(strictTools.length).toBeGreaterThan(0);
    for (const tool of strict.tools) {
      expect(tool.function.strict).toBe(true);
      expectStrict(tool.function.parameters);
      // OpenAI's SDK, which makes schemas strict for its own helpers, has nothing left to change.
      expect(toStrictJsonSchema(structuredClone(tool.function.parameters) as never)).toEqual(tool.function.parameters);
    }

    const prompt = await get('/?format=prompt', headers());
    expect(prompt.headers['content-type']).toBe('text/plain; charset=utf-8');
    const lines = prompt.body.trimEnd().split('\n');
    expect(lines[0]).toBe('Available tools:');
    expect(lines.slice(1).map((l) => /^- ([^(]+)\(/u.exec(l)?.[1])).toEqual(names);
  });

  it('makes optional properties nullable and skips what strict mode cannot take, with the reason', async () => {
    const calc = (await get('/?format=openai-strict', calcUser)).json<{ tools: OpenAiChatTool[]; skipped: SkippedTool[] }>();
    expect(calc.skipped).toEqual([{ name: 'open_tool', reason: '/: an object without "additionalProperties": false' }]);
    const lookup = calc.tools.find((t) => t.function.name === 'lookup')?.function.parameters as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(lookup.required).toEqual(['id', 'verbose', 'mode', 'tags']);
    expect(lookup.properties['id']).toEqual({ type: 'string', format: 'uuid' });
    expect(lookup.properties['verbose']).toEqual({ type: ['boolean', 'null'], description: 'Optional' });
    expect(lookup.properties['mode']).toEqual({ type: ['string', 'null'], enum: ['a', 'b', null] });
    expect(lookup.properties['tags']).toMatchObject({
      type: ['array', 'null'],
      items: { required: ['k', 'v'], properties: { v: { type: ['number', 'null'] } } },
    });
    const file = (await get('/?format=openai-strict', fileUser)).json<{ skipped: SkippedTool[] }>();
    expect(file.skipped).toEqual([{ name: 'short_text', reason: '/properties/s: keyword "minLength" is not supported in strict mode' }]);
  });

  it("follows strict mode's limits and forms, and stays what OpenAI's SDK calls strict", () => {
    const strictOf = (inputSchema: Record<string, unknown>) =>
      openAiStrictToolOf({ name: 't', description: 'd', inputSchema } as unknown as Tool);
    const closed = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      type: 'object',
      properties,
      additionalProperties: false,
      ...extra,
    });
    const reasonOf = (inputSchema: Record<string, unknown>) => {
      const result = strictOf(inputSchema);
      return 'skipped' in result ? result.skipped.reason : null;
    };
    expect(reasonOf(closed({ a: { type: 'array' } }))).toBe('/properties/a: an array without "items"');
    expect(reasonOf(closed({ a: { type: 'array', items: [{ type: 'string' }] } }))).toBe(
      '/properties/a/items: a tuple (an array of item schemas)',
    );
    expect(
      reasonOf(closed({ a: { type: 'string', enum: Array.from({ length: 300 }, (_, i) => `value-number-${i}-${'x'.repeat(40)}`) } })),
    ).toMatch(/^\/properties\/a: an enum of more than 250 strings/);
    expect(
      reasonOf(closed(Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`p${i}${'y'.repeat(700)}`, { type: 'string' }])))),
    ).toMatch(/characters of property names/);
    expect(reasonOf(closed({ a: { type: 'string', default: 'x' } }))).toBe(
      '/properties/a: keyword "default" is not supported in strict mode',
    );

    // Optional properties become nullable without a union of a union, and a $ref or const is wrapped.
    const result = strictOf(
      closed(
        {
          any: { anyOf: [{ type: 'string' }, { type: 'integer' }], description: 'either' },
          r: { $ref: '#/$defs/d' },
          c: { const: 'x' },
          n: { type: ['string', 'null'] },
        },
        { $defs: { d: closed({ q: { type: 'string' } }) } },
      ),
    );
    expect('tool' in result).toBe(true);
    const parameters = (result as { tool: OpenAiChatTool }).tool.function.parameters as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(parameters.properties).toEqual({
      any: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }], description: 'either' },
      r: { anyOf: [{ $ref: '#/$defs/d' }, { type: 'null' }] },
      c: { anyOf: [{ const: 'x' }, { type: 'null' }] },
      n: { type: ['string', 'null'] },
    });
    expect(parameters.required).toEqual(['any', 'r', 'c', 'n']);
    expect(toStrictJsonSchema(structuredClone(parameters) as never)).toEqual(parameters);
  });

  it("writes the article's prompt lines", async () => {
    const prompt = (await get('/?format=prompt', calcUser)).body;
    expect(prompt).toContain('- calculator(expression): Perform mathematical calculations\n');
    expect(prompt).toContain('- lookup(id, verbose, mode, tags): The lookup tool over two lines\n');
  });

  it('has a strong ETag per format and view, and answers 304 to it', async () => {
    const etags = new Set<string>();
    for (const headers of [calcUser, fileUser]) {
      etags.add(String((await get('/', headers)).headers['etag']));
      for (const format of EXPORT_FORMATS) {
        const first = await get(`/?format=${format}`, headers);
        const etag = String(first.headers['etag']);
        expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
        etags.add(etag);
        const again = await get(`/?format=${format}`, { ...headers, 'if-none-match': etag });
        expect(again.statusCode).toBe(304);
        expect(again.body).toBe('');
        expect(
          (await get(`/?format=${format}`, { ...headers, 'if-none-match': String((await get('/', headers)).headers['etag']) })).statusCode,
        ).toBe(200);
      }
    }
    expect(etags.size).toBe(2 * (EXPORT_FORMATS.length + 1));
  });

  it('answers a blocking query in the format asked for', async () => {
    const plain = await get('/?format=mcp', calcUser);
    const index = String(plain.headers['x-registry-index']);
    const held = await get(`/?format=mcp&index=${index}&wait=20ms`, calcUser);
    expect(held.statusCode).toBe(200);
    expect(held.headers['etag']).toBe(plain.headers['etag']);
    expect(held.body).toBe(plain.body);
    expect(
      (await get(`/?format=mcp&index=${index}&wait=20ms`, { ...calcUser, 'if-none-match': String(plain.headers['etag']) })).statusCode,
    ).toBe(304);
  });

  it('builds the bytes once per view: a write changes them', async () => {
    const view = { etag: '"v"', index: 1, tools: [], hidden: 0, length: 2 };
    expect(exportOf(view, 'openai')).toBe(exportOf(view, 'openai'));
    expect(exportOf(view, 'openai').etag).not.toBe(exportOf({ ...view }, 'anthropic').etag);
    const before = await get('/?format=anthropic', calcUser);
    const admin = bearer(handle.token(['registry:write']));
    const added = await handle.app.inject({
      method: 'PUT',
      url: '/tools/added',
      headers: admin,
      payload: httpTool('added', 'calculator:use', { type: 'object', properties: {}, additionalProperties: false }),
    });
    expect(added.statusCode).toBe(201);
    const after = await get('/?format=anthropic', calcUser);
    expect(after.headers['etag']).not.toBe(before.headers['etag']);
    expect(after.json<AnthropicTool[]>().map((t) => t.name)).toContain('added');
    expect((await get('/?format=anthropic', fileUser)).json<AnthropicTool[]>().map((t) => t.name)).not.toContain('added');
  });

  it('refuses an unknown format, naming the formats (paging: exports-pages.test.ts)', async () => {
    const unknown = await get('/?format=gemini', calcUser);
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({ errors: [{ path: 'format' }] });
    for (const format of EXPORT_FORMATS) expect(unknown.body).toContain(format);
  });

  it('rewrites what OpenAI and Anthropic refuse (root combinators, arrays without items, draft-07) and gives an empty view no prompt', async () => {
    const admin = bearer(handle.token(['registry:write']));
    const put = (url: string, payload: Record<string, unknown>) => handle.app.inject({ method: 'PUT', url, headers: admin, payload });
    const ab = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, additionalProperties: false };
    expect(
      (await put('/tools/either', httpTool('either', 'vendor:use', { ...ab, anyOf: [{ required: ['a'] }, { required: ['b'] }] })))
        .statusCode,
    ).toBe(201);
    const tuple = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: { pair: { type: 'array', items: [{ type: 'string' }, { type: 'integer' }], additionalItems: false } },
    };
    expect((await put('/tools/draft7', httpTool('draft7', 'vendor:use', tuple))).statusCode).toBe(201);
    expect((await put('/tool-services/tagger', { id: 'tagger', topic: 'tagger' })).statusCode).toBe(201);
    const busTool = {
      type: 'tool-service',
      description: 'Tags things',
      service: 'tagger',
      scopes: ['vendor:use'],
      arguments: [{ name: 'tags', type: 'array', description: 'tags' }],
    };
    expect((await put('/tools/tag_it', busTool)).statusCode).toBe(201);

    const vendor = bearer(handle.token(['vendor:use']));
    const openai = (await get('/?format=openai', vendor)).json<OpenAiChatTool[]>();
    const parameters = Object.fromEntries(openai.map((t) => [t.function.name, t.function.parameters]));
    expect(parameters['either']).toEqual(ab);
    expect(parameters['tag_it']).toMatchObject({ properties: { tags: { type: 'array', items: {} } } });
    expect(parameters['draft7']).toEqual({
      type: 'object',
      properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: {}, maxItems: 2 } },
    });
    const responses = (await get('/?format=openai-responses', vendor)).json<OpenAiResponsesTool[]>();
    expect(Object.fromEntries(responses.map((t) => [t.name, t.parameters]))).toEqual(parameters);
    const anthropic = Object.fromEntries(
      (await get('/?format=anthropic', vendor)).json<AnthropicTool[]>().map((t) => [t.name, t.input_schema]),
    );
    expect(anthropic['either']).toEqual(ab);
    expect(anthropic['draft7']).toEqual({
      type: 'object',
      properties: { pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false } },
    });
    expect(anthropic['tag_it']).toMatchObject({ properties: { tags: { type: 'array' } } });
    // The registry still serves and checks the schema as registered.
    expect((await get('/tools/either', vendor)).json()).toMatchObject({
      inputSchema: { anyOf: [{ required: ['a'] }, { required: ['b'] }] },
    });

    const nobody = bearer(handle.token(['nothing:here']));
    const prompt = await get('/?format=prompt', nobody);
    expect(prompt.statusCode).toBe(200);
    expect(prompt.body).toBe('');
  });
});
