/**
 * Replicas without a broker for test/replication/: a database in a temporary directory, its
 * store, catalogue and write service, built as src/http/plugins/registry.ts builds them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Catalog } from '../../src/catalog/catalog.js';
import { IMPORT_PART_LIMITS, type ImportPartLimits, type ReplicationEvent } from '../../src/model/replication.js';
import { ChangeBus } from '../../src/registry/change-bus.js';
import { RegistryService, type Pin } from '../../src/registry/registry-service.js';
import { AuditStore } from '../../src/store/audit-store.js';
import { openDatabase, type SqliteDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import { seed } from '../helpers/fixtures.js';

export const TOPIC = 'persistent://tg/registry/test';

const dirs: string[] = [];

/** Removes every replica's directory (call in afterEach, after closing their stores). */
export function removeReplicaDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export interface TestReplica {
  dir: string;
  db: SqliteDatabase;
  store: RegistryStore;
  audit: AuditStore;
  catalog: Catalog;
  service: RegistryService;
  /** The staging table's rows (without their chunks). */
  stagedRows(): unknown[];
}

/** A replica on the database in `dir` (a new directory unless given: reopen one to stage a restart). */
export function openReplica(options: { dir?: string; limits?: ImportPartLimits } = {}): TestReplica {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'tool-registry-replica-'));
  if (!dirs.includes(dir)) dirs.push(dir);
  const db = openDatabase(join(dir, 'registry.db'));
  migrate(db);
  const audit = new AuditStore(db);
  const store = new RegistryStore(db, audit);
  const catalog = new Catalog({ publicUrl: new URL('http://registry.test'), serviceName: 'tool-registry', viewCacheBytes: 1 << 20 });
  catalog.load(store.loadSnapshot());
  // The local clock is never used for replicated writes: a wrong one shows if it is.
  const service = new RegistryService(store, catalog, new ChangeBus(), {
    now: () => '1999-01-01T00:00:00.000Z',
    partLimits: options.limits ?? IMPORT_PART_LIMITS,
  });
  const position = store.replicationPosition();
  if (position) service.restoreStamp(position.lastAt);
  const stagedRows = () =>
    db.prepare('SELECT write_id AS write, part, parts, bytes FROM replication_import_parts ORDER BY write_id, part').all();
  return { dir, db, store, audit, catalog, service, stagedRows };
}

let sequence = 0;

/** A message: its event and where it sits on the topic (indexes grow with each one made). */
export function message(
  fields: Partial<ReplicationEvent> & Pick<ReplicationEvent, 'op'>,
  at = '2026-11-30T10:00:00.000Z',
): { event: ReplicationEvent; pin: Pin } {
  sequence++;
  const event: ReplicationEvent = { v: 1, write: `w${sequence}`, origin: 'a', at, ...fields };
  return { event, pin: { index: 1000 + sequence * 7, at, topic: TOPIC, messageId: `id-${sequence}` } };
}

export const tool = (name: string, extra: Record<string, unknown> = {}) => ({ ...seed('calculator'), name, ...extra });

/** A bundle of `count` HTTP tools and one service with a bus tool, with text that needs escaping. */
export function bundle(count: number, prefix = 't') {
  return {
    'tool-services': [seed('joke-service')],
    tools: [
      seed('tell-joke'),
      ...Array.from({ length: count }, (_, i) =>
        tool(`${prefix}-${String(i).padStart(5, '0')}`, { description: `tool ${i}: "quoted" \\ back-slashed, ünïcödé and 🧰 emoji` }),
      ),
    ],
  };
}
