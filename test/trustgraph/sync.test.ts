/**
 * Issue 15, live sync and adoption (no broker): the requests the registry sends TrustGraph's
 * config service, against an in-memory stand-in that answers them as the reference service does
 * (trustgraph-flow 2.11.1, config/service/config.py: put/delete then a push naming the types the
 * request touched) and an agent that reloads from the types a push names, as the reference one
 * does (base/async_processor.py on_config_notify, agent/react/service.py on_tools_config). The
 * real service, client and loader: test/bus/trustgraph-config.broker.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigRequester } from '../../src/trustgraph/config-client.js';
import { ConfigServiceError } from '../../src/trustgraph/config-client.js';
import { adoptTrustGraphConfig } from '../../src/trustgraph/adopt.js';
import { catalogSource, ConfigSync } from '../../src/trustgraph/config-sync.js';
import {
  planConfigWrites,
  SYNC_MARKER_KEY,
  type ConfigItem,
  type ConfigRequest,
  type ConfigResponse,
} from '../../src/model/trustgraph-config.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

/** TrustGraph's config service and one agent following its pushes, in memory. */
class FakeTrustGraph implements ConfigRequester {
  readonly rows = new Map<string, Map<string, string>>();
  readonly requests: ConfigRequest[] = [];
  /** The agent's tools after each push: names, or the previous set when its reload failed. */
  agentTools: string[] = [];
  agentFailures = 0;
  /** Requests to fail before answering again. */
  failNext = 0;

  constructor(readonly workspace = 'default') {}

  #table(type: string): Map<string, string> {
    let table = this.rows.get(type);
    if (!table) this.rows.set(type, (table = new Map()));
    return table;
  }

  items(type: string): Record<string, unknown> {
    return Object.fromEntries([...this.#table(type)].map(([k, v]) => [k, JSON.parse(v) as unknown]));
  }

  async request(body: ConfigRequest): Promise<ConfigResponse> {
    this.requests.push(structuredClone(body));
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new ConfigServiceError("no answer from TrustGraph's config service in 10 ms");
    }
    expect(body.workspace).toBe(this.workspace);
    if (body.operation === 'getvalues')
      return { version: 1, values: [...this.#table(body.type)].map(([key, value]) => ({ type: body.type, key, value })) };
    const types = new Set<string>();
    if (body.operation === 'put') {
      for (const v of body.values) {
        types.add(v.type);
        this.#table(v.type).set(v.key, v.value);
      }
    } else if (body.operation === 'delete') {
      for (const k of body.keys) {
        types.add(k.type);
        this.#table(k.type).delete(k.key);
      }
    } else throw new Error(`unexpected ${body.operation}`);
    this.#push(types);
    return { version: 1, error: null };
  }

  /** The reference agent's reload from the types the push names. */
  #push(types: ReadonlySet<string>): void {
    if (!types.has('tool') && !types.has('tool-service')) return;
    const services = types.has('tool-service') ? this.#table('tool-service') : new Map<string, string>();
    const tools = types.has('tool') ? this.#table('tool') : new Map<string, string>();
    for (const value of tools.values()) {
      const tool = JSON.parse(value) as { type: string; service?: string };
      if (tool.type === 'tool-service' && !services.has(tool.service ?? '')) {
        this.agentFailures += 1; // "references unknown tool-service": the old set stays
        return;
      }
    }
    this.agentTools = [...tools.keys()].sort();
  }

  close(): void {}
}

const item = (type: 'tool' | 'tool-service', key: string, bytes = 10): ConfigItem => ({ type, key, value: 'x'.repeat(bytes) });

describe('issue 15: planConfigWrites', () => {
  const base = { workspace: 'ws', maxRequestBytes: 10_000 };

  it('puts with an item of both types, so that the push names both', () => {
    const anchors = { 'tool-service': item('tool-service', 's'), tool: item('tool', 'anchor') };
    const { requests } = planConfigWrites({ ...base, puts: [item('tool', 't')], deletes: [], anchors });
    expect(requests).toEqual([
      {
        operation: 'put',
        workspace: 'ws',
        keys: [],
        type: '',
        values: [expect.objectContaining({ key: 't' }), expect.objectContaining({ type: 'tool-service', key: 's' })],
      },
    ]);
    expect(
      planConfigWrites({ ...base, puts: [item('tool-service', 's2')], deletes: [], anchors }).requests[0]?.values.map((v) => v.key),
    ).toEqual(['s2', 'anchor']);
  });

  it('ends with a delete naming both types when a put could not, and beside every real delete', () => {
    const lone = planConfigWrites({ ...base, puts: [item('tool-service', 's')], deletes: [], anchors: {} }).requests;
    expect(lone.map((r) => r.operation)).toEqual(['put', 'delete']);
    expect(lone[1]?.keys).toEqual([
      { type: 'tool-service', key: SYNC_MARKER_KEY },
      { type: 'tool', key: SYNC_MARKER_KEY },
    ]);
    const deleting = planConfigWrites({ ...base, puts: [], deletes: [{ type: 'tool', key: 'gone' }], anchors: {} }).requests;
    expect(deleting).toEqual([
      {
        operation: 'delete',
        workspace: 'ws',
        type: '',
        values: [],
        keys: [
          { type: 'tool', key: 'gone' },
          { type: 'tool-service', key: SYNC_MARKER_KEY },
          { type: 'tool', key: SYNC_MARKER_KEY },
        ],
      },
    ]);
    expect(planConfigWrites({ ...base, puts: [], deletes: [], anchors: {} }).requests).toEqual([]);
  });

  it('splits what does not fit one message, each part with its anchors, and leaves out an item larger than a message', () => {
    const anchors = { 'tool-service': item('tool-service', 's', 100), tool: item('tool', 'a', 100) };
    const puts = Array.from({ length: 40 }, (_, i) => item('tool', `t${i}`, 1000));
    const { requests, tooLarge } = planConfigWrites({ ...base, puts: [...puts, item('tool', 'huge', 20_000)], deletes: [], anchors });
    expect(tooLarge.map((i) => i.key)).toEqual(['huge']);
    expect(requests.length).toBeGreaterThan(4);
    for (const request of requests) {
      expect(Buffer.byteLength(JSON.stringify(request))).toBeLessThanOrEqual(10_000);
      expect(request.values.some((v) => v.type === 'tool-service')).toBe(true);
    }
    expect(requests.flatMap((r) => r.values.filter((v) => v.type === 'tool').map((v) => v.key))).toEqual(puts.map((p) => p.key));
  });
});

describe('issue 15: live sync against a stand-in config service', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let fake: FakeTrustGraph;
  let sync: ConfigSync;
  let unsubscribe: () => void;
  const logs: { level: string; msg: string }[] = [];
  const log = {
    info: (_o: object, msg: string) => void logs.push({ level: 'info', msg }),
    warn: (_o: object, msg: string) => void logs.push({ level: 'warn', msg }),
    error: (_o: object, msg: string) => void logs.push({ level: 'error', msg }),
  };
  const inject = (method: 'PUT' | 'POST' | 'DELETE', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: admin, ...(payload && { payload }) });

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    // Present before the sync starts: written by its first round.
    expect((await inject('PUT', '/tool-services/joke-service', seed('joke-service'))).statusCode).toBe(201);
    expect((await inject('POST', '/tools/register', seed('tell-joke'))).statusCode).toBe(201);
    expect((await inject('PUT', '/tools/calculator', seed('calculator'))).statusCode).toBe(201);
    fake = new FakeTrustGraph();
    sync = new ConfigSync(fake, catalogSource(t.app.catalog), {
      workspace: 'default',
      maxRequestBytes: 700_000,
      log,
      backoff: { minMs: 5, maxMs: 20 },
    });
    unsubscribe = t.app.changes.subscribe(sync.onChange);
    sync.start();
    await sync.whenSynced();
  });
  afterEach(() => {
    fake.failNext = 0;
  });
  afterAll(async () => {
    unsubscribe();
    sync.close();
    await t.close();
  });

  it('writes what the registry held at start: services and message-bus tools, not HTTP tools', () => {
    expect(Object.keys(fake.items('tool-service'))).toEqual(['joke-service']);
    expect(fake.items('tool')).toEqual({ 'tell-joke': t.app.catalog.getTool('tell-joke')?.record.descriptor as object });
    expect(fake.agentTools).toEqual(['tell-joke']);
  });

  it('writes each registration and delete after the commit, and the agent reloads both kinds every time', async () => {
    expect((await inject('PUT', '/tool-services/custom-rag', seed('custom-rag'))).statusCode).toBe(201);
    await sync.whenSynced();
    expect(fake.agentTools).toEqual(['tell-joke']);
    await inject('POST', '/tools/register', seed('query-customers'));
    await inject('POST', '/tools/register', seed('query-products'));
    await sync.whenSynced();
    expect(Object.keys(fake.items('tool')).sort()).toEqual(['query-customers', 'query-products', 'tell-joke']);
    expect(fake.agentTools).toEqual(['query-customers', 'query-products', 'tell-joke']);
    await inject('DELETE', '/tools/query-products');
    await sync.whenSynced();
    expect(Object.keys(fake.items('tool')).sort()).toEqual(['query-customers', 'tell-joke']);
    expect(fake.agentTools).toEqual(['query-customers', 'tell-joke']);
    expect(fake.agentFailures).toBe(0);
  });

  it('deletes a service without leaving the agent without tools', async () => {
    await inject('PUT', '/tool-services/spare', { id: 'spare', topic: 'spare' });
    await sync.whenSynced();
    await inject('DELETE', '/tool-services/spare');
    await sync.whenSynced();
    expect(Object.keys(fake.items('tool-service')).sort()).toEqual(['custom-rag', 'joke-service']);
    expect(fake.agentTools).toEqual(['query-customers', 'tell-joke']);
    expect(fake.agentFailures).toBe(0);
  });

  it('leaves alone a TrustGraph tool named like a registry HTTP tool', async () => {
    fake.rows.get('tool')?.set('calculator', JSON.stringify({ type: 'knowledge-query', name: 'calculator' }));
    await inject('DELETE', '/tools/calculator');
    await sync.whenSynced();
    expect(fake.items('tool')['calculator']).toEqual({ type: 'knowledge-query', name: 'calculator' });
    fake.rows.get('tool')?.delete('calculator');
  });

  it('sends the latest state once when an item changes twice before it is sent', async () => {
    const before = fake.requests.length;
    await Promise.all([
      inject('POST', '/tools/register', { ...seed('tell-joke'), name: 'twice', style: 'one' }),
      inject('PUT', '/tools/twice', { ...seed('tell-joke'), name: 'twice', style: 'two' }),
    ]);
    await sync.whenSynced();
    expect(fake.items('tool')['twice']).toMatchObject({ style: 'two' });
    expect(fake.requests.length - before).toBeLessThanOrEqual(2);
  });

  it('never holds a registry write up; retries with backoff until the service answers, logged and counted', async () => {
    const failures = sync.figures.failures;
    fake.failNext = 3;
    const started = Date.now();
    const res = await inject('POST', '/tools/register', { ...seed('tell-joke'), name: 'while-down' });
    expect(res.statusCode).toBe(201);
    expect(Date.now() - started).toBeLessThan(1000);
    await sync.whenSynced();
    expect(fake.items('tool')['while-down']).toBeDefined();
    expect(sync.figures).toMatchObject({ failures: failures + 3, pending: 0 });
    expect(logs.filter((l) => l.level === 'warn' && l.msg.includes('retrying')).length).toBeGreaterThanOrEqual(3);
    expect(logs.at(-1)).toEqual({ level: 'info', msg: "TrustGraph's config service is written again" });
    expect(fake.agentTools).toContain('while-down');
  });
});

describe('issue 15: adopting what TrustGraph holds', () => {
  it('imports the tool services and tool-service tools the registry lacks, and leaves out, with reasons, what it cannot take', async () => {
    const t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    try {
      const admin = bearer(t.token(['registry:write']));
      await t.app.inject({
        method: 'PUT',
        url: '/tool-services/joke-service',
        headers: admin,
        payload: { ...seed('joke-service'), 'config-params': [] },
      });
      const fake = new FakeTrustGraph('tg');
      const put = (type: string, key: string, value: unknown) =>
        fake.rows.set(type, (fake.rows.get(type) ?? new Map()).set(key, typeof value === 'string' ? value : JSON.stringify(value)));
      put('tool-service', 'joke-service', seed('joke-service')); // held: the registry's stays
      put('tool-service', 'rag', {
        id: 'rag',
        'request-queue': 'request:tg:rag',
        'response-queue': 'response:tg:rag',
        'config-params': [{ name: 'collection', required: true }],
      });
      put('tool-service', 'broken-service', { id: 'broken-service' });
      put('tool', 'ask', {
        type: 'tool-service',
        name: 'ask',
        description: 'Ask',
        service: 'rag',
        collection: { name: 'c', shards: [1, 2] },
        group: ['docs'],
      });
      put('tool', 'grouped-wrong', {
        type: 'tool-service',
        name: 'grouped-wrong',
        description: 'd',
        service: 'rag',
        collection: 'c',
        group: 'docs',
      });
      put('tool', 'on-broken', { type: 'tool-service', name: 'on-broken', description: 'd', service: 'broken-service' });
      put('tool', 'kq', { type: 'knowledge-query', name: 'kq', description: 'd', collection: 'c' });
      put('tool', 'not-json', '{');
      const result = await adoptTrustGraphConfig(fake, t.app.registry, t.app.catalog, { workspace: 'tg', maxDepth: 64 });
      expect(result).toMatchObject({ toolServices: 1, tools: 1, held: 1 });
      expect(result.index).toBe(t.app.catalog.index);
      expect(result.skipped.map((s) => s.item).sort()).toEqual([
        'tool-service/broken-service',
        'tool/grouped-wrong',
        'tool/kq',
        'tool/not-json',
        'tool/on-broken',
      ]);
      expect(result.skipped.find((s) => s.item === 'tool/grouped-wrong')?.reason).toMatch(/group: must be a list of strings/);
      expect(t.app.catalog.lookupService('rag')).toMatchObject({ 'request-queue': 'non-persistent://tg/request/rag' });
      expect(t.app.catalog.lookupService('joke-service')?.['config-params']).toEqual([]);
      expect(t.app.catalog.getTool('ask')?.record.descriptor).toMatchObject({ collection: { name: 'c', shards: [1, 2] }, group: ['docs'] });
      expect(fake.requests.map((r) => [r.operation, r.type])).toEqual([
        ['getvalues', 'tool-service'],
        ['getvalues', 'tool'],
      ]);
      // Nothing new the second time.
      expect(await adoptTrustGraphConfig(fake, t.app.registry, t.app.catalog, { workspace: 'tg', maxDepth: 64 })).toMatchObject({
        index: null,
        held: 3,
      });
    } finally {
      await t.close();
    }
  });
});
