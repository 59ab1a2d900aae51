/**
 * Announcements turned into registry writes and liveness (src/announce/listener.ts,
 * src/catalog/service-health.ts), on a real app and SQLite file, without a broker: the listener's
 * handle() gets the message text the topic would deliver, a compact JWS signed with a key of the
 * operator's bindings (issue 29). The broker-level path (toolkit and raw announcers, heartbeats
 * over Pulsar, replicas) is in test/bus/announce.broker.test.ts.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AnnouncementListener } from '../../src/announce/listener.js';
import type { SequenceLedger } from '../../src/announce/verify.js';
import { ServiceHealth } from '../../src/catalog/service-health.js';
import { RegistryError } from '../../src/model/errors.js';
import { announcerKey, signAnnouncement, trustedKeys, type BindingInput, type SignedFields } from '../helpers/announcer-keys.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const apps: TestApp[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const t of apps.splice(0)) await t.close();
});

const KEY = announcerKey('weather-bot-1');
const OTHER_KEY = announcerKey('radio-bot-1');
/** The announcer the tests use most: the weather queues, one scope. */
const WEATHER: BindingInput = {
  subject: 'weather-bot',
  keys: [KEY.publicJwk],
  queues: ['non-persistent://tg/*/weather', 'non-persistent://tg/*/weather-*'],
  scopes: ['weather:read'],
};
/** Another announcer, bound to the same queue patterns, to show another owner's queues are refused all the same. */
const RADIO: BindingInput = {
  subject: 'radio-bot',
  keys: [OTHER_KEY.publicJwk],
  queues: ['non-persistent://tg/*/weather', 'non-persistent://tg/*/joke'],
  scopes: ['weather:read'],
};

function listenerFor(
  t: TestApp,
  bindings: BindingInput[],
  warnings: string[],
  sequences?: SequenceLedger,
  now?: () => number,
): AnnouncementListener {
  return new AnnouncementListener({
    ...(now && { now }),
    url: 'ws://127.0.0.1:1',
    topic: 'non-persistent://tg/registry/announcements',
    connectTimeoutMs: 100,
    announcers: trustedKeys(bindings),
    sequences: sequences ?? t.app.store.announcerSequences,
    maxSkewS: 120,
    registry: t.app.registry,
    catalog: t.app.catalog,
    health: t.app.serviceHealth,
    log: { warn: (obj, msg) => warnings.push(`${msg} ${JSON.stringify(obj)}`), info: () => undefined },
    auditRefusal: (entry) => t.app.auditLog.recordRefusal(entry),
  });
}

async function setup(bindings: BindingInput[] = [WEATHER, RADIO]) {
  const t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  apps.push(t);
  const warnings: string[] = [];
  return { t, listener: listenerFor(t, bindings, warnings), warnings };
}

const service = {
  id: 'weather-svc',
  'request-queue': 'non-persistent://tg/request/weather',
  'response-queue': 'non-persistent://tg/response/weather',
};
const tool = (name: string, description = 'Forecasts', extra: object = {}) => ({
  type: 'tool-service',
  name,
  description,
  service: 'weather-svc',
  scopes: ['weather:read'],
  arguments: [{ name: 'city', type: 'string', description: 'where' }],
  ...extra,
});

/** Signs announcements of one announcer process with increasing sequence numbers. */
function announcer(key = KEY, sub = 'weather-bot', instance = 'proc-1') {
  let seq = 0;
  return (tools: object[], extra: Partial<SignedFields> = {}) =>
    signAnnouncement(key, {
      sub,
      instance,
      seq: ++seq,
      service,
      tools: tools as Record<string, unknown>[],
      heartbeatIntervalS: 1,
      ...extra,
    });
}

const auditOf = async (t: TestApp) =>
  (await t.app.inject({ method: 'GET', url: '/audit?action=announcement', headers: bearer(t.token(['registry:write'])) }))
    .json()
    .entries.map((e: { sub: string | null; target: string | null; outcome: string; status: number; detail: string | null }) => [
      e.sub,
      e.target,
      e.outcome,
      e.status,
      e.detail,
    ]);

describe('announcements', () => {
  it('registers what a service announces under its announcer, writes nothing for a repeat, and deletes tools it stops announcing', async () => {
    const { t, listener } = await setup();
    const next = announcer();
    expect(await listener.handle(await next([tool('forecast'), tool('radar')]))).toEqual({ serviceId: 'weather-svc', wrote: 3 });
    const index = t.app.catalog.index;
    expect(t.app.catalog.getTool('forecast')?.record.owner).toBe('announcer:weather-bot');
    expect(t.app.catalog.getService('weather-svc')?.owner).toBe('announcer:weather-bot');
    // A heartbeat repeats the announcement (with the next sequence number): nothing is written.
    expect(await listener.handle(await next([tool('forecast'), tool('radar')]))).toEqual({ serviceId: 'weather-svc', wrote: 0 });
    expect(t.app.catalog.index).toBe(index);
    // A changed description and a dropped tool.
    expect(await listener.handle(await next([tool('forecast', 'Forecasts, hourly')]))).toEqual({ serviceId: 'weather-svc', wrote: 2 });
    expect(t.app.catalog.getTool('radar')).toBeUndefined();
    const listed = await t.app.inject({ method: 'GET', url: '/', headers: bearer(t.token(['weather:read'])) });
    expect(listed.json().tools.map((x: { name: string; description: string }) => `${x.name}: ${x.description}`)).toEqual([
      'forecast: Forecasts, hourly',
    ]);
    const audit = await t.app.inject({ method: 'GET', url: '/audit', headers: bearer(t.token(['registry:write'])) });
    expect(audit.json().entries.map((e: { sub: string; action: string; target: string }) => `${e.sub} ${e.action} ${e.target}`)).toContain(
      'weather-bot tool.delete radar',
    );
  });

  it('refuses the old unsigned form, unknown keys, forged signatures, other typs and malformed messages, writing nothing', async () => {
    const { t, listener, warnings } = await setup();
    const index = t.app.catalog.index;
    // Version 1: JSON with a bearer token that every consumer of the topic could read and replay.
    const legacy = JSON.stringify({
      v: 1,
      token: t.token(['registry:announce'], { sub: 'weather-bot' }),
      service,
      tools: [tool('forecast')],
    });
    expect((await listener.handle(legacy)).refused).toMatch(/unsigned announcement \(version 1, with a bearer token\)/);
    // Signed by a key the bindings do not name.
    const stranger = announcerKey('stranger-1');
    expect(
      (await listener.handle(await signAnnouncement(stranger, { sub: 'weather-bot', seq: 1, service, tools: [tool('forecast')] }))).refused,
    ).toMatch(/no announcer binding names/);
    // A forger who knows the kid but not the key.
    const forger = { ...announcerKey(), kid: KEY.kid };
    expect(
      (await listener.handle(await signAnnouncement(forger, { sub: 'weather-bot', seq: 1, service, tools: [tool('forecast')] }))).refused,
    ).toMatch(/signature was refused/);
    // The announcer's key signed something that is not an announcement (say, a token).
    expect(
      (await listener.handle(await signAnnouncement(KEY, { sub: 'weather-bot', seq: 1, service, tools: [] }, { typ: 'JWT' }))).refused,
    ).toMatch(/typ is not tool-registry-announcement\+jws/);
    // A payload tampered with after signing.
    const good = await signAnnouncement(KEY, { sub: 'weather-bot', seq: 1, service, tools: [tool('forecast')] });
    const [header, , signature] = good.split('.');
    const tampered = Buffer.from(JSON.stringify({ v: 2, sub: 'weather-bot', instance: 'x', seq: 9, iat: 0, service, tools: [] })).toString(
      'base64url',
    );
    expect((await listener.handle(`${header}.${tampered}.${signature}`)).refused).toMatch(/signature was refused/);
    expect((await listener.handle('{"v":1}')).refused).toMatch(/unsigned announcement/);
    expect((await listener.handle('not.a.jws')).refused).toMatch(/not an announcement/);
    expect((await listener.handle(undefined)).refused).toMatch(/not an announcement/);
    expect(t.app.catalog.index).toBe(index);
    // Never the message itself in a log line.
    expect(warnings.join('\n')).not.toContain(good.slice(0, 40));
    expect(warnings.join('\n')).not.toContain(signature);
  });

  it('refuses a replayed announcement and an older sequence number, also after a restart; each process counts on its own', async () => {
    const { t, listener } = await setup();
    const first = await signAnnouncement(KEY, { sub: 'weather-bot', instance: 'proc-1', seq: 5, service, tools: [tool('forecast')] });
    const older = await signAnnouncement(KEY, {
      sub: 'weather-bot',
      instance: 'proc-1',
      seq: 4,
      service,
      tools: [tool('forecast', 'Old')],
    });
    expect(await listener.handle(first)).toEqual({ serviceId: 'weather-svc', wrote: 2 });
    expect((await listener.handle(first)).refused).toMatch(
      /a replay: sequence number 5 of instance proc-1 is not above the last one taken/,
    );
    expect((await listener.handle(older)).refused).toMatch(/a replay: sequence number 4/);
    expect(t.app.catalog.getTool('forecast')?.record.descriptor).toMatchObject({ description: 'Forecasts' });
    // A second process of the same announcer (a replica of the service, or a restart) has its own count.
    const second = await signAnnouncement(KEY, { sub: 'weather-bot', instance: 'proc-2', seq: 1, service, tools: [tool('forecast')] });
    expect(await listener.handle(second)).toEqual({ serviceId: 'weather-svc', wrote: 0 });
    // A registry restart keeps the count: SQLite (migration 014), not memory.
    await t.restart();
    const again = listenerFor(t, [WEATHER], []);
    expect((await again.handle(first)).refused).toMatch(/a replay/);
    expect((await again.handle(second)).refused).toMatch(/a replay/);
    const newer = await signAnnouncement(KEY, { sub: 'weather-bot', instance: 'proc-1', seq: 6, service, tools: [tool('forecast')] });
    expect(await again.handle(newer)).toEqual({ serviceId: 'weather-svc', wrote: 0 });
    expect((await auditOf(t)).filter((e: unknown[]) => e[3] === 409)).toHaveLength(4);
  });

  it('refuses an issued-at beyond ANNOUNCE_MAX_SKEW_S either way, and a subject its key is not bound to', async () => {
    const { t, listener } = await setup();
    const now = Math.floor(Date.now() / 1000);
    const stale = await signAnnouncement(KEY, { sub: 'weather-bot', seq: 1, iat: now - 600, service, tools: [tool('forecast')] });
    expect((await listener.handle(stale)).refused).toMatch(/issued 600 s ago, beyond ANNOUNCE_MAX_SKEW_S \(120 s\)/);
    const ahead = await signAnnouncement(KEY, { sub: 'weather-bot', seq: 2, iat: now + 3600, service, tools: [tool('forecast')] });
    expect((await listener.handle(ahead)).refused).toMatch(/3600 s ahead of this clock/);
    // The weather key cannot speak for the radio announcer.
    const posing = await signAnnouncement(KEY, { sub: 'radio-bot', seq: 3, service, tools: [tool('forecast')] });
    expect((await listener.handle(posing)).refused).toMatch(/names subject "radio-bot", but its key is bound to "weather-bot"/);
    expect(t.app.catalog.getService('weather-svc')).toBeUndefined();
    expect(await auditOf(t)).toEqual([
      ['weather-bot', 'weather-svc', 'denied', 403, 'it names subject "radio-bot", but its key is bound to "weather-bot"'],
      ['weather-bot', 'weather-svc', 'denied', 401, expect.stringMatching(/ahead of this clock/)],
      ['weather-bot', 'weather-svc', 'denied', 401, expect.stringMatching(/600 s ago/)],
    ]);
  });

  it("refuses queues outside the announcer's binding, and another owner's queues even inside it", async () => {
    const { t, listener } = await setup();
    const admin = bearer(t.token(['registry:write']));
    const next = announcer();
    // Outside the binding: the operator's joke queues.
    const outside = await next([], { service: { id: 'weather-svc', topic: 'joke' } });
    expect((await listener.handle(outside)).refused).toMatch(
      /names non-persistent:\/\/tg\/request\/joke and non-persistent:\/\/tg\/response\/joke, which the binding of announcer weather-bot does not grant/,
    );
    // Inside the radio announcer's binding, but an operator's service uses them.
    expect(
      (await t.app.inject({ method: 'PUT', url: '/tool-services/joke-service', headers: admin, payload: seed('joke-service') })).statusCode,
    ).toBe(201);
    const radio = announcer(OTHER_KEY, 'radio-bot');
    const onJoke = await radio([], { service: { id: 'radio-svc', topic: 'joke' } });
    expect((await listener.handle(onJoke)).refused).toMatch(
      /which tool service "joke-service" of an operator uses: an announcement cannot take another owner's queues/,
    );
    // The weather announcer's queues, taken by the radio announcer: refused too.
    expect(await listener.handle(await next([tool('forecast')]))).toEqual({ serviceId: 'weather-svc', wrote: 2 });
    const onWeather = await radio([], { service: { ...service, id: 'radio-svc' } });
    expect((await listener.handle(onWeather)).refused).toMatch(/which tool service "weather-svc" of another announcer uses/);
    expect(t.app.catalog.getService('radio-svc')).toBeUndefined();
    const audit = await auditOf(t);
    expect(audit.map((e: unknown[]) => `${String(e[0])} ${String(e[1])} ${String(e[3])}`)).toEqual([
      'radio-bot radio-svc 409',
      'radio-bot radio-svc 409',
      'weather-bot weather-svc 403',
    ]);
  });

  it('lets two services of one announcer share queues only when its binding says shareQueues; stored ones that share keep working', async () => {
    const { t, listener } = await setup([WEATHER]);
    const next = announcer();
    expect((await listener.handle(await next([tool('forecast')]))).wrote).toBe(2);
    const twin = { ...service, id: 'weather-twin' };
    const refused = await listener.handle(await next([], { service: twin }));
    expect(refused.refused).toMatch(
      /which its service "weather-svc" uses; the binding does not let its services share queues \(shareQueues\)/,
    );
    expect(t.app.catalog.getService('weather-twin')).toBeUndefined();

    // The operator says so: the same announcer, bound with shareQueues.
    await t.restart();
    const sharing = listenerFor(t, [{ ...WEATHER, shareQueues: true }], []);
    const shared = announcer(KEY, 'weather-bot', 'proc-2');
    expect(await sharing.handle(await shared([], { service: twin }))).toEqual({ serviceId: 'weather-twin', wrote: 1 });
    // Without shareQueues again, the services that share already keep working (nothing new is shared).
    await t.restart();
    const strict = listenerFor(t, [WEATHER], []);
    const later = announcer(KEY, 'weather-bot', 'proc-3');
    expect(await strict.handle(await later([], { service: twin }))).toEqual({ serviceId: 'weather-twin', wrote: 0 });
    expect(await strict.handle(await later([tool('forecast')]))).toEqual({ serviceId: 'weather-svc', wrote: 0 });
  });

  it('refuses a tool requiring a scope the announcer was not granted, or none at all unless the binding allows it', async () => {
    const { t, listener } = await setup();
    const next = announcer();
    const ungranted = await next([tool('forecast'), tool('payroll', 'Pays', { scopes: ['weather:read', 'payroll:admin'] })]);
    expect((await listener.handle(ungranted)).refused).toMatch(
      /tool "payroll" requires payroll:admin, which the binding of announcer weather-bot does not grant/,
    );
    const open = await next([tool('forecast', 'Forecasts', { scopes: [] })]);
    expect((await listener.handle(open)).refused).toMatch(
      /tool "forecast" requires no scope \(every caller could call it\).*\(unscopedTools\)/,
    );
    // Refused whole: not even the service, nor the granted tool, is written.
    expect(t.app.catalog.getService('weather-svc')).toBeUndefined();
    expect(t.app.catalog.getTool('forecast')).toBeUndefined();
    // With unscopedTools, a tool for every caller is fine.
    await t.restart();
    const open2 = listenerFor(t, [{ ...WEATHER, unscopedTools: true }], []);
    const fresh = announcer(KEY, 'weather-bot', 'proc-2');
    expect(await open2.handle(await fresh([tool('forecast', 'Forecasts', { scopes: [] })]))).toEqual({
      serviceId: 'weather-svc',
      wrote: 2,
    });
  });

  it('takes the same announcement once on each replica: sequence numbers are per process, never shared', async () => {
    const { t } = await setup();
    // Two ledgers, as two replicas' databases would be.
    const ledger = (): SequenceLedger => {
      const last = new Map<string, number>();
      return {
        advance: (sub, instance, seq) => {
          const key = `${sub} ${instance}`;
          if ((last.get(key) ?? 0) >= seq) return false;
          last.set(key, seq);
          return true;
        },
        prune: () => 0,
      };
    };
    const a = listenerFor(t, [WEATHER], [], ledger());
    const b = listenerFor(t, [WEATHER], [], ledger());
    const message = await announcer()([tool('forecast')]);
    expect((await a.handle(message)).refused).toBeUndefined();
    expect((await b.handle(message)).refused).toBeUndefined();
    expect((await a.handle(message)).refused).toMatch(/a replay/);
    expect((await b.handle(message)).refused).toMatch(/a replay/);
  });

  it('forgets processes unheard for longer than the skew bound, at most once a minute', async () => {
    const { t } = await setup();
    const pruned: number[] = [];
    const rows = t.app.store.announcerSequences;
    const ledger: SequenceLedger = {
      advance: (...args) => rows.advance(...args),
      prune: (iat) => (pruned.push(iat), rows.prune(iat)),
    };
    let nowMs = Date.now();
    const listener = listenerFor(t, [WEATHER], [], ledger, () => nowMs);
    const at = (seconds: number, seq: number, instance: string) =>
      signAnnouncement(KEY, { sub: 'weather-bot', instance, seq, iat: seconds, service, tools: [tool('forecast')] });
    const startS = Math.floor(nowMs / 1000);
    expect((await listener.handle(await at(startS, 1, 'gone'))).refused).toBeUndefined();
    expect((await listener.handle(await at(startS, 1, 'other'))).refused).toBeUndefined();
    expect(pruned).toEqual([startS - 121]);
    // Ten minutes later: the process "gone" is forgotten, and its old message is refused for its age, not taken.
    nowMs += 600_000;
    expect((await listener.handle(await at(startS + 600, 2, 'other'))).refused).toBeUndefined();
    expect(pruned).toEqual([startS - 121, startS + 600 - 121]);
    expect(rows.last('weather-bot', 'gone')).toBeUndefined();
    expect((await listener.handle(await at(startS, 1, 'gone'))).refused).toMatch(/issued 600 s ago/);
  });

  it('takes nothing when the database cannot keep the sequence number, and keeps listening', async () => {
    const { t } = await setup();
    const failing: SequenceLedger = {
      advance: () => {
        throw new RegistryError('TR_ERR_UNAVAILABLE', 'the database is busy; retry shortly', { retryAfterS: 1 });
      },
      prune: () => 0,
    };
    const listener = listenerFor(t, [WEATHER], [], failing);
    const outcome = await listener.handle(await announcer()([tool('forecast')]));
    expect(outcome).toEqual({ serviceId: undefined, refused: 'the database is busy; retry shortly', wrote: 0 });
    expect(t.app.catalog.getService('weather-svc')).toBeUndefined();
    // The next message is handled (the order chain did not break).
    const working = listenerFor(t, [WEATHER], []);
    expect(await working.handle(await announcer()([tool('forecast')]))).toEqual({ serviceId: 'weather-svc', wrote: 2 });
    expect((await listener.handle(await announcer(KEY, 'weather-bot', 'proc-9')([tool('forecast')]))).refused).toMatch(/busy/);
    expect(await auditOf(t)).toContainEqual([null, null, 'error', 503, 'TR_ERR_UNAVAILABLE']);
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
    const radio = announcer(OTHER_KEY, 'radio-bot');
    const over = await radio([{ ...seed('tell-joke'), scopes: ['weather:read'], description: 'hijacked' }], {
      service: seed('joke-service'),
    });
    const outcome = await listener.handle(over);
    expect(outcome.refused).toMatch(/registered by an operator/);
    expect(t.app.catalog.getTool('tell-joke')?.record.descriptor).toMatchObject({ description: seed('tell-joke')['description'] });
    expect(t.app.catalog.getTool('tell-joke')?.record.owner).toBeUndefined();
    expect(t.app.serviceHealth.availability('joke-service')).toEqual({ available: true });
    // Its goodbye changes nothing either.
    await listener.handle(await radio([], { service: seed('joke-service'), goodbye: true }));
    expect(t.app.serviceHealth.available('joke-service')).toBe(true);
    // The attempt is in the audit log, under the announcer.
    expect(await auditOf(t)).toEqual([['radio-bot', 'joke-service', 'invalid', 409, 'TR_ERR_CONFLICT']]);
  });

  it("forgets a service's heartbeats when an operator takes it over or deletes it: an operator's service is always available", async () => {
    const { t, listener } = await setup();
    const admin = bearer(t.token(['registry:write']));
    const next = announcer();
    await listener.handle(await next([tool('forecast')]));
    await listener.handle(await next([tool('forecast')], { goodbye: true }));
    expect(t.app.serviceHealth.available('weather-svc')).toBe(false);
    const heard: boolean[] = [];
    t.app.serviceHealth.onChange((_id, available) => heard.push(available));
    const put = await t.app.inject({ method: 'PUT', url: '/tool-services/weather-svc', headers: admin, payload: service });
    expect(put.statusCode).toBe(200);
    expect(t.app.catalog.getService('weather-svc')?.owner).toBeUndefined();
    expect(t.app.serviceHealth.availability('weather-svc')).toEqual({ available: true });
    expect(heard).toEqual([true]);
    const passing = await t.app.inject({ method: 'GET', url: '/?passing=true', headers: bearer(t.token(['weather:read'])) });
    expect(passing.json().tools.map((x: { name: string }) => x.name)).toEqual(['forecast']);
    // Deleting an announced service forgets it too: registered again by an operator, it is available.
    const radar = {
      ...service,
      id: 'radar-svc',
      'request-queue': 'non-persistent://tg/request/weather-radar',
      'response-queue': 'non-persistent://tg/response/weather-radar',
    };
    expect((await listener.handle(await next([], { service: radar }))).refused).toBeUndefined();
    await listener.handle(await next([], { service: radar, goodbye: true }));
    expect(t.app.serviceHealth.available('radar-svc')).toBe(false);
    expect((await t.app.inject({ method: 'DELETE', url: '/tool-services/radar-svc', headers: admin })).statusCode).toBe(200);
    expect(t.app.serviceHealth.availability('radar-svc')).toEqual({ available: true });
  });

  it('marks a service unavailable after missed heartbeats or a goodbye: hidden with ?passing=true, calls 503 at once', async () => {
    const { t, listener } = await setup();
    const next = announcer();
    await listener.handle(await next([tool('forecast')]));
    const agent = bearer(t.token(['weather:read']));
    const passing = async () =>
      (await t.app.inject({ method: 'GET', url: '/?passing=true', headers: agent })).json().tools.map((x: { name: string }) => x.name);
    expect(await passing()).toEqual(['forecast']);
    await listener.handle(await next([tool('forecast')], { goodbye: true }));
    expect(await passing()).toEqual([]);
    // The full list still has it: ?passing is the filter.
    expect((await t.app.inject({ method: 'GET', url: '/', headers: agent })).json().tools).toHaveLength(1);
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
    await listener.handle(await next([tool('forecast')]));
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
