/**
 * Issue 9, "What must be shown": every write route, fed arbitrary JSON and near-valid
 * descriptors, answers 2xx or a clean 4xx problem (never a 500), and a refused write leaves
 * the database, the export and the catalogue exactly as they were.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  applyMutation,
  callerHeaders,
  callerKind,
  expectCleanAnswer,
  fuzzParams,
  mutationOf,
  nastyValue,
  type MutationOp,
  nastyString,
  pathName,
  PROTOTYPE_NAMES,
  seededApp,
  seedJson,
  state,
  Huge,
  type FuzzApp,
} from './fuzz-support.js';

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/JSON',
  'application/json; charset=latin1',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/merge-patch+json',
  '',
  'application/json;;;',
  '*/*',
];

let t: FuzzApp;
beforeEach(async () => {
  t = await seededApp();
});
afterEach(() => t.close());

interface Write {
  method: 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

/** Sends one write; checks the answer's shape, and that a refusal changed nothing. */
async function checkWrite(write: Write): Promise<number> {
  const before = await state(t);
  const res = await t.app.inject(write);
  expectCleanAnswer(res);
  if (res.statusCode >= 400)
    expect(await state(t), `a refused write (${res.statusCode} ${res.body.slice(0, 300)}) changed nothing`).toEqual(before);
  return res.statusCode;
}

const writeTarget = fc.oneof(
  fc.constant({ method: 'POST' as const, url: '/tools/register' }),
  fc.constant({ method: 'POST' as const, url: '/import' }),
  pathName.map((name) => ({ method: 'PUT' as const, url: `/tools/${name}` })),
  pathName.map((name) => ({ method: 'PUT' as const, url: `/tool-services/${name}` })),
);

/** A body: arbitrary JSON (mostly), or text that is not JSON at all. */
const anyBody = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)), weight: 4 },
  { arbitrary: fc.string(), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      '',
      '{',
      '{"name":',
      '[',
      'nul',
      '{"a":1}{"b":2}',
      '\ufeff{}',
      '{"__proto__":{"admin":true}}',
      '{"constructor":{"prototype":{"x":1}}}',
    ),
    weight: 1,
  },
);

describe('fuzz: write routes', () => {
  it('answer arbitrary JSON with 2xx or a clean 4xx, and refusals change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        writeTarget,
        anyBody,
        fc.constantFrom(...CONTENT_TYPES, 'application/json', 'application/json'),
        callerKind,
        async (target, payload, contentType, caller) => {
          const headers = { ...callerHeaders(t, caller), ...(contentType !== '' && { 'content-type': contentType }) };
          await checkWrite({ ...target, headers, payload });
        },
      ),
      fuzzParams(200),
    );
  });

  it('answer near-valid descriptors (a seed with one field changed) with 2xx or a clean 4xx, and refusals change nothing', async () => {
    const tools = ['calculator', 'weather_forecast', 'tell-joke', 'query-customers'];
    const services = ['joke-service', 'custom-rag', 'joke-service.topic-form'];
    const bundle = { 'tool-services': [seedJson('joke-service')], tools: [seedJson('tell-joke'), seedJson('calculator')] };
    const tool = fc.constantFrom(...tools).chain((name) =>
      fc.record({
        route: fc.constantFrom<'register' | 'put'>('register', 'put'),
        name: fc.constant(name),
        mutation: mutationOf(seedJson(name)),
      }),
    );
    const service = fc
      .constantFrom(...services)
      .chain((file) =>
        fc.record({ route: fc.constant('service' as const), name: fc.constant(file), mutation: mutationOf(seedJson(file)) }),
      );
    const imported = fc.record({ route: fc.constant('import' as const), name: fc.constant('bundle'), mutation: mutationOf(bundle) });

    // The spots that take free-form JSON (JSON Schema keywords of a parameter), where depth is
    // not stopped by a type check: a deep value added there, often.
    const freeForm = fc.record({
      route: fc.constantFrom<'register' | 'put'>('register', 'put'),
      name: fc.constant('calculator'),
      mutation: fc.record({
        op: fc.constant<MutationOp>('add-key'),
        path: fc.constant<(string | number)[]>(['parameters', 'expression']),
        key: fc.constantFrom<string>('default', 'enum', 'items', 'examples', 'properties', '__proto__', 'x-extra'),
        value: nastyValue,
      }),
    });

    await fc.assert(
      fc.asyncProperty(fc.oneof(tool, service, imported, freeForm), async ({ route, name, mutation }) => {
        const base = route === 'import' ? bundle : seedJson(name);
        const payload = applyMutation(base, mutation);
        const headers = { ...t.admin, 'content-type': 'application/json' };
        const target =
          route === 'register'
            ? { method: 'POST' as const, url: '/tools/register' }
            : route === 'put'
              ? { method: 'PUT' as const, url: `/tools/${name}` }
              : route === 'service'
                ? { method: 'PUT' as const, url: `/tool-services/${name.replace('.topic-form', '')}` }
                : { method: 'POST' as const, url: '/import' };
        await checkWrite({ ...target, headers, payload });
      }),
      fuzzParams(300),
    );
  });

  it('answer DELETE of arbitrary names with 2xx or a clean 4xx, and refusals change nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('tools', 'tool-services'), pathName, callerKind, async (collection, name, caller) => {
        await checkWrite({ method: 'DELETE', url: `/${collection}/${name}`, headers: callerHeaders(t, caller) });
      }),
      fuzzParams(150),
    );
  });

  it('keep /, /stats and /export sound after accepted writes that use prototype names as names, scopes and config values', async () => {
    const protoName = fc.constantFrom(...PROTOTYPE_NAMES.filter((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n)));
    const write = fc.oneof(
      fc
        .record({
          name: protoName,
          scopes: fc.array(fc.oneof(fc.constantFrom(...PROTOTYPE_NAMES), fc.constantFrom('calculator:use')), { maxLength: 3 }),
        })
        .map(({ name, scopes }) => ({
          method: 'POST' as const,
          url: '/tools/register',
          payload: JSON.stringify({ name, endpoint: '/x', description: 'd', scopes, parameters: { [name]: { type: 'string' } } }),
        })),
      fc
        .record({
          style: fc.oneof(
            fc.constantFrom(...PROTOTYPE_NAMES),
            nastyString.filter((s): s is string => !(s instanceof Huge)),
          ),
        })
        .map(({ style }) => ({
          method: 'POST' as const,
          url: '/tools/register',
          payload: JSON.stringify({ ...(seedJson('tell-joke') as object), style }),
        })),
      protoName.map((id) => ({
        method: 'PUT' as const,
        url: `/tool-services/${id}`,
        payload: JSON.stringify({ topic: id, 'config-params': [id, 'constructor'] }),
      })),
    );
    await fc.assert(
      fc.asyncProperty(write, async (w) => {
        const status = await checkWrite({ ...w, headers: { ...t.admin, 'content-type': 'application/json' } });
        fc.pre(status < 300);
        for (const headers of [{}, t.agent, t.admin]) {
          const stats = await t.app.inject({ method: 'GET', url: '/stats', headers });
          expect(stats.statusCode).toBe(200);
          const body = stats.json<Record<string, unknown>>();
          for (const field of ['total_tools', 'unique_scopes', 'total_tool_services', 'registry_index', 'total_tool_calls']) {
            expect(typeof body[field], `/stats ${field} is a number: ${stats.body.slice(0, 400)}`).toBe('number');
          }
          for (const [scope, n] of Object.entries(body['scope_usage'] as Record<string, unknown>)) {
            expect(typeof n, `/stats scope_usage[${scope}] is a count: ${JSON.stringify(body['scope_usage'])}`).toBe('number');
          }
          expect(
            Array.isArray(body['tools_by_name']) && (body['tools_by_name'] as unknown[]).length,
            '/stats tools_by_name matches total_tools',
          ).toBe(body['total_tools']);
          expect((await t.app.inject({ method: 'GET', url: '/', headers })).statusCode).toBe(200);
        }
        const exported = await t.app.inject({ method: 'GET', url: '/export', headers: t.admin });
        expect(exported.statusCode).toBe(200);
      }),
      fuzzParams(100),
    );
  });
});
