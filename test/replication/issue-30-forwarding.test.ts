/**
 * Issue 30: `forwardAuthorization` defaults to false now, and was true. Every replica, whatever
 * version wrote a message, stores what its writer meant: a writer since issue 30 writes the
 * field out in an import's HTTP tools, and an HTTP tool on the topic without it was written
 * under the old default (src/model/forwarding.ts).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { seed } from '../helpers/fixtures.js';
import { POLLING, Replicas } from './running.js';
import { message, openReplica, removeReplicaDirs, tool } from './support.js';

const replicas = new Replicas();
afterEach(async () => {
  await replicas.close();
  removeReplicaDirs();
});

const forwards = (descriptor: unknown) => (descriptor as { forwardAuthorization?: unknown }).forwardAuthorization;

describe('forwardAuthorization on the replication topic (issue 30)', () => {
  it('applies an HTTP tool published before issue 30 without the field as forwarding, as its writer stored it', async () => {
    const a = openReplica();
    const put = message({ op: 'tool.put', body: tool('old-put') });
    const stated = message({ op: 'tool.put', body: tool('stated-put', { forwardAuthorization: false }) });
    const imported = message({
      op: 'import',
      body: { 'tool-services': [seed('joke-service')], tools: [seed('tell-joke'), tool('old-import')] },
    });
    for (const m of [put, stated, imported]) expect((await a.service.applyReplicated(m.event, m.pin)).ok).toBe(true);
    expect(forwards(a.store.getTool('old-put')?.descriptor)).toBe(true);
    expect(forwards(a.store.getTool('old-import')?.descriptor)).toBe(true);
    expect(forwards(a.store.getTool('stated-put')?.descriptor)).toBe(false);
    // A message-bus tool has no such field, and gets none.
    expect(a.store.getTool('tell-joke')?.descriptor).not.toHaveProperty('forwardAuthorization');
    a.store.close();
  });

  it('publishes an import whose HTTP tools leave the field out with it written out as false, which every replica stores', async () => {
    await replicas.startTopic();
    const a = await replicas.start('a');
    const b = await replicas.start('b');
    await a.replicator.importBundle({ 'tool-services': [], tools: [tool('new-import'), tool('says-yes', { forwardAuthorization: true })] });
    const published = replicas.topic.events().find((e) => e['op'] === 'import') as { body: { tools: Record<string, unknown>[] } };
    expect(published.body.tools.map((t) => [t['name'], t['forwardAuthorization']])).toEqual([
      ['new-import', false],
      ['says-yes', true],
    ]);
    await vi.waitUntil(() => b.store.getTool('new-import') !== undefined, POLLING);
    for (const r of [a, b]) {
      expect(forwards(r.store.getTool('new-import')?.descriptor)).toBe(false);
      expect(forwards(r.store.getTool('says-yes')?.descriptor)).toBe(true);
    }
    // A replica started now reads the topic from the start and stores the same.
    const c = await replicas.start('c');
    expect(forwards(c.store.getTool('new-import')?.descriptor)).toBe(false);
  });
});
