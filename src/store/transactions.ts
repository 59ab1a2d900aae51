/**
 * The transactions of the registry's connection, and what makes them durable: every write runs
 * in one IMMEDIATE transaction that takes the registry index once and commits its audit entry
 * with it; group commit nests writes in savepoints under one COMMIT; a deferred commit waits for
 * the WAL's fdatasync (src/store/wal-sync.ts) before anyone hears of it; sliced and bulk writes
 * (imports) hold the write gate across turns of the event loop, the bulk ones on a worker thread
 * whose checkpoint this connection's autocheckpoint must not race. The tables are the
 * repositories' business: a sliced write's steps come from RegistryStore.
 * Driver errors become domain errors here, so nothing above compares SQLite messages.
 */
import Database from 'better-sqlite3';
import { RegistryError } from '../model/errors.js';
import type { AuditEntryInput, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import type { AuditStore } from './audit-store.js';
import { BulkWriter, type RemoteBulkWrite } from './bulk-write.js';
import type { SqliteDatabase } from './database.js';
import type { RegistryIndexRows } from './registry-index-rows.js';
import type { ReplicationPosition } from './replication-position-rows.js';
import type { ToolWrite } from './tool-rows.js';
import { WalSync, type Fdatasync } from './wal-sync.js';
import { writeGateOf, type WriteGate } from './write-gate.js';

/** Builds a write's audit entry from its result, inside the write's transaction. */
export type AuditFor<T> = (result: T) => AuditEntryInput;

export interface GroupOptions {
  /**
   * Commit without waiting for the disk; the caller must await `sync()` before telling anyone
   * (see src/store/wal-sync.ts). Ignored where there is no WAL file to sync: those commits
   * stay synchronous=FULL.
   */
  deferSync?: boolean;
}

/** A write spanning many turns of the event loop (see RegistryStore.beginSliced). */
export interface SlicedWrite {
  /** The registry index every record of the write gets. */
  readonly index: number;
  putServices(services: readonly ToolService[], now: string): PutResult<ServiceRecord>[];
  putTools(tools: readonly ToolWrite[], now: string): PutResult<ToolRecord>[];
  /**
   * Commits (with the audit entry, the replica's position and the deletion of the staged parts of
   * `partsOf`, if any); with `deferSync`, `sync()` must be awaited before anyone hears of it.
   */
  commit(audit?: AuditEntryInput, position?: ReplicationPosition, partsOf?: string): void;
  /** Undoes everything written so far; safe to call after a failed commit, and twice. */
  rollback(): void;
}

/** A bulk write (RegistryStore.beginBulk): a SlicedWrite whose steps may run on another thread. */
export interface BulkWrite {
  readonly index: number;
  putServices(services: readonly ToolService[], now: string): Promise<PutResult<ServiceRecord>[]>;
  putTools(tools: readonly ToolWrite[], now: string): Promise<PutResult<ToolRecord>[]>;
  /**
   * Commits (with the replica's new position, in replicated mode, and the deletion of the staged
   * parts of `partsOf`, an import sent in parts); `sync()` must be awaited before anyone hears of it.
   */
  commit(audit?: AuditEntryInput, position?: ReplicationPosition, partsOf?: string): Promise<void>;
  /** Undoes everything written so far; safe after a failed step, and twice. */
  rollback(): Promise<void>;
}

/** The table work of a sliced write, in its transaction under its index (RegistryStore gives it). */
export interface SlicedSteps {
  putServices(services: readonly ToolService[], index: number, now: string): PutResult<ServiceRecord>[];
  putTools(tools: readonly ToolWrite[], index: number, now: string): PutResult<ToolRecord>[];
  /** Writes what commits with it besides the audit entry: the replica's position, the staged parts dropped. */
  beforeCommit(position: ReplicationPosition | undefined, partsOf: string | undefined): void;
}

export interface TransactionsOptions {
  index: RegistryIndexRows;
  audit: AuditStore | undefined;
  steps: SlicedSteps;
  fdatasync: Fdatasync | undefined;
}

/** The registry cannot promise durability any more (see src/store/wal-sync.ts). */
function notDurable(cause: unknown): RegistryError {
  return new RegistryError(
    'TR_ERR_UNAVAILABLE',
    'the database could not make a write durable; restart the registry to recover from what is on disk',
    {
      cause,
    },
  );
}

/** Runs `fn`, turning the driver's errors into the registry's. */
export function translate<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof Database.SqliteError) {
      if (err.code === 'SQLITE_BUSY' || err.code === 'SQLITE_LOCKED') {
        throw new RegistryError('TR_ERR_UNAVAILABLE', 'the database is busy; retry shortly', { cause: err, retryAfterS: 1 });
      }
      if (err.code === 'SQLITE_FULL' || err.code.startsWith('SQLITE_IOERR') || err.code === 'SQLITE_READONLY') {
        throw new RegistryError('TR_ERR_UNAVAILABLE', 'the database cannot take writes right now', { cause: err });
      }
      if (err.code.startsWith('SQLITE_CONSTRAINT')) {
        throw new RegistryError('TR_ERR_CONFLICT', 'the write conflicts with the stored registry', { cause: err });
      }
    }
    throw err;
  }
}

export class Transactions {
  /** Held by a sliced write (an import): other writers on the connection wait for it. */
  readonly gate: WriteGate;
  readonly #db: SqliteDatabase;
  /**
   * Runs a function in a transaction (a savepoint inside another): made once, because
   * better-sqlite3 builds four wrappers and defines twenty properties for every transaction()
   * it is asked for, which was a few percent of every write.
   */
  readonly #inTransaction: Database.Transaction<(fn: () => unknown) => unknown>;
  readonly #index: RegistryIndexRows;
  readonly #audit: AuditStore | undefined;
  readonly #steps: SlicedSteps;
  readonly #wal: WalSync | null;
  /** Imports' transactions, on a worker thread (null without a WAL file: they run here). */
  readonly #bulk: BulkWriter | null;
  /** SQLite's wal_autocheckpoint while imports' checkpoints are pending, and how many are. */
  #autoCheckpoint: number | null = null;
  #pendingCheckpoints = 0;
  /** The registry index of the last commit, and the last one known to be on disk. */
  #committedIndex: number;
  #durableIndex: number;

  constructor(db: SqliteDatabase, options: TransactionsOptions) {
    this.#db = db;
    this.#inTransaction = db.transaction((fn: () => unknown) => fn());
    this.#index = options.index;
    this.#audit = options.audit;
    this.#steps = options.steps;
    this.gate = writeGateOf(db);
    this.#committedIndex = this.#index.current();
    this.#durableIndex = this.#committedIndex;
    // After a first read: that opens (or creates) the WAL file.
    this.#wal = WalSync.open(db, options.fdatasync);
    this.#bulk = this.#wal && new BulkWriter(db.name);
  }

  /** The last registry index known to be on disk (see RegistryStore.visibleThrough). */
  get visibleThrough(): number {
    return this.#durableIndex;
  }

  /** Runs `fn` in one (DEFERRED) read transaction, or inside the one open. */
  read<T>(fn: () => T): T {
    return this.#inTransaction(fn) as T;
  }

  /**
   * Runs `fn` in one IMMEDIATE transaction after taking the next registry index; the audit entry
   * commits with the write, so an acknowledged write is never missing from the log.
   */
  write<T>(fn: (index: number) => T, audit?: AuditFor<T>): T {
    const topLevel = !this.#db.inTransaction;
    if (topLevel) this.refuseAfterSyncFailure();
    const result = translate(
      () =>
        this.#inTransaction.immediate(() => {
          const index = this.#index.next();
          const result = fn(index);
          if (audit && this.#audit) this.#audit.insert(audit(result), index);
          return result;
        }) as T,
    );
    // On its own (not in a group) the write committed under synchronous=FULL: it is on disk.
    if (topLevel) this.#committed(false);
    return result;
  }

  /** See RegistryStore.group. */
  group<T>(fn: () => T, options: GroupOptions = {}): T {
    this.refuseAfterSyncFailure();
    const topLevel = !this.#db.inTransaction;
    const deferred = options.deferSync === true && topLevel && this.#wal !== null;
    // Prepared statements would not do: SQLite applies PRAGMA synchronous when it compiles it.
    if (deferred) this.#db.exec('PRAGMA synchronous = NORMAL');
    try {
      const result = translate(() => this.#inTransaction.immediate(fn) as T);
      if (topLevel) this.#committed(deferred);
      return result;
    } finally {
      if (deferred) this.#db.exec('PRAGMA synchronous = FULL');
    }
  }

  /** See RegistryStore.sync. */
  sync(): Promise<void> {
    const through = this.#committedIndex;
    if (this.#wal === null || through <= this.#durableIndex) return Promise.resolve();
    return this.#wal.sync().then(
      () => {
        if (through > this.#durableIndex) this.#durableIndex = through;
      },
      (err: unknown) => {
        throw notDurable(err);
      },
    );
  }

  /** Throws once an fdatasync has failed: no write is taken after that. */
  refuseAfterSyncFailure(): void {
    const failure = this.#wal?.failure;
    if (failure) throw notDurable(failure);
  }

  /** See RegistryStore.beginSliced. */
  beginSliced(options: GroupOptions & { index?: number | undefined } = {}): SlicedWrite {
    this.refuseAfterSyncFailure();
    if (this.#db.inTransaction) throw new Error('a sliced write cannot run inside another transaction');
    const release = this.gate.hold();
    const deferred = options.deferSync === true && this.#wal !== null;
    let open = false;
    const end = () => {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      if (deferred) this.#db.exec('PRAGMA synchronous = FULL');
      release();
    };
    let index: number;
    try {
      if (deferred) this.#db.exec('PRAGMA synchronous = NORMAL');
      translate(() => this.#db.exec('BEGIN IMMEDIATE'));
      open = true;
      index = translate(() =>
        options.index === undefined ? this.#index.next() : this.#index.withIndex(options.index, () => this.#index.next()),
      );
    } catch (err) {
      end();
      throw err;
    }
    const live = () => {
      if (!open) throw new Error('the sliced write has ended');
    };
    const steps = this.#steps;
    return {
      index,
      putServices: (services, now) => {
        live();
        return translate(() => steps.putServices(services, index, now));
      },
      putTools: (tools, now) => {
        live();
        return translate(() => steps.putTools(tools, index, now));
      },
      commit: (audit, position, partsOf) => {
        live();
        open = false;
        try {
          translate(() => {
            if (audit && this.#audit) this.#audit.insert(audit, index);
            steps.beforeCommit(position, partsOf);
            this.#db.exec('COMMIT');
          });
        } catch (err) {
          end();
          throw err;
        }
        end();
        this.#committed(deferred);
      },
      rollback: () => {
        if (!open) return;
        open = false;
        end();
      },
    };
  }

  /** See RegistryStore.beginBulk. */
  async beginBulk(index?: number): Promise<BulkWrite> {
    const bulk = this.#bulk;
    if (!bulk) {
      const write = this.beginSliced({ deferSync: true, index });
      return {
        index: write.index,
        putServices: async (services, now) => write.putServices(services, now),
        putTools: async (tools, now) => write.putTools(tools, now),
        commit: async (audit, position, partsOf) => write.commit(audit, position, partsOf),
        rollback: async () => write.rollback(),
      };
    }
    this.refuseAfterSyncFailure();
    const release = this.gate.hold();
    let remote: RemoteBulkWrite;
    try {
      remote = await bulk.begin(this.#db.pragma('max_page_count', { simple: true }) as number, index);
    } catch (err) {
      release();
      throw err;
    }
    let open = true;
    const live = () => {
      if (!open) throw new Error('the bulk write has ended');
    };
    return {
      index: remote.index,
      putServices: (services, now) => (live(), remote.putServices(services, now)),
      putTools: (tools, now) => (live(), remote.putTools(tools, now)),
      commit: async (audit, position, partsOf) => {
        live();
        open = false;
        // SQLite would checkpoint the import's pages inside this connection's next COMMIT
        // (the WAL is past wal_autocheckpoint): not until the worker has.
        this.#suspendAutoCheckpoint();
        let checkpointed: Promise<void>;
        try {
          ({ checkpointed } = await remote.commit(audit, position, partsOf));
        } catch (err) {
          this.#resumeAutoCheckpoint();
          throw err;
        } finally {
          release();
        }
        this.#committed(true);
        void checkpointed.then(() => this.#resumeAutoCheckpoint());
      },
      rollback: async () => {
        if (!open) return;
        open = false;
        try {
          await remote.rollback();
        } finally {
          release();
        }
      },
    };
  }

  /** Stops the bulk worker, then closes the connection and the WAL's descriptor. */
  close(): void {
    this.#bulk?.close();
    if (this.#db.open) this.#db.close();
    this.#wal?.close();
  }

  #suspendAutoCheckpoint(): void {
    if (this.#autoCheckpoint === null) {
      this.#autoCheckpoint = this.#db.pragma('wal_autocheckpoint', { simple: true }) as number;
      this.#db.pragma('wal_autocheckpoint = 0');
    }
    this.#pendingCheckpoints++;
  }

  #resumeAutoCheckpoint(): void {
    if (--this.#pendingCheckpoints > 0 || this.#autoCheckpoint === null) return;
    if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${this.#autoCheckpoint}`);
    this.#autoCheckpoint = null;
  }

  #committed(deferred: boolean): void {
    this.#committedIndex = this.#index.current();
    if (!deferred) this.#durableIndex = this.#committedIndex;
  }
}
