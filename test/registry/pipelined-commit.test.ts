/**
 * The pipelined group commit (src/registry/group-commit.ts, src/store/wal-sync.ts): a batch
 * commits without waiting for the disk, and until the fdatasync of the WAL returns nobody hears
 * of it: its writers, the catalogue, the change bus, the change and audit logs. Here the
 * fdatasync is a fake the test holds or fails, on a real SQLite file.
 */
import { mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.js';
import { RegistryError } from '../../src/model/errors.js';
import { parseTool } from '../../src/model/descriptors.js';
import type { Actor, ToolRecord } from '../../src/model/records.js';
import { ChangeBus } from '../../src/registry/change-bus.js';
import { RegistryService } from '../../src/registry/registry-service.js';
import { AuditStore } from '../../src/store/audit-store.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import type { Fdatasync } from '../../src/store/wal-sync.js';
import { seed } from '../helpers/fixtures.js';
import { parseToolPutBody } from '../../src/json-schema/tool-schemas.js';
import { parseToolServicePut } from '../../src/model/descriptors.js';

const ACTOR: Actor = { sub: 'op', iss: null, client: '127.0.0.1', requestId: 'req-1' };

/** An fdatasync that waits for the test: `release()` lets the oldest one return. */
function heldFdatasync() {
  const waiting: { fd: number; done: (err: NodeJS.ErrnoException | null) => void }[] = [];
  let released = 0;
  const fdatasync: Fdatasync = (fd, done) => {
    waiting.push({ fd, done });
  };
  return {
    fdatasync,
    /** fdatasyncs asked for so far. */
    calls: () => waiting.length + released,
    pending: () => waiting.length,
    fdOf: (i = 0) => waiting[i]?.fd,
    release(err: NodeJS.ErrnoException | null = null) {
      const next = waiting.shift();
      if (!next) throw new Error('no fdatasync is waiting');
      released++;
      next.done(err);
    },
  };
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function setup(fdatasync?: Fdatasync, now?: () => string) {
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-pipeline-'));
  dirs.push(dir);
  const db = openDatabase(join(dir, 'registry.db'));
  migrate(db);
  const audit = new AuditStore(db);
  const store = new RegistryStore(db, audit, fdatasync ? { fdatasync } : {});
  const catalog = new Catalog({ publicUrl: new URL('http://127.0.0.1:8080'), serviceName: 'tool-registry', viewCacheBytes: 1 << 20 });
  catalog.load(store.loadSnapshot());
  const bus = new ChangeBus();
  const heard: number[] = [];
  bus.subscribe((index) => heard.push(index));
  const service = new RegistryService(store, catalog, bus, { now });
  return { db, store, audit, catalog, bus, heard, service };
}

const tool = (name: string) => ({ ...seed('calculator'), name });
/** Lets setImmediate and promise callbacks run. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('pipelined group commit', () => {
  it('tells nobody of a batch until the fdatasync of its WAL returns', async () => {
    const sync = heldFdatasync();
    const { store, audit, catalog, heard, service } = setup(sync.fdatasync);
    let answered = false;
    const write = service.putTool(parseToolPutBody(tool('held')), { actor: ACTOR }).then((r) => {
      answered = true;
      return r;
    });
    await turns();

    // Committed to SQLite, but not on disk yet: no answer, no catalogue entry, no publication,
    // and readers of the change and audit logs do not see it either.
    expect(sync.pending()).toBe(1);
    expect(store.registryIndex()).toBe(1);
    expect(answered).toBe(false);
    expect(catalog.getTool('held')).toBeUndefined();
    expect(heard).toEqual([]);
    expect(store.changesSince(0, 100)).toEqual([]);
    expect(audit.list({ limit: 10, throughIndex: store.visibleThrough })).toEqual([]);
    // The descriptor it syncs is this database's WAL file.
    const fd = sync.fdOf();
    if (process.platform === 'linux' && fd !== undefined) expect(readlinkSync(`/proc/self/fd/${fd}`)).toMatch(/registry\.db-wal$/);

    sync.release();
    const { record, created } = await write;
    expect(created).toBe(true);
    expect(record.index).toBe(1);
    expect(catalog.getTool('held')?.record.index).toBe(1);
    expect(heard).toEqual([1]);
    expect(store.changesSince(0, 100).map((c) => c.name)).toEqual(['held']);
    expect(audit.list({ limit: 10, throughIndex: store.visibleThrough }).map((e) => e.target)).toEqual(['held']);
    store.close();
  });

  it('gathers the writes that arrive meanwhile into the next batch, and settles in order', async () => {
    const sync = heldFdatasync();
    const { store, catalog, heard, service } = setup(sync.fdatasync);
    let groups = 0;
    const group = store.group.bind(store);
    store.group = (fn, options) => {
      groups++;
      return group(fn, options);
    };
    const first = service.putTool(parseToolPutBody(tool('first')));
    await turns();
    expect(groups).toBe(1);
    const more = ['a', 'b', 'c', 'd', 'e'].map((n) => service.putTool(parseToolPutBody(tool(`more-${n}`))));
    await turns();
    // Nothing more commits while the first batch waits for the disk.
    expect(groups).toBe(1);
    expect(store.registryIndex()).toBe(1);

    sync.release();
    await first;
    await turns();
    // The five run together, in one commit, and wait for one fdatasync.
    expect(groups).toBe(2);
    expect(store.registryIndex()).toBe(6);
    expect(sync.pending()).toBe(1);
    expect(catalog.index).toBe(1);
    sync.release();
    const records = await Promise.all(more);
    expect(records.map((r) => r.record.index)).toEqual([2, 3, 4, 5, 6]);
    expect(heard).toEqual([1, 2, 3, 4, 5, 6]);
    expect(catalog.index).toBe(6);
    store.close();
  });

  it('checks a write against earlier writes of its batch that the catalogue does not show yet', async () => {
    const sync = heldFdatasync();
    const { store, catalog, service } = setup(sync.fdatasync);
    service.putService(parseToolServicePut(seed('joke-service'), 'joke-service'), { pathId: 'joke-service' }).catch(() => undefined);
    await turns();
    sync.release();
    await turns();
    expect(catalog.getService('joke-service')).toBeDefined();

    // One batch: a tool on the service, then a replacement of the service that the tool would
    // no longer fit (a new required config param). The catalogue knows neither yet.
    const stricter = {
      ...seed('joke-service'),
      'config-params': [
        { name: 'style', required: false },
        { name: 'language', required: true },
      ],
    };
    const put = service.putTool(parseToolPutBody(seed('tell-joke')));
    const replace = service.putService(parseToolServicePut(stricter, 'joke-service'), { pathId: 'joke-service' });
    const refused = replace.catch((err: unknown) => err);
    await turns();
    sync.release();
    expect((await put).created).toBe(true);
    const err = await refused;
    expect(err).toBeInstanceOf(RegistryError);
    expect((err as RegistryError).code).toBe('TR_ERR_CONFLICT');
    expect((err as RegistryError).message).toContain('tell-joke');
    store.close();
  });

  it('refuses a batch whose fdatasync fails, shows none of it, and takes no write after it', async () => {
    const sync = heldFdatasync();
    const { store, catalog, heard, service } = setup(sync.fdatasync);
    const write = service.putTool(parseToolPutBody(tool('lost'))).catch((err: unknown) => err);
    await turns();
    sync.release(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    const err = await write;
    expect(err).toBeInstanceOf(RegistryError);
    expect((err as RegistryError).code).toBe('TR_ERR_UNAVAILABLE');
    expect(catalog.getTool('lost')).toBeUndefined();
    expect(heard).toEqual([]);

    // The kernel may have dropped the pages; a retried fsync could lie. Every later write, and
    // readiness, is refused until a restart recovers from what the disk holds.
    const after = await service.putTool(parseToolPutBody(tool('after'))).catch((e: unknown) => e);
    expect((after as RegistryError).code).toBe('TR_ERR_UNAVAILABLE');
    expect(() => service.probeWrite()).toThrow(RegistryError);
    expect(sync.calls()).toBe(1);
    store.close();
  });

  it('commits under synchronous=FULL again once a deferred group is done', async () => {
    const sync = heldFdatasync();
    const { db, store, service } = setup(sync.fdatasync);
    let during: unknown;
    const group = store.group.bind(store);
    store.group = (fn, options) =>
      group(() => {
        during = db.pragma('synchronous', { simple: true });
        return fn();
      }, options);
    const write = service.putTool(parseToolPutBody(tool('x')));
    await turns();
    sync.release();
    await write;
    expect(during).toBe(1); // NORMAL inside the deferred group
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL for every other writer
    store.close();
  });
});

describe('WAL sync', () => {
  it('covers the commits made before it with one fdatasync, and those made meanwhile with the next', async () => {
    const sync = heldFdatasync();
    const { store } = setup(sync.fdatasync);
    const commit = (name: string) => {
      store.group(
        () =>
          store.putTool(
            parseTool(tool(name), () => undefined),
            '2026-11-30T00:00:00.000Z',
          ),
        { deferSync: true },
      );
      return store.sync();
    };
    const settled: string[] = [];
    const first = commit('c1').then(() => settled.push('c1'));
    const second = commit('c2').then(() => settled.push('c2'));
    const third = commit('c3').then(() => settled.push('c3'));
    expect(sync.calls()).toBe(1);
    expect(store.changesSince(0, 10)).toEqual([]);
    sync.release();
    await first;
    await turns();
    // c2 and c3 were committed while the first fdatasync ran: one more covers both.
    expect(settled).toEqual(['c1']);
    expect(sync.calls()).toBe(2);
    expect(store.changesSince(0, 10).map((c) => c.name)).toEqual(['c1']);
    sync.release();
    await Promise.all([second, third]);
    expect(settled).toEqual(['c1', 'c2', 'c3']);
    expect(store.changesSince(0, 10).map((c) => c.name)).toEqual(['c1', 'c2', 'c3']);
    // Nothing new committed: nothing to sync.
    await store.sync();
    expect(sync.calls()).toBe(2);
    store.close();
  });
});

describe('what readers of SQLite see', () => {
  it('leaves out a write still in its transaction, though this connection could read it', async () => {
    const sync = heldFdatasync();
    const { store } = setup(sync.fdatasync);
    const write = store.beginSliced({ deferSync: true });
    write.putTools(
      [parseTool(tool('sliced-1'), () => undefined), parseTool(tool('sliced-2'), () => undefined)],
      '2026-11-30T00:00:00.000Z',
    );
    await turns();
    // The import's rows are in the open transaction, which this connection reads through.
    expect(store.getTool('sliced-1')).toBeDefined();
    expect(store.changesSince(0, 10)).toEqual([]);
    write.commit();
    const synced = store.sync();
    expect(store.changesSince(0, 10)).toEqual([]);
    sync.release();
    await synced;
    expect(store.changesSince(0, 10).map((c) => c.name)).toEqual(['sliced-1', 'sliced-2']);
    store.close();
  });
});

describe('write times', () => {
  it('never go backwards, even when the clock does', async () => {
    const clock = ['2026-11-30T10:00:02.000Z', '2026-11-30T10:00:01.000Z', '2026-11-30T10:00:03.000Z', '2026-11-30T09:59:00.000Z'];
    let tick = 0;
    const { store, audit, service } = setup(undefined, () => clock[Math.min(tick++, clock.length - 1)] ?? '');
    const records: ToolRecord[] = [];
    for (const name of ['t1', 't2', 't3', 't4'])
      records.push((await service.putTool(parseToolPutBody(tool(name)), { actor: ACTOR })).record);
    expect(records.map((r) => r.updatedAt)).toEqual([
      '2026-11-30T10:00:02.000Z',
      '2026-11-30T10:00:02.000Z',
      '2026-11-30T10:00:03.000Z',
      '2026-11-30T10:00:03.000Z',
    ]);
    // The audit entry of a write carries the time its records do.
    const entries = audit.list({ limit: 10 }).reverse();
    expect(entries.map((e) => [e.target, e.at])).toEqual(records.map((r) => [r.name, r.updatedAt]));
    expect(store.getTool('t2')?.updatedAt).toBe('2026-11-30T10:00:02.000Z');
    store.close();
  });
});
