/**
 * The discovery article's scenario end to end: its four tools plus weather_forecast registered
 * at runtime, three agents with their tokens, the anonymous caller, and /stats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { ARTICLE_TOOLS, seed } from '../helpers/fixtures.js';

const names = (body: string) => (JSON.parse(body) as { tools: { name: string }[] }).tools.map((t) => t.name);

describe('the discovery article scenario', () => {
  let t: TestApp;
  let admin: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = t.token(['registry:write'], { sub: 'operator' });
    for (const name of ARTICLE_TOOLS) {
      const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(admin), payload: seed(name) });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(() => t.close());

  it('shows every tool to the anonymous caller, in name order, in the article shape', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['service', 'protocol', 'tools']);
    expect(names(res.body)).toEqual(['calculator', 'database_query', 'file_reader', 'simulation_data']);
    const calculator = body.tools[0];
    expect(calculator).toMatchObject({
      ...seed('calculator'),
      host: 'localhost',
      port: 8002,
      kind: 'http',
      status: 'active',
      inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    });
    expect(typeof calculator.index).toBe('number');
    expect(Date.parse(calculator.updatedAt)).not.toBeNaN();
  });

  it.each([
    ['planner', [], []],
    ['hacker', ['simulation:read', 'file_reader:use'], ['file_reader', 'simulation_data']],
    ['safecracker', ['calculator:use'], ['calculator']],
  ])('shows %s exactly its tools', async (agent, scopes, expected) => {
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(t.token(scopes, { sub: agent })) });
    expect(res.statusCode).toBe(200);
    expect(names(res.body)).toEqual(expected);
  });

  it('gives the article /stats figures', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/stats' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      total_tools: 4,
      tools_by_name: ['calculator', 'database_query', 'file_reader', 'simulation_data'],
      scope_usage: { 'calculator:use': 1, 'file_reader:use': 1, 'database:read': 1, 'simulation:read': 1 },
      unique_scopes: 4,
      tools_by_kind: { http: 4, 'tool-service': 0 },
      total_tool_services: 0,
      total_tool_calls: 0,
      usage_by_tool: {},
      most_used_tool: null,
    });
  });

  it('lists weather_forecast registered at runtime in the next GET /, without restart', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(admin), payload: seed('weather_forecast') });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      name: 'weather_forecast',
      kind: 'http',
      status: 'active',
      descriptor: { endpoint: '/tools/weather' },
    });
    const anonymous = await t.app.inject({ method: 'GET', url: '/' });
    expect(names(anonymous.body)).toContain('weather_forecast');
    const weather = await t.app.inject({ method: 'GET', url: '/', headers: bearer(t.token(['weather:read'])) });
    expect(names(weather.body)).toEqual(['weather_forecast']);
    const stats = (await t.app.inject({ method: 'GET', url: '/stats' })).json();
    expect(stats.total_tools).toBe(5);
    expect(stats.scope_usage['weather:read']).toBe(1);
    expect(stats.unique_scopes).toBe(5);
  });

  it("registers the article's curl example, which leaves out parameters and returns", async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: { ...bearer(admin), 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'new_tool', endpoint: '/tools/new', scopes: ['new_tool:use'], description: 'A brand new tool' }),
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().descriptor).toMatchObject({ parameters: {}, returns: '', host: 'localhost', port: 8002 });
  });

  it('answers 200 with the stored descriptor when a tool is replaced', async () => {
    const changed = { ...seed('calculator'), description: 'Evaluate arithmetic' };
    const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(admin), payload: changed });
    expect(res.statusCode).toBe(200);
    expect(res.json().descriptor.description).toBe('Evaluate arithmetic');
    const one = await t.app.inject({ method: 'GET', url: '/tools/calculator' });
    expect(one.json().description).toBe('Evaluate arithmetic');
  });
});
