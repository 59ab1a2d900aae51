/**
 * Replicated mode's apply path without a broker (src/registry/replicated-apply.ts
 * ReplicatedApply.apply, src/store/registry-store.ts): the same messages applied to two replicas'
 * databases give the same records, indexes, times and discovery bytes; refusals are decided the
 * same way and still move the position; the position is saved with the writes and survives a
 * reopen. The broker-level behaviour is in test/bus/replication.broker.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type RegistryError } from '../../src/model/errors.js';
import type { ReplicationEvent } from '../../src/model/replication.js';
import type { Outcome, Pin } from '../../src/registry/registry-service.js';
import { serviceRecordRepresentation, toolRecordRepresentation } from '../../src/catalog/record-etag.js';
import { seed } from '../helpers/fixtures.js';
import { message, openReplica, removeReplicaDirs, tool, TOPIC, type TestReplica } from './support.js';

afterEach(removeReplicaDirs);

async function applyAll(r: TestReplica, messages: { event: ReplicationEvent; pin: Pin }[]): Promise<Outcome[]> {
  return Promise.all(messages.map(({ event, pin }) => r.service.applyReplicated(event, pin)));
}

describe('replicated apply', () => {
  it('gives two replicas the same records, indexes, times and discovery bytes, refusals included', async () => {
    const messages = [
      message({ op: 'tool.put', body: tool('alpha') }),
      message({ op: 'tool-service.put', target: 'joke-service', body: seed('joke-service') }),
      message({ op: 'tool.put', body: seed('tell-joke') }),
      // Refused on every replica: the service is in use.
      message({ op: 'tool-service.delete', target: 'joke-service' }),
      // A clock that stepped back: stamped with the last time given out, everywhere.
      message({ op: 'tool.put', target: 'beta', body: tool('beta', { scopes: ['s:one'] }) }, '2026-11-30T09:00:00.000Z'),
      message({ op: 'tool.delete', target: 'alpha' }),
      // Refused: malformed.
      message({ op: 'tool.put', body: { name: 'bad' } }),
      message({ op: 'tool.delete', target: 'never-was' }),
    ];
    const a = openReplica();
    const b = openReplica();
    const outcomesA = await applyAll(a, messages);
    // The second replica gets them in smaller bursts: batching must not change anything.
    const outcomesB: Outcome[] = [];
    for (const m of messages) outcomesB.push(await b.service.applyReplicated(m.event, m.pin));
    const shape = (o: Outcome) => (o.ok ? 'ok' : (o.error as RegistryError).code);
    expect(outcomesA.map(shape)).toEqual(['ok', 'ok', 'ok', 'TR_ERR_IN_USE', 'ok', 'ok', 'TR_ERR_VALIDATION', 'TR_ERR_NOT_FOUND']);
    expect(outcomesB.map(shape)).toEqual(outcomesA.map(shape));

    const last = messages.at(-1)!.pin;
    for (const r of [a, b]) {
      expect(r.catalog.index).toBe(messages[5]!.pin.index); // the last write that changed something
      expect(r.store.replicationPosition()).toMatchObject({ topic: TOPIC, messageId: last.messageId, index: last.index });
      expect(r.store.getTool('beta')).toMatchObject({ index: messages[4]!.pin.index, updatedAt: '2026-11-30T10:00:00.000Z' });
      expect(r.store.getTool('alpha')).toMatchObject({ status: 'deleted', index: messages[5]!.pin.index });
    }
    const view = (r: TestReplica) => r.catalog.view({ kind: 'all' });
    expect(view(a).etag).toBe(view(b).etag);
    expect(Buffer.compare(view(a).body, view(b).body)).toBe(0);
    const rows = (r: TestReplica) =>
      r.db.prepare('SELECT name, status, create_index, modify_index, updated_at, descriptor FROM tools ORDER BY name').all();
    expect(rows(a)).toEqual(rows(b));
    const changes = (r: TestReplica) => r.db.prepare('SELECT registry_index, kind, name, op FROM changes ORDER BY seq').all();
    expect(changes(a)).toEqual(changes(b));
  });

  it("checks a write's If-Match where it is applied, alike on every replica", async () => {
    const first = message({ op: 'tool.put', target: 'cond', body: tool('cond') });
    const a = openReplica();
    const b = openReplica();
    await applyAll(a, [first]);
    await applyAll(b, [first]);
    const etag = toolRecordRepresentation(a.store.getTool('cond')!).etag;
    expect(toolRecordRepresentation(b.store.getTool('cond')!).etag).toBe(etag);
    // Two writers read the same tool; both send their change conditional on it: one wins.
    const messages = [
      message({ op: 'tool.put', target: 'cond', body: tool('cond', { description: 'first writer' }), condition: { ifMatch: [etag] } }),
      message({ op: 'tool.put', target: 'cond', body: tool('cond', { description: 'second writer' }), condition: { ifMatch: [etag] } }),
      message({ op: 'tool.put', target: 'cond', body: tool('cond'), condition: { ifNoneMatch: '*' } }),
      message({ op: 'tool.delete', target: 'cond', condition: { ifMatch: [etag] } }),
    ];
    const shape = (o: Outcome) => (o.ok ? 'ok' : (o.error as RegistryError).code);
    for (const r of [a, b]) {
      expect((await applyAll(r, messages)).map(shape)).toEqual([
        'ok',
        'TR_ERR_PRECONDITION_FAILED',
        'TR_ERR_PRECONDITION_FAILED',
        'TR_ERR_PRECONDITION_FAILED',
      ]);
      expect(r.store.getTool('cond')?.descriptor).toMatchObject({ description: 'first writer' });
    }
  });

  it("checks a tool service write's If-Match where it is applied, alike on every replica (issue 34)", async () => {
    const first = message({ op: 'tool-service.put', target: 'svc', body: { topic: 'svc', 'config-params': [] } });
    const a = openReplica();
    const b = openReplica();
    await applyAll(a, [first]);
    await applyAll(b, [first]);
    const etag = serviceRecordRepresentation(a.store.getService('svc')!).etag;
    expect(serviceRecordRepresentation(b.store.getService('svc')!).etag).toBe(etag);
    const messages = [
      message({
        op: 'tool-service.put',
        target: 'svc',
        body: { topic: 'svc', 'config-params': ['first'] },
        condition: { ifMatch: [etag] },
      }),
      message({
        op: 'tool-service.put',
        target: 'svc',
        body: { topic: 'svc', 'config-params': ['second'] },
        condition: { ifMatch: [etag] },
      }),
      message({ op: 'tool-service.put', target: 'svc', body: { topic: 'svc' }, condition: { ifNoneMatch: '*' } }),
      message({ op: 'tool-service.delete', target: 'svc', condition: { ifMatch: [etag] } }),
    ];
    const shape = (o: Outcome) => (o.ok ? 'ok' : (o.error as RegistryError).code);
    for (const r of [a, b]) {
      expect((await applyAll(r, messages)).map(shape)).toEqual([
        'ok',
        'TR_ERR_PRECONDITION_FAILED',
        'TR_ERR_PRECONDITION_FAILED',
        'TR_ERR_PRECONDITION_FAILED',
      ]);
      expect(r.store.getService('svc')?.descriptor['config-params']).toEqual([{ name: 'first', required: false }]);
    }
  });

  it('writes the audit entry only where the write was taken', async () => {
    const a = openReplica();
    const b = openReplica();
    const m = message({ op: 'tool.put', body: tool('audited') });
    await a.service.applyReplicated(m.event, m.pin, { sub: 'op', iss: null, client: '127.0.0.1', requestId: 'r1' });
    await b.service.applyReplicated(m.event, m.pin);
    expect(a.audit.list({ limit: 10 }).map((e) => e.action)).toEqual(['tool.put']);
    expect(b.audit.list({ limit: 10 })).toEqual([]);
  });

  it('keeps the position and the last time across a reopen, and refuses an index that does not move forward', async () => {
    const a = openReplica();
    const m = message({ op: 'tool.put', body: tool('kept') }, '2026-11-30T12:00:00.000Z');
    expect((await a.service.applyReplicated(m.event, m.pin)).ok).toBe(true);
    a.store.close();
    const again = openReplica({ dir: a.dir });
    expect(again.store.replicationPosition()).toEqual({
      topic: TOPIC,
      messageId: m.pin.messageId,
      index: m.pin.index,
      lastAt: '2026-11-30T12:00:00.000Z',
    });
    // An earlier clock after the restart still stamps with the last time given out.
    const later = message({ op: 'tool.put', body: tool('later') }, '2026-11-30T11:00:00.000Z');
    await again.service.applyReplicated(later.event, later.pin);
    expect(again.store.getTool('later')?.updatedAt).toBe('2026-11-30T12:00:00.000Z');
    // The same message twice: the index would not move forward, so the write is refused and nothing changes.
    const before = again.store.registryIndex();
    const replay = await again.service.applyReplicated(later.event, later.pin);
    expect(replay.ok).toBe(false);
    expect(again.store.registryIndex()).toBe(before);
    again.store.close();
  });

  it('applies an import under the message index, and a refused import still moves the position', async () => {
    const a = openReplica();
    const ok = message({
      op: 'import',
      body: { 'tool-services': [seed('joke-service')], tools: [seed('tell-joke'), tool('one'), tool('two')] },
    });
    const outcome = await a.service.applyReplicated(ok.event, ok.pin);
    expect(outcome).toMatchObject({ ok: true, value: { index: ok.pin.index, tools: { created: 3, replaced: 0 } } });
    expect(a.store.getTool('two')?.index).toBe(ok.pin.index);
    const bad = message({ op: 'import', body: { 'tool-services': [], tools: [tool('three'), { name: 'broken' }] } });
    const refused = await a.service.applyReplicated(bad.event, bad.pin);
    expect(refused.ok).toBe(false);
    expect((refused as { error: RegistryError }).error.code).toBe('TR_ERR_VALIDATION');
    expect(a.store.getTool('three')).toBeUndefined();
    expect(a.store.replicationPosition()?.messageId).toBe(bad.pin.messageId);
    expect(a.catalog.index).toBe(ok.pin.index);
    a.store.close();
  });
});
