/**
 * Issue 29's review in replicated mode, over the in-process topic: a sync under the policy
 * `review` leaves the same pending versions on every replica (they are written by the applied
 * message), and an accept or a reject published by one replica is applied by every replica the
 * same way; an accept of a digest that is no longer pending is refused on every replica.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseMcpServerBody } from '../../src/model/descriptors.js';
import type { McpTool } from '../../src/model/mcp-schemas.js';
import { mcpToolOf } from '../helpers/fixtures.js';
import type { RegistryError } from '../../src/model/errors.js';
import { toolDigest } from '../../src/registry/tool-digest.js';
import { POLLING, Replicas } from './running.js';

const replicas = new Replicas();
/** The messages on the in-process topic, parsed. */
const topic = (r: Replicas) => r.topic.entries.map((e) => JSON.parse(e.text) as { op: string; slice?: boolean; listed?: string[] });
afterEach(() => replicas.close());

const listed = (name: string, description: string): McpTool => mcpToolOf('up', 'up_', name, description);

describe('upstream tools, replicated (issue 29)', () => {
  it('writes a long sync in slices on every replica: a slice deletes nothing, the last deletes what the list no longer has', async () => {
    await replicas.startTopic();
    const a = await replicas.start('a');
    const b = await replicas.start('b');
    await a.replicator.putMcpServer(parseMcpServerBody({ url: 'http://127.0.0.1:9/mcp', prefix: 'up_', policy: 'auto' }, 'up'), {
      pathId: 'up',
    });
    await vi.waitUntil(() => b.catalog.getMcpServer('up') !== undefined, POLLING);
    const index = a.catalog.getMcpServer('up')!.index;
    await a.replicator.syncMcpTools('up', index, [listed('old', 'Old.'), listed('kept', 'Kept.')]);
    await vi.waitUntil(() => b.catalog.getTool('up_kept') !== undefined, POLLING);
    const first = await a.replicator.syncMcpToolsPart('up', index, [listed('kept', 'Kept, again.')]);
    expect(first.plan?.deletes).toEqual([]);
    await vi.waitUntil(() => b.catalog.getTool('up_kept')?.record.descriptor.description === 'Kept, again.', POLLING);
    expect(b.catalog.getTool('up_old')).toBeDefined();
    const last = await a.replicator.syncMcpToolsPart('up', index, [listed('new', 'New.')], new Set(['up_kept', 'up_new']));
    expect(last.plan?.deletes).toEqual(['up_old']);
    await vi.waitUntil(() => b.catalog.getTool('up_old') === undefined, POLLING);
    expect(b.catalog.toolsOfMcpServer('up').sort()).toEqual(['up_kept', 'up_new']);
    const sent = topic(replicas).filter((e) => e.op === 'mcp-server.sync');
    expect(sent.map((e) => [e.slice, e.listed])).toEqual([
      [undefined, undefined],
      [true, undefined],
      [true, ['up_kept', 'up_new']],
    ]);
  });

  it('holds, accepts and rejects the same way on every replica', async () => {
    await replicas.startTopic();
    const a = await replicas.start('a');
    const b = await replicas.start('b');
    await a.replicator.putMcpServer(parseMcpServerBody({ url: 'http://127.0.0.1:9/mcp', prefix: 'up_' }, 'up'), { pathId: 'up' });
    await vi.waitUntil(() => b.catalog.getMcpServer('up') !== undefined, POLLING);
    const index = a.catalog.getMcpServer('up')!.index;
    const one = listed('one', 'One.');
    const two = listed('two', 'Two.');
    await a.replicator.syncMcpTools('up', index, [one, two]);
    await vi.waitUntil(() => b.store.mcpPendingCount('up') === 2, POLLING);
    expect(a.store.mcpPendingCount('up')).toBe(2);
    expect(a.catalog.getTool('up_one')).toBeUndefined();

    const accepted = await a.replicator.acceptMcpChanges('up', [{ tool: 'up_one', digest: toolDigest(one) }]);
    expect(accepted.changes).toEqual([{ tool: 'up_one', digest: toolDigest(one), acceptedDigest: null }]);
    await vi.waitUntil(() => b.catalog.getTool('up_one') !== undefined, POLLING);
    expect(b.store.mcpPendingPage('up', '', 10, true).map((p) => p.name)).toEqual(['up_two']);

    await b.replicator.rejectMcpChanges('up', [{ tool: 'up_two', digest: toolDigest(two) }]);
    await vi.waitUntil(() => a.store.mcpPendingCount('up') === 0, POLLING);
    expect(a.store.mcpPending('up', 'up_two')?.rejected).toBe(true);

    const refused = await a.replicator.acceptMcpChanges('up', [{ tool: 'up_one', digest: toolDigest(one) }]).catch((e: RegistryError) => e);
    expect((refused as RegistryError).code).toBe('TR_ERR_CONFLICT');
    expect(b.catalog.getTool('up_one')?.record.index).toBe(a.catalog.getTool('up_one')?.record.index);
  });
});
