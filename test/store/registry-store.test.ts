/**
 * The SQLite store: migrations, one registry index per write, tombstones, restart.
 */
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { loadMigrations, migrate, MigrationError } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import { UsageStore } from '../../src/store/usage-store.js';
import { parseTool, parseToolService } from '../../src/model/descriptors.js';
import { bearer, createTestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

function memoryStore() {
  const db = openDatabase(':memory:');
  migrate(db);
  return { db, store: new RegistryStore(db) };
}

const NOW = '2026-11-29T00:00:00.000Z';

describe('database files', () => {
  it('makes a new database, its WAL and shared memory, and its folder readable by the owner only', () => {
    const root = mkdtempSync(join(tmpdir(), 'tr-mode-'));
    try {
      const path = join(root, 'data', 'registry.db');
      const db = openDatabase(path);
      migrate(db);
      const mode = (file: string) => statSync(file).mode & 0o777;
      expect(mode(join(root, 'data'))).toBe(0o700);
      for (const file of [path, `${path}-wal`, `${path}-shm`]) expect([file, mode(file)]).toEqual([file, 0o600]);
      db.close();
      // An existing file keeps the mode its owner chose.
      const shared = join(root, 'shared.db');
      writeFileSync(shared, '');
      chmodSync(shared, 0o640);
      openDatabase(shared).close();
      expect(mode(shared)).toBe(0o640);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('migrations', () => {
  it('applies every migration once and records it', () => {
    const db = new Database(':memory:');
    const first = migrate(db);
    expect(first.applied).toEqual(loadMigrations().map((m) => m.version));
    expect(migrate(db).applied).toEqual([]);
    expect(db.prepare('SELECT version FROM schema_migrations').pluck().all()).toEqual(first.applied);
  });

  it('refuses a database newer than the code', () => {
    const db = new Database(':memory:');
    migrate(db);
    db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')").run();
    expect(() => migrate(db)).toThrow(MigrationError);
    expect(() => migrate(db)).toThrow(/version 999/);
  });

  it('rolls back a failing migration whole', () => {
    const db = new Database(':memory:');
    const broken = [
      ...loadMigrations(),
      { version: loadMigrations().length + 1, name: 'broken', sql: 'CREATE TABLE ok_table (x); SELECT * FROM missing_table;' },
    ];
    expect(() => migrate(db, broken)).toThrow();
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('ok_table', 'tools')").pluck().get()).toBe(0);
  });
});

describe('registry store', () => {
  it('bumps the registry index once per write and stamps the rows', () => {
    const { store } = memoryStore();
    expect(store.registryIndex()).toBe(0);
    const service = store.putService(parseToolService(seed('joke-service')), NOW);
    expect(service).toMatchObject({ created: true, record: { index: 1, createdIndex: 1, status: 'active' } });
    const lookup = () => parseToolService(seed('joke-service'));
    const tool = store.putTool(parseTool(seed('tell-joke'), lookup), NOW);
    expect(tool.record.index).toBe(2);
    const replaced = store.putTool(parseTool(seed('tell-joke'), lookup), NOW);
    expect(replaced).toMatchObject({ created: false, record: { index: 3, createdIndex: 2 } });
    expect(store.registryIndex()).toBe(3);
  });

  it('keeps a tombstone on delete, and a re-registration starts a new life', () => {
    const { store } = memoryStore();
    store.putTool(
      parseTool(seed('calculator'), () => undefined),
      NOW,
    );
    const deleted = store.deleteTool('calculator', NOW);
    expect(deleted).toMatchObject({ status: 'deleted', index: 2 });
    expect(store.getTool('calculator')?.status).toBe('deleted');
    expect(store.loadLive().tools).toEqual([]);
    expect(() => store.deleteTool('calculator', NOW)).toThrow(/no tool/);
    expect(store.registryIndex()).toBe(2);
    const again = store.putTool(
      parseTool(seed('calculator'), () => undefined),
      NOW,
    );
    expect(again).toMatchObject({ created: true, record: { status: 'active', createdIndex: 3, index: 3 } });
  });

  it('refuses to tombstone a service still in use, inside the transaction', () => {
    const { store } = memoryStore();
    const service = parseToolService(seed('custom-rag'));
    store.putService(service, NOW);
    store.putTool(
      parseTool(seed('query-customers'), () => service),
      NOW,
    );
    expect(() => store.deleteService('custom-rag', NOW)).toThrow(/query-customers/);
    expect(store.registryIndex()).toBe(2);
    expect(store.getService('custom-rag')?.status).toBe('active');
  });

  it('imports all or nothing', () => {
    const { store } = memoryStore();
    const good = parseTool(seed('calculator'), () => undefined);
    // A bus tool whose service is not in the database violates the foreign key mid-import.
    const orphan = parseTool(seed('tell-joke'), () => parseToolService(seed('joke-service')));
    const write = store.beginSliced();
    expect(() => {
      write.putTools([good, orphan], NOW);
      write.commit();
    }).toThrow();
    write.rollback();
    expect(store.registryIndex()).toBe(0);
    expect(store.getTool('calculator')).toBeUndefined();
  });
});

describe('restart', () => {
  it('serves the same catalogue, index and ETag after the app is rebuilt on the same file', async () => {
    const t = await createTestApp();
    try {
      const admin = bearer(t.token(['registry:write']));
      const res = await t.app.inject({
        method: 'POST',
        url: '/import',
        headers: admin,
        payload: {
          'tool-services': [seed('joke-service'), seed('custom-rag')],
          tools: ['tell-joke', 'query-customers', 'query-products', 'calculator', 'file_reader'].map(seed),
        },
      });
      expect(res.statusCode, res.body).toBe(200);
      await t.app.inject({ method: 'DELETE', url: '/tools/file_reader', headers: admin });
      const before = await t.app.inject({ method: 'GET', url: '/' });
      const app = await t.restart();
      const after = await app.inject({ method: 'GET', url: '/' });
      expect(after.body).toBe(before.body);
      expect(after.headers.etag).toBe(before.headers.etag);
      expect(after.headers['x-registry-index']).toBe('2');
      const services = await app.inject({ method: 'GET', url: '/tool-services', headers: admin });
      expect(services.json().toolServices).toHaveLength(2);
    } finally {
      await t.close();
    }
  });
});

describe('usage records', () => {
  it('are pruned by age, and the recent ones kept', () => {
    const { db } = memoryStore();
    const usage = new UsageStore(db);
    usage.insertMany([
      { at: '2026-01-01T00:00:00.000Z', tool: 'old', sub: 'a', outcome: 'ok', durationMs: 1 },
      { at: '2026-11-29T00:00:00.000Z', tool: 'new', sub: 'a', outcome: 'ok', durationMs: 2 },
    ]);
    expect(usage.prune('2026-06-01T00:00:00.000Z')).toBe(1);
    expect(usage.counts().map((c) => c.tool)).toEqual(['new']);
  });
});
