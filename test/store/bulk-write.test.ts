/**
 * An import's transaction on the store's worker thread (src/store/bulk-write.ts), on a real
 * SQLite file: all or nothing under one registry index, invisible to the main connection until
 * its commit, the write gate held meanwhile, and its checkpoint done by the worker, with
 * SQLite's own checkpoints on the main connection back once it is.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RegistryError } from '../../src/model/errors.js';
import { parseTool, parseToolService } from '../../src/model/descriptors.js';
import { AuditStore } from '../../src/store/audit-store.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import { seed } from '../helpers/fixtures.js';

/** vi.waitUntil polls every 50 ms for 1 s by default: these waits poll every 10 ms, for up to 10_000 ms. */
const polling = { timeout: 10_000, interval: 10 };

const NOW = '2026-11-30T00:00:00.000Z';
const dirs: string[] = [];
const stores: RegistryStore[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fileStore() {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bulk-'));
  dirs.push(dir);
  const path = join(dir, 'registry.db');
  const db = openDatabase(path);
  migrate(db);
  const store = new RegistryStore(db, new AuditStore(db));
  stores.push(store);
  return { db, store, path };
}

const tools = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    parseTool({ ...seed('calculator'), name: `bulk_${i}`, description: `Tool ${i} ${'x'.repeat(500)}` }, () => undefined),
  );

describe('a bulk write on the worker thread', () => {
  it('shows nothing before its commit, holds the write gate, and is checkpointed by the worker', async () => {
    const { db, store, path } = fileStore();
    store.putTool(
      parseTool(seed('file_reader'), () => undefined),
      NOW,
    );
    const write = await store.beginBulk();
    expect(write.index).toBe(2);
    expect(store.gate.held).toBe(true);
    const results = await write.putTools(tools(3000), NOW);
    expect(results).toHaveLength(3000);
    expect(results[0]?.record).toMatchObject({ name: 'bulk_0', index: 2, createdIndex: 2, status: 'active' });
    // Another connection's open transaction: this one reads the registry as it was.
    expect(store.getTool('bulk_0')).toBeUndefined();
    expect(store.registryIndex()).toBe(1);
    const before = statSync(path).size;
    await write.commit({
      sub: 'op',
      iss: null,
      client: null,
      requestId: null,
      at: NOW,
      action: 'import',
      target: null,
      outcome: 'ok',
      status: 200,
      detail: null,
    });
    await store.sync();
    expect(store.gate.held).toBe(false);
    expect(store.registryIndex()).toBe(2);
    expect(store.getTool('bulk_2999')?.index).toBe(2);
    // Its pages reach the database file by the worker's checkpoint; until then SQLite does
    // not checkpoint on this connection.
    await vi.waitUntil(() => db.pragma('wal_autocheckpoint', { simple: true }) === 1000, polling);
    expect(statSync(path).size).toBeGreaterThan(before + 1_000_000);
  });

  it('leaves nothing behind when a step fails, and lets every writer go on', async () => {
    const { store } = fileStore();
    const write = await store.beginBulk();
    await write.putTools(tools(10), NOW);
    // A message-bus tool whose service is not stored breaks a foreign key.
    const orphan = parseTool(seed('tell-joke'), () => parseToolService(seed('joke-service')));
    await expect(write.putTools([orphan], NOW)).rejects.toBeInstanceOf(RegistryError);
    await write.rollback();
    expect(store.gate.held).toBe(false);
    expect(store.registryIndex()).toBe(0);
    expect(store.getTool('bulk_0')).toBeUndefined();
    expect(
      store.putTool(
        parseTool(seed('calculator'), () => undefined),
        NOW,
      ).record.index,
    ).toBe(1);
    // The next bulk write starts afresh.
    const again = await store.beginBulk();
    await again.putTools(tools(2), NOW);
    await again.commit();
    expect(store.getTool('bulk_1')?.index).toBe(2);
  });

  it("takes the main connection's page limit (a full disk), and refuses with a 503", async () => {
    const { db, store } = fileStore();
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 50}`);
    const write = await store.beginBulk();
    const failed = await write.putTools(tools(2000), NOW).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(RegistryError);
    expect((failed as RegistryError).code).toBe('TR_ERR_UNAVAILABLE');
    await write.rollback();
    expect(store.registryIndex()).toBe(0);
  });
});
