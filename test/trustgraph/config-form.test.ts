/**
 * Issue 15, "the config, both ways" (no broker): descriptors validated the way the reference
 * agent loads them (trustgraph-flow 2.11.1, agent/react/service.py and agent/tool_filter.py),
 * and the registry's tool services and message-bus tools exported and imported in TrustGraph's
 * config form. test/bus/trustgraph-config.broker.test.ts shows the same against the reference
 * config service, its client and the agent's tool loader.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config.js';
import { topicOfQueueId } from '../../src/model/schemas.js';
import {
  importOfTrustGraph,
  inDumpTerms,
  trustGraphDumpOf,
  trustGraphItemsOf,
  type TrustGraphDump,
} from '../../src/model/trustgraph-config.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

let t: TestApp;
let admin: Record<string, string>;
const tellJoke = seed('tell-joke');

const put = (url: string, payload: unknown) => t.app.inject({ method: 'PUT', url, headers: admin, payload: payload as object });
const register = (payload: unknown) => t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: payload as object });
const importBody = (payload: unknown) => t.app.inject({ method: 'POST', url: '/import', headers: admin, payload: payload as object });
const exported = async (format?: string) =>
  (await t.app.inject({ method: 'GET', url: format ? `/export?format=${format}` : '/export', headers: admin })).json() as Record<
    string,
    unknown
  >;

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0', TRUSTGRAPH_WORKSPACE: 'tools-ws' });
  admin = bearer(t.token(['registry:write']));
  expect((await put('/tool-services/joke-service', seed('joke-service'))).statusCode).toBe(201);
});
afterAll(() => t.close());

describe('issue 15: descriptors the reference agent takes', () => {
  it.each([
    ['group as a string', { group: 'fun' }, 'group', /must be a list of strings/],
    ['group with a number', { group: ['fun', 3] }, 'group.1', /must be a string/],
    ['group as an object', { group: { fun: true } }, 'group', /must be a list of strings/],
    ['state as a list', { state: ['joking'] }, 'state', /must be a string/],
    ['state as a number', { state: 1 }, 'state', /must be a string/],
    ['applicable-states as a string', { 'applicable-states': 'idle' }, 'applicable-states', /must be a list of strings/],
    ['applicable-states with null', { 'applicable-states': ['idle', null] }, 'applicable-states.1', /must be a string/],
  ])('refuses %s with a 400 naming the field (the agent would refuse the whole tool set)', async (_what, hints, path, message) => {
    const res = await register({ ...tellJoke, name: 'hinted', ...hints });
    expect(res.statusCode, res.body).toBe(400);
    const problem = res.json() as { code: string; detail: string; errors: { path: string; message: string }[] };
    expect(problem.code).toBe('TR_ERR_VALIDATION');
    expect(problem.errors).toContainEqual({ path, message: expect.stringMatching(message) });
    expect(problem.detail).toContain(path);
    expect((await t.app.inject({ method: 'GET', url: '/tools/hinted' })).statusCode).toBe(404);
  });

  it('takes the hints in the types the agent checks, and empty lists', async () => {
    const hints = { group: ['fun', 'default'], state: 'joking', 'applicable-states': ['*'] };
    expect((await register({ ...tellJoke, name: 'hinted-ok', ...hints })).statusCode).toBe(201);
    expect((await register({ ...tellJoke, name: 'hinted-empty', group: [], 'applicable-states': [] })).statusCode).toBe(201);
    expect((await t.app.inject({ method: 'GET', url: '/tools/hinted-ok' })).json()).toMatchObject(hints);
  });

  it('passes object and list config values through as JSON, to discovery-free storage and to the service', async () => {
    await put('/tool-services/rag', {
      id: 'rag',
      topic: 'rag',
      'config-params': [{ name: 'filters', required: true }, 'collections', 'limit', 'nothing'],
    });
    const { style: _style, ...joke } = tellJoke;
    const tool = {
      ...joke,
      name: 'rag-query',
      service: 'rag',
      filters: { year: [2024, 2025], tags: { any: ['a'] } },
      collections: ['a', 'b'],
      limit: 5,
      nothing: null,
    };
    const res = await register(tool);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().descriptor).toMatchObject({ filters: tool.filters, collections: tool.collections, limit: 5, nothing: null });
  });

  it('bounds an object config value, and keeps refusing typos', async () => {
    const big = await register({ ...tellJoke, name: 'too-big', style: { text: 'x'.repeat(70_000) } });
    expect(big.statusCode).toBe(400);
    expect(big.json().errors).toContainEqual({ path: 'style', message: expect.stringContaining('at most 65536 characters of JSON') });
    const typo = await register({ ...tellJoke, name: 'typo', styel: 'pun' });
    expect(typo.statusCode).toBe(400);
    expect(typo.json().errors).toContainEqual({ path: 'styel', message: expect.stringContaining('unknown field "styel"') });
  });

  it('takes queue ids as the agent maps them (request:tg:<name>) and stores the topics they name', async () => {
    const res = await put('/tool-services/by-queue-id', {
      'request-queue': 'request:tg:by-queue-id',
      'response-queue': 'response:tg:by-queue-id',
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().descriptor).toMatchObject({
      'request-queue': 'non-persistent://tg/request/by-queue-id',
      'response-queue': 'non-persistent://tg/response/by-queue-id',
    });
    expect(topicOfQueueId('flow:tg:work')).toBe('persistent://tg/flow/work');
    expect(topicOfQueueId('notify:tg:config')).toBe('non-persistent://tg/notify/config');
    expect(topicOfQueueId('request:tg:config:ws1')).toBe('non-persistent://tg/request/config:ws1');
    for (const bad of ['queue:tg:x', 'request:tg', 'request::x', 'request:tg:a/b', 'non-persistent://tg/x'])
      expect(topicOfQueueId(bad), bad).toBeUndefined();
    const wrong = await put('/tool-services/bad-queue', { 'request-queue': 'requests:tg:x', 'response-queue': 'response:tg:x' });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().errors).toContainEqual({ path: 'request-queue', message: expect.stringContaining('request:tg:joke') });
  });

  it('takes the TRUSTGRAPH_* settings, and refuses sync or adoption without a bus', () => {
    const config = loadConfig(
      {},
      { PULSAR_WS_URL: 'ws://127.0.0.1:8080', TRUSTGRAPH_CONFIG_SYNC: 'on', TRUSTGRAPH_CONFIG_REQUEST_QUEUE: 'request:tg:config:ws1' },
    );
    expect(config.trustgraph).toEqual({
      sync: true,
      adopt: false,
      workspace: 'default',
      requestQueue: 'non-persistent://tg/request/config:ws1',
      responseQueue: 'non-persistent://tg/response/config',
      timeoutMs: 10000,
    });
    expect(() => loadConfig({}, { TRUSTGRAPH_CONFIG_SYNC: 'on' })).toThrow(/^TRUSTGRAPH_CONFIG_SYNC: needs PULSAR_WS_URL/);
    expect(() => loadConfig({}, { TRUSTGRAPH_CONFIG_ADOPT: 'yes' })).toThrow(/^TRUSTGRAPH_CONFIG_ADOPT: needs PULSAR_WS_URL/);
    expect(() => loadConfig({}, { TRUSTGRAPH_CONFIG_RESPONSE_QUEUE: 'config' })).toThrow(
      /^TRUSTGRAPH_CONFIG_RESPONSE_QUEUE: must be a Pulsar topic name/,
    );
  });
});

describe("issue 15: export and import in TrustGraph's config form", () => {
  it('exports the tool services and message-bus tools as TrustGraph stores them: type, key, JSON text', async () => {
    await put('/tools/calculator', seed('calculator'));
    const dump = (await exported('trustgraph')) as unknown as TrustGraphDump;
    const bundle = await exported();
    expect(Object.keys(dump)).toEqual(['source_workspace', 'source_version', 'config']);
    expect(dump.source_workspace).toBe('tools-ws');
    expect(Object.keys(dump.config)).toEqual(['tool-service', 'tool']);
    for (const value of [...Object.values(dump.config['tool-service']), ...Object.values(dump.config.tool)])
      expect(typeof value).toBe('string');
    // Every service; message-bus tools only (an HTTP tool has no place in TrustGraph's config).
    const services = bundle['tool-services'] as { id: string }[];
    expect(Object.keys(dump.config['tool-service'])).toEqual(services.map((s) => s.id).sort());
    expect(dump.config.tool['calculator']).toBeUndefined();
    expect(JSON.parse(dump.config['tool-service']['joke-service'] ?? '')).toEqual(services.find((s) => s.id === 'joke-service'));
    expect(JSON.parse(dump.config.tool['hinted-ok'] ?? '')).toMatchObject({
      type: 'tool-service',
      name: 'hinted-ok',
      service: 'joke-service',
      group: ['fun', 'default'],
    });
  });

  it('imports an exported dump again as it is, all or nothing', async () => {
    const dump = await exported('trustgraph');
    const res = await importBody(dump);
    expect(res.statusCode, res.body).toBe(200);
    const summary = res.json() as { toolServices: { replaced: number }; tools: { replaced: number }; skipped: unknown[] };
    expect(summary.toolServices.replaced).toBe(Object.keys((dump as TrustGraphDump).config['tool-service']).length);
    expect(summary.tools.replaced).toBe(Object.keys((dump as TrustGraphDump).config.tool).length);
    expect(summary.skipped).toEqual([]);
  });

  it('imports a hand-made dump: bare form, objects or JSON text, keys standing in for ids and names, other kinds left out', async () => {
    const res = await importBody({
      'tool-service': {
        'tg-jokes': JSON.stringify({
          'request-queue': 'request:tg:tg-jokes',
          'response-queue': 'response:tg:tg-jokes',
          'config-params': ['style'],
        }),
      },
      tool: {
        'tg-joke': {
          type: 'tool-service',
          description: 'Joke',
          service: 'tg-jokes',
          style: { tone: 'dry' },
          arguments: [{ name: 'topic', type: 'string', description: 'Topic' }],
        },
        kq: JSON.stringify({ type: 'knowledge-query', name: 'kq', description: 'Ask', collection: 'c' }),
      },
      prompt: { p1: '{}' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ toolServices: { created: 1 }, tools: { created: 1 } });
    expect(res.json().skipped).toEqual([
      { item: 'tool/kq', reason: expect.stringContaining('"knowledge-query" tool') },
      { item: 'prompt', reason: expect.stringContaining('config type "prompt"') },
    ]);
    const tools = (await exported()).tools as { name: string }[];
    expect(tools.find((tool) => tool.name === 'tg-joke')).toMatchObject({ name: 'tg-joke', service: 'tg-jokes', style: { tone: 'dry' } });
  });

  it('names problems by their path in the dump, and changes nothing', async () => {
    const before = JSON.stringify(await exported());
    const res = await importBody({
      source_workspace: 'default',
      source_version: 1,
      config: {
        'tool-service': { ok: JSON.stringify({ id: 'ok', topic: 'ok' }) },
        tool: {
          fine: JSON.stringify({ type: 'tool-service', name: 'fine', description: 'd', service: 'ok' }),
          broken: JSON.stringify({ type: 'tool-service', name: 'broken', description: 'd', service: 'ok', group: 'fun' }),
          'not-json': '{"type": ',
          renamed: JSON.stringify({ type: 'tool-service', name: 'other', description: 'd', service: 'ok' }),
        },
      },
    });
    expect(res.statusCode).toBe(400);
    const errors = res.json().errors as { path: string }[];
    expect(errors.map((e) => e.path).sort()).toEqual(['config.tool.not-json', 'config.tool.renamed.name']);
    // Conversion problems first; once those are fixed the registry's own checks speak the dump's terms too.
    const second = await importBody({
      config: {
        'tool-service': { ok: JSON.stringify({ id: 'ok', topic: 'ok' }) },
        tool: { broken: JSON.stringify({ type: 'tool-service', name: 'broken', description: 'd', service: 'ok', group: 'fun' }) },
      },
    });
    expect(second.statusCode).toBe(400);
    expect(second.json().errors).toEqual([
      { path: 'config.tool.broken.group', message: expect.stringContaining('must be a list of strings') },
    ]);
    expect(second.json().detail).toContain('config.tool.broken.group');
    expect(JSON.stringify(await exported())).toBe(before);
  });

  it('tells the two forms apart by their keys only', () => {
    expect(trustGraphItemsOf({ 'tool-services': [], tools: [] })).toBeUndefined();
    expect(trustGraphItemsOf({})).toBeUndefined();
    expect(trustGraphItemsOf({ tools: [], config: {} })).toBeUndefined();
    expect(trustGraphItemsOf({ config: { tool: {} } })).toEqual({ items: { tool: {} }, prefix: ['config'] });
    expect(trustGraphItemsOf({ tool: {} })).toEqual({ items: { tool: {} }, prefix: [] });
    expect(
      inDumpTerms(
        [
          { path: 'tools.1.style', message: 'm' },
          { path: 'tools.10', message: 'n' },
          { path: 'x', message: 'o' },
        ],
        { 'tool-services': [], tools: ['a', 'config.tool.b'] },
      ),
    ).toEqual([
      { path: 'config.tool.b.style', message: 'm' },
      { path: 'tools.10', message: 'n' },
      { path: 'x', message: 'o' },
    ]);
    expect(() => importOfTrustGraph({ tool: { x: '{"__proto__": {}}' } }, [], 64)).toThrow(/__proto__/);
    expect(() => importOfTrustGraph({ tool: { x: `${'['.repeat(70)}${']'.repeat(70)}` } }, [], 64)).toThrow(/JSON text of an object/);
    expect(trustGraphDumpOf([], [{ type: 'http', name: 'h' }], 'w', 3)).toEqual({
      source_workspace: 'w',
      source_version: 3,
      config: { 'tool-service': {}, tool: {} },
    });
  });

  it('is what `tool-registry export --format trustgraph` prints', async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
    let stdout = '';
    let stderr = '';
    const io = {
      env: {},
      stdout: (text: string) => void (stdout += text),
      stderr: (text: string) => void (stderr += text),
      readStdin: async () => undefined,
    };
    const token = t.token(['registry:write']);
    expect(await main(['export', '--format', 'trustgraph', '--url', url, '--token', token], io), stderr).toBe(0);
    expect(JSON.parse(stdout)).toEqual(await exported('trustgraph'));
    expect(await main(['export', '--format', 'yaml', '--url', url, '--token', token], io)).not.toBe(0);
    expect(stderr).toContain('--format takes registry or trustgraph');
  });
});
