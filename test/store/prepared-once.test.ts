/**
 * Issue 32: the store's repositories prepare their statements once, when it is built. A
 * statement (or a better-sqlite3 transaction wrapper, which prepares its BEGIN, COMMIT and
 * ROLLBACK) made per call costs every write; loadSnapshot made one per restart before the split.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseTool, parseToolService } from '../../src/model/descriptors.js';
import { AuditStore } from '../../src/store/audit-store.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import { seed } from '../helpers/fixtures.js';

const NOW = '2026-12-02T00:00:00.000Z';
const roots: string[] = [];

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function fileStore() {
  const root = mkdtempSync(join(tmpdir(), 'tr-prepared-'));
  roots.push(root);
  const db = openDatabase(join(root, 'registry.db'));
  migrate(db);
  return { db, store: new RegistryStore(db, new AuditStore(db), { minRoomBytes: 0 }) };
}

describe('the store prepares its statements once', () => {
  it('prepares nothing for writes, groups, sliced writes, reads, loads and the readiness probe', async () => {
    const { db, store } = fileStore();
    const prepare = vi.spyOn(db, 'prepare');
    const transaction = vi.spyOn(db, 'transaction');
    const lookup = () => parseToolService(seed('joke-service'));
    const audit = () => ({
      at: NOW,
      sub: 'op',
      iss: null,
      client: null,
      action: 'tool.put',
      target: null,
      outcome: 'ok' as const,
      status: 200,
      detail: null,
      requestId: null,
    });
    store.putService(parseToolService(seed('joke-service')), NOW, audit);
    store.group(() => store.putTool(parseTool(seed('tell-joke'), lookup), NOW, audit), { deferSync: true });
    await store.sync();
    store.deleteTool('tell-joke', NOW, audit);
    const sliced = store.beginSliced({ deferSync: true });
    sliced.putTools([parseTool(seed('tell-joke'), lookup)], NOW);
    sliced.commit(audit());
    await store.sync();
    store.probeWrite(NOW);
    expect(store.loadSnapshot().toolHistory.map((h) => h.op)).toEqual(['upsert', 'delete', 'upsert']);
    expect(store.changesSince(0, 10)).toHaveLength(4);
    expect(store.getTool('tell-joke')?.status).toBe('active');
    expect(prepare).not.toHaveBeenCalled();
    expect(transaction).not.toHaveBeenCalled();
    store.close();
  });
});
