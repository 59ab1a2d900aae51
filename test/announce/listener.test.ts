/**
 * Announcements turned into registry writes and liveness (src/announce/listener.ts,
 * src/catalog/service-health.ts), on a real app and SQLite file, without a broker: the listener's
 * handle() gets the message text the topic would deliver. The broker-level path (toolkit and
 * Python announcers, heartbeats over Pulsar) is in test/bus/announce.broker.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AnnouncementListener } from '../../src/announce/listener.js';
import { ServiceHealth } from '../../src/catalog/service-health.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const apps: TestApp[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const t of apps.splice(0)) await t.close();
});

async function setup() {
  const t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  apps.push(t);
  const warnings: string[] = [];
  const listener = new AnnouncementListener({
    url: 'ws://127.0.0.1:1',
    topic: 'non-persistent://tg/registry/announcements',
    scope: 'registry:announce',
    connectTimeoutMs: 100,
    registry: t.app.registry,
    catalog: t.app.catalog,
    health: t.app.serviceHealth,
    verifyToken: (token) => t.app.verifyToken(token),
    log: { warn: (obj, msg) => warnings.push(`${msg} ${JSON.stringify(obj)}`), info: () => undefined },
    auditRefusal: (entry) => t.app.auditLog.recordRefusal(entry),
  });
  return { t, listener, warnings };
}

const service = {
  id: 'weather-svc',
  'request-queue': 'non-persistent://tg/request/weather',
  'response-queue': 'non-persistent://tg/response/weather',
};
const tool = (name: string, description = 'Forecasts') => ({
  type: 'tool-service',
  name,
  description,
  service: 'weather-svc',
  arguments: [{ name: 'city', type: 'string', description: 'where' }],
});
const announcement = (token: string, tools: object[], extra: object = {}) =>
  JSON.stringify({ v: 1, token, service, tools, heartbeatIntervalS: 1, ...extra });

describe('announcements', () => {
  it('registers what a service announces under its announcer, writes nothing for a repeat, and deletes tools it stops announcing', async () => {
    const { t, listener } = await setup();
    const token = t.token(['registry:announce'], { sub: 'weather-bot' });
    expect(await listener.handle(announcement(token, [tool('forecast'), tool('radar')]))).toEqual({ serviceId: 'weather-svc', wrote: 3 });
    const index = t.app.catalog.index;
    expect(t.app.catalog.getTool('forecast')?.record.owner).toBe('announcer:weather-bot');
    expect(t.app.catalog.getService('weather-svc')?.owner).toBe('announcer:weather-bot');
    // A heartbeat repeats the announcement: nothing is written.
    expect(await listener.handle(announcement(token, [tool('forecast'), tool('radar')]))).toEqual({ serviceId: 'weather-svc', wrote: 0 });
    expect(t.app.catalog.index).toBe(index);
    // A changed description and a dropped tool.
    expect(await listener.handle(announcement(token, [tool('forecast', 'Forecasts, hourly')]))).toEqual({
      serviceId: 'weather-svc',
      wrote: 2,
    });
    expect(t.app.catalog.getTool('radar')).toBeUndefined();
    const listed = await t.app.inject({ method: 'GET', url: '/' });
    expect(listed.json().tools.map((x: { name: string; description: string }) => `${x.name}: ${x.description}`)).toEqual([
      'forecast: Forecasts, hourly',
    ]);
    const audit = await t.app.inject({ method: 'GET', url: '/audit', headers: bearer(t.token(['registry:write'])) });
    expect(audit.json().entries.map((e: { sub: string; action: string; target: string }) => `${e.sub} ${e.action} ${e.target}`)).toContain(
      'weather-bot tool.delete radar',
    );
  });

  it('refuses tokens without the scope, forged tokens and malformed messages, writing nothing', async () => {
    const { t, listener, warnings } = await setup();
    const index = t.app.catalog.index;
    expect((await listener.handle(announcement(t.token(['registry:write'], { sub: 'x' }), [tool('forecast')]))).refused).toMatch(
      /lacks scope registry:announce/,
    );
    const forged = `${t.token(['registry:announce'], { sub: 'x' }).slice(0, -4)}AAAA`;
    expect((await listener.handle(announcement(forged, [tool('forecast')]))).refused).toMatch(/token was refused/);
    expect((await listener.handle('{"v":1}')).refused).toMatch(/not an announcement/);
    expect((await listener.handle(undefined)).refused).toMatch(/not an announcement/);
    expect(t.app.catalog.index).toBe(index);
    // Never the token itself in a log line.
    expect(warnings.join('\n')).not.toContain(forged.slice(0, 40));
  });

  it("never writes over an operator's tool or service, and never makes an operator's service unavailable", async () => {
    const { t, listener } = await setup();
    const admin = bearer(t.token(['registry:write']));
    expect(
      (await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') })).statusCode,
    ).toBe(201);
    expect((await t.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('tell-joke') })).statusCode).toBe(
      201,
    );
    const token = t.token(['registry:announce'], { sub: 'intruder' });
    const over = JSON.stringify({
      v: 1,
      token,
      service: seed('joke-service'),
      tools: [{ ...seed('tell-joke'), description: 'hijacked' }],
      heartbeatIntervalS: 1,
    });
    const outcome = await listener.handle(over);
    expect(outcome.refused).toMatch(/registered by an operator/);
    expect(t.app.catalog.getTool('tell-joke')?.record.descriptor).toMatchObject({ description: seed('tell-joke')['description'] });
    expect(t.app.catalog.getTool('tell-joke')?.record.owner).toBeUndefined();
    expect(t.app.serviceHealth.availability('joke-service')).toEqual({ available: true });
    // Its goodbye changes nothing either.
    await listener.handle(JSON.stringify({ v: 1, token, service: seed('joke-service'), goodbye: true }));
    expect(t.app.serviceHealth.available('joke-service')).toBe(true);
    // The attempt is in the audit log, under the announcer, as are refused tokens.
    await listener.handle(announcement(t.token(['registry:write'], { sub: 'unscoped' }), [tool('forecast')]));
    const audit = await t.app.inject({ method: 'GET', url: '/audit?action=announcement', headers: admin });
    expect(
      audit
        .json()
        .entries.map((e: { sub: string; target: string; outcome: string; status: number; detail: string | null }) => [
          e.sub,
          e.target,
          e.outcome,
          e.status,
          e.detail,
        ]),
    ).toEqual([
      ['unscoped', 'weather-svc', 'denied', 403, null],
      ['intruder', 'joke-service', 'invalid', 409, 'TR_ERR_CONFLICT'],
    ]);
  });

  it("forgets a service's heartbeats when an operator takes it over or deletes it: an operator's service is always available", async () => {
    const { t, listener } = await setup();
    const admin = bearer(t.token(['registry:write']));
    const token = t.token(['registry:announce'], { sub: 'weather-bot' });
    await listener.handle(announcement(token, [tool('forecast')]));
    await listener.handle(announcement(token, [tool('forecast')], { goodbye: true }));
    expect(t.app.serviceHealth.available('weather-svc')).toBe(false);
    const heard: boolean[] = [];
    t.app.serviceHealth.onChange((_id, available) => heard.push(available));
    const put = await t.app.inject({ method: 'PUT', url: '/tool-services/weather-svc', headers: admin, payload: service });
    expect(put.statusCode).toBe(200);
    expect(t.app.catalog.getService('weather-svc')?.owner).toBeUndefined();
    expect(t.app.serviceHealth.availability('weather-svc')).toEqual({ available: true });
    expect(heard).toEqual([true]);
    const passing = await t.app.inject({ method: 'GET', url: '/?passing=true' });
    expect(passing.json().tools.map((x: { name: string }) => x.name)).toEqual(['forecast']);
    // Deleting an announced service forgets it too: registered again by an operator, it is available.
    await listener.handle(JSON.stringify({ v: 1, token, service: { ...service, id: 'radar-svc' }, tools: [], heartbeatIntervalS: 1 }));
    await listener.handle(JSON.stringify({ v: 1, token, service: { ...service, id: 'radar-svc' }, goodbye: true }));
    expect(t.app.serviceHealth.available('radar-svc')).toBe(false);
    expect((await t.app.inject({ method: 'DELETE', url: '/tool-services/radar-svc', headers: admin })).statusCode).toBe(200);
    expect(t.app.serviceHealth.availability('radar-svc')).toEqual({ available: true });
  });

  it('marks a service unavailable after missed heartbeats or a goodbye: hidden with ?passing=true, calls 503 at once', async () => {
    const { t, listener } = await setup();
    const token = t.token(['registry:announce'], { sub: 'weather-bot' });
    await listener.handle(announcement(token, [tool('forecast')]));
    const agent = bearer(t.token([]));
    const passing = async () =>
      (await t.app.inject({ method: 'GET', url: '/?passing=true' })).json().tools.map((x: { name: string }) => x.name);
    expect(await passing()).toEqual(['forecast']);
    await listener.handle(announcement(token, [tool('forecast')], { goodbye: true }));
    expect(await passing()).toEqual([]);
    // The full list still has it: ?passing is the filter.
    expect((await t.app.inject({ method: 'GET', url: '/' })).json().tools).toHaveLength(1);
    const call = await t.app.inject({ method: 'POST', url: '/tools/forecast/invoke', headers: agent, payload: { city: 'Oslo' } });
    expect(call.statusCode).toBe(503);
    expect(call.json()).toMatchObject({
      code: 'TR_ERR_BUS_UNAVAILABLE',
      detail: 'forecast cannot be reached now: its tool service said goodbye',
    });
    expect(call.headers['retry-after']).toBe('1');
    // Counted as a call the bus could not carry, as /stats counts every call whatever its outcome.
    const stats = (await t.app.inject({ method: 'GET', url: '/stats', headers: bearer(t.token(['registry:write'])) })).json();
    expect(stats).toMatchObject({ usage_by_tool: { forecast: 1 }, errors_by_class: { unavailable: 1 } });
    // It comes back with its next heartbeat.
    await listener.handle(announcement(token, [tool('forecast')]));
    expect(await passing()).toEqual(['forecast']);
  });
});

describe('service health', () => {
  it('lapses after three missed heartbeats and tells its listeners, once', () => {
    vi.useFakeTimers({ now: 0 });
    const health = new ServiceHealth(() => Date.now());
    const heard: string[] = [];
    health.onChange((id, available) => heard.push(`${id} ${available}`));
    expect(health.available('never-announced')).toBe(true);
    health.beat('svc', 2);
    vi.advanceTimersByTime(5_900);
    expect(health.available('svc')).toBe(true);
    vi.advanceTimersByTime(200);
    expect(health.available('svc')).toBe(false);
    expect(heard).toEqual(['svc false']);
    health.beat('svc', 2);
    expect(heard).toEqual(['svc false', 'svc true']);
    health.gone('svc');
    health.gone('svc');
    expect(heard).toEqual(['svc false', 'svc true', 'svc false']);
    health.close();
  });
});
