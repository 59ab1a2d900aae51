/**
 * Issue 29, replication messages authenticated: a replica applies only messages MACed under a
 * key it holds and stamped at most MAX_STAMP_AHEAD_MS ahead of when the broker took them. Any
 * other is refused on every replica alike (nothing applied, audited once, counted, in /readyz
 * and the metrics), and passed over, so the writes after it still apply. Over an in-process
 * topic (fake-topic.ts); the same over a real broker: test/bus/replication-auth.broker.test.ts.
 */
import { createSecretKey, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RegistryError } from '../../src/model/errors.js';
import { ReplicationKeys } from '../../src/replication/message-auth.js';
import { indexOf } from '../../src/replication/message-id.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { replicationKey, replicationKeyFile } from '../helpers/replication-key.js';
import { KEY, POLLING, Replicas, type Running } from './running.js';
import { TOPIC, tool } from './support.js';
import { parseToolPutBody } from '../../src/json-schema/tool-schemas.js';

const replicas = new Replicas();
const apps: TestApp[] = [];
afterEach(async () => {
  for (const t of apps.splice(0)) await t.close();
  await replicas.close();
});

const YEAR_MS = 365 * 86_400_000;
const lastIndex = () => indexOf(replicas.topic.entries.at(-1)!.messageId);
/** A tool.put as another writer would publish it. */
const put = (name: string, at = new Date().toISOString()) =>
  JSON.stringify({ v: 1, op: 'tool.put', write: `w-${name}`, origin: 'elsewhere', at, target: name, body: tool(name) });
const refusedAudit = (r: Running) => r.audit.list({ limit: 100, action: 'replication.refused' });

describe('replication messages authenticated (issue 29)', () => {
  it('refuses a forged, an unsigned, an altered and a year-ahead message on every replica, applies none, and applies the write after them', async () => {
    await replicas.startTopic();
    const a = await replicas.start('a');
    const b = await replicas.start('b');
    replicas.append(put('forged'), createSecretKey(randomBytes(32)));
    replicas.append(put('unsigned'), null);
    replicas.topic.append(put('altered'), 'test', new ReplicationKeys(KEY).sign(TOPIC, Buffer.from(put('original'))));
    replicas.append(put('ahead', new Date(Date.now() + YEAR_MS).toISOString()));
    const lastRefused = lastIndex();
    const after = await a.replicator.putTool(parseToolPutBody(tool('after')));
    expect(after.created).toBe(true);
    await vi.waitUntil(() => b.catalog.getTool('after') !== undefined, POLLING);
    for (const r of [a, b]) {
      const id = r.replicator.state.replica;
      for (const name of ['forged', 'unsigned', 'altered', 'original', 'ahead'])
        expect(r.catalog.getTool(name), `${id}: ${name}`).toBeUndefined();
      expect(r.replicator.state.refused, id).toMatchObject({
        count: 4,
        last: { index: lastRefused, reason: 'stamp-ahead', detail: expect.stringMatching(/fix the clock/) },
      });
      expect(r.replicator.state.failed).toBeUndefined();
      expect([...r.replicator.refusals]).toEqual([
        ['unknown-key', 1],
        ['unsigned', 1],
        ['bad-mac', 1],
        ['stamp-ahead', 1],
      ]);
      // Audited on each replica, newest first, with why and which message.
      expect(refusedAudit(r).map((e) => [e.target, e.outcome, e.status, e.detail?.split(':')[0]])).toEqual([
        [String(lastRefused), 'invalid', 400, 'stamp-ahead'],
        [String(lastRefused - 1), 'denied', 401, 'bad-mac'],
        [String(lastRefused - 2), 'denied', 401, 'unsigned'],
        [String(lastRefused - 3), 'denied', 401, 'unknown-key'],
      ]);
      // The year-ahead stamp moved no clock: the write after it is stamped now.
      expect(Date.parse(r.catalog.getTool('after')!.record.updatedAt)).toBeLessThan(Date.now() + 60_000);
      expect(r.logs.join('\n')).toMatch(/replication: refused a message, not applied: the message is signed with key id/);
    }
    expect(a.catalog.view({ kind: 'all' }).etag).toBe(b.catalog.view({ kind: 'all' }).etag);

    // The position moved past them with their audit entries: a restart neither reads nor audits them again.
    replicas.stop(b);
    const again = await replicas.start('b', { dir: b.dir });
    expect(again.replicator.state.refused.count).toBe(0);
    expect(refusedAudit(again)).toHaveLength(4);
    expect(again.catalog.getTool('after')).toBeDefined();
  });

  it("refuses everywhere the writes of a replica whose clock is ahead of the broker's, and tells its caller to fix the clock", async () => {
    await replicas.startTopic();
    const a = await replicas.start('a');
    const b = await replicas.start('b');
    replicas.topic.clockOffsetMs = -10 * 60_000;
    const refused = await a.replicator.putTool(parseToolPutBody(tool('early'))).then(
      () => undefined,
      (err: unknown) => err as RegistryError,
    );
    expect(refused).toMatchObject({
      code: 'TR_ERR_UNAVAILABLE',
      message: expect.stringMatching(/^every replica refused this write: .*600 s ahead of when the broker took it.*fix the clock/),
    });
    await vi.waitUntil(() => b.replicator.state.refused.count === 1, POLLING);
    for (const r of [a, b]) expect(r.catalog.getTool('early')).toBeUndefined();
    // Within the bound, writes go.
    replicas.topic.clockOffsetMs = -60_000;
    await expect(a.replicator.putTool(parseToolPutBody(tool('on-time')))).resolves.toMatchObject({ created: true });
    await vi.waitUntil(() => b.catalog.getTool('on-time') !== undefined, POLLING);
  });

  it('applies messages without a MAC only as REPLICATION_ACCEPT_UNSIGNED says: up to an index, all, or none', async () => {
    await replicas.startTopic();
    replicas.append(put('history'), null);
    const upgrade = lastIndex();
    const writer = await replicas.start('writer');
    await writer.replicator.putTool(parseToolPutBody(tool('signed')));
    replicas.append(put('late'), null);
    replicas.append(put('late-forged'), createSecretKey(randomBytes(32)));
    const end = lastIndex();
    const through = await replicas.start('through', { acceptUnsignedThrough: upgrade });
    const all = await replicas.start('all', { acceptUnsignedThrough: Infinity });
    const none = await replicas.start('none');
    for (const r of [through, all, none]) await vi.waitUntil(() => r.store.replicationPosition()?.index === end, POLLING);
    const names = (r: Running) => ['history', 'signed', 'late', 'late-forged'].filter((n) => r.catalog.getTool(n) !== undefined);
    expect(names(through)).toEqual(['history', 'signed']);
    expect(names(all)).toEqual(['history', 'signed', 'late']);
    expect(names(none)).toEqual(['signed']);
    expect(names(writer)).toEqual(['signed']);
    // A MAC that is there is checked, whatever the setting.
    expect(all.replicator.state.refused.last).toMatchObject({ reason: 'unknown-key', index: end });
  });

  it('rotates the key across replicas: the new key beside the old, signing with the new, then the old retired', async () => {
    await replicas.startTopic();
    const old = KEY;
    const next = createSecretKey(randomBytes(32));
    const a = await replicas.start('a', { secretKey: old, acceptedKeys: [next] });
    const b = await replicas.start('b', { secretKey: next, acceptedKeys: [old] });
    await a.replicator.putTool(parseToolPutBody(tool('by-old')));
    await b.replicator.putTool(parseToolPutBody(tool('by-next')));
    for (const r of [a, b])
      await vi.waitUntil(() => r.catalog.getTool('by-old') !== undefined && r.catalog.getTool('by-next') !== undefined, POLLING);
    // A replica that holds only the new key refuses what the old one signed (the retired key's messages on the topic).
    const retired = await replicas.start('retired', { secretKey: next });
    await vi.waitUntil(() => retired.catalog.getTool('by-next') !== undefined, POLLING);
    expect(retired.catalog.getTool('by-old')).toBeUndefined();
    expect(retired.replicator.state.refused.last?.reason).toBe('unknown-key');
  });

  it('over HTTP: /readyz names the refusals, the metrics count them by reason, GET /audit lists them', async () => {
    await replicas.startTopic();
    const t = await createTestApp({
      PULSAR_WS_URL: replicas.topic.url,
      REPLICATION_TOPIC: TOPIC,
      REPLICA_ID: 'web',
      REPLICATION_SECRET_FILE: replicationKeyFile(),
    });
    apps.push(t);
    await t.app.replication?.caughtUp();
    replicas.append(put('forged'), createSecretKey(randomBytes(32)));
    replicas.append(put('ahead', new Date(Date.now() + YEAR_MS).toISOString()), replicationKey());
    await vi.waitUntil(() => t.app.replication?.state.refused.count === 2, POLLING);
    const ready = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode, 'refusals do not make a replica unready').toBe(200);
    expect(ready.json()).toMatchObject({
      replication: {
        replica: 'web',
        refused: { count: 2, last: { index: lastIndex(), reason: 'stamp-ahead', messageId: expect.any(String), at: expect.any(String) } },
      },
    });
    const admin = bearer(t.token(['registry:write']));
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics', headers: admin });
    expect(metrics.body).toContain('tool_registry_replication_refused_total{reason="unknown-key"} 1');
    expect(metrics.body).toContain('tool_registry_replication_refused_total{reason="stamp-ahead"} 1');
    expect(metrics.body).toContain('tool_registry_replication_refused_total{reason="bad-mac"} 0');
    const audit = await t.app.inject({ method: 'GET', url: '/audit?action=replication.refused', headers: admin });
    expect(audit.statusCode).toBe(200);
    expect((audit.json() as { entries: { detail: string }[] }).entries.map((e) => e.detail.split(':')[0])).toEqual([
      'stamp-ahead',
      'unknown-key',
    ]);
    expect((await t.app.inject({ method: 'GET', url: '/tools/forged' })).statusCode).toBe(404);
  });
});
