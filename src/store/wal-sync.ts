/**
 * Durability off the main thread, for group commit. Under synchronous=FULL SQLite fsyncs the
 * WAL inside COMMIT, and better-sqlite3 runs COMMIT on the event loop: for that fsync (1-4 ms
 * on the bench machine) no request is read, validated or answered. A deferred group commit
 * instead commits under synchronous=NORMAL (the WAL frames reach the OS, not yet the disk) and
 * then calls `sync()`, which fdatasyncs the WAL file on libuv's thread pool; nothing of the
 * batch is acknowledged, published or shown to readers before it returns.
 *
 * Why that is as durable as FULL: in WAL mode a transaction is on disk once its frames are, and
 * recovery replays every frame up to the last valid commit frame. FULL adds exactly one fsync
 * of the WAL after the commit's frames are written; `sync()` is that fsync, on a descriptor of
 * our own (fsync flushes the file, whichever descriptor asks). Under NORMAL SQLite still syncs
 * the WAL header when it restarts the log, the WAL before a checkpoint copies it into the
 * database, and the database before the log is reused, so nothing `sync()` has yet to reach can
 * be lost to a checkpoint. One fdatasync covers every commit made before it started; commits
 * made while one runs share the next one.
 *
 * A failed fdatasync is final: the kernel may have dropped the dirty pages and a retry could
 * report success for data that is gone (PostgreSQL's "fsyncgate"), so every later `sync()`
 * fails with the same error and the registry stops taking writes until it is restarted and
 * recovers from what the disk holds.
 */
import { closeSync, fdatasync, openSync, realpathSync } from 'node:fs';
import type { SqliteDatabase } from './database.js';

export type Fdatasync = (fd: number, callback: (err: NodeJS.ErrnoException | null) => void) => void;

export class WalSync {
  readonly #fd: number;
  readonly #fdatasync: Fdatasync;
  /** The fdatasync in flight. */
  #running: Promise<void> | null = null;
  /** The one that starts when the running one ends, shared by every caller meanwhile. */
  #next: Promise<void> | null = null;
  #failure: Error | null = null;
  #closed = false;
  #open = true;

  private constructor(fd: number, sync: Fdatasync) {
    this.#fd = fd;
    this.#fdatasync = sync;
  }

  /**
   * Opens the WAL file of a file database in WAL mode; null for anything else (`:memory:`, a
   * `file:` URI, another journal mode), whose commits then stay synchronous=FULL.
   */
  static open(db: SqliteDatabase, sync: Fdatasync = fdatasync): WalSync | null {
    if (db.memory || db.name.startsWith('file:')) return null;
    if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return null;
    try {
      // SQLite names the log after the database's real path (it resolves symbolic links).
      return new WalSync(openSync(`${realpathSync(db.name)}-wal`, 'r'), sync);
    } catch {
      return null;
    }
  }

  /** The error of the fdatasync that failed, once one has. */
  get failure(): Error | null {
    return this.#failure;
  }

  /** Resolves once every commit made before the call is on disk. */
  sync(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closed) return Promise.reject(new Error('the database is closed'));
    if (this.#next) return this.#next;
    if (!this.#running) return this.#start();
    const next = this.#running.then(
      () => this.#start(),
      () => this.#start(),
    );
    this.#next = next;
    return next;
  }

  /** Closes the descriptor once no fdatasync needs it any more. */
  close(): void {
    this.#closed = true;
    this.#closeIfIdle();
  }

  #start(): Promise<void> {
    this.#next = null;
    if (this.#failure) return Promise.reject(this.#failure);
    let settled = false;
    const slot: { running?: Promise<void> } = {};
    slot.running = new Promise<void>((resolve, reject) => {
      this.#fdatasync(this.#fd, (err) => {
        settled = true;
        if (this.#running === slot.running) this.#running = null;
        if (err) this.#failure ??= err;
        this.#closeIfIdle();
        if (this.#failure) reject(this.#failure);
        else resolve();
      });
    });
    // A callback that came at once (a test's fake) has already settled it.
    if (!settled) this.#running = slot.running;
    return slot.running;
  }

  #closeIfIdle(): void {
    if (!this.#closed || !this.#open || this.#running || this.#next) return;
    this.#open = false;
    try {
      closeSync(this.#fd);
    } catch {
      // Nothing waits on it any more; a failed close loses nothing.
    }
  }
}
