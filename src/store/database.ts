import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { DatabaseOpenError } from './open-error.js';

export type SqliteDatabase = Database.Database;

export interface OpenOptions {
  /** How long a writer waits for another connection's lock before failing. */
  busyTimeoutMs?: number;
}

/**
 * A new database is readable by its owner only: it holds MCP servers' upstream credentials and
 * the audit log. Its folder, when made here, is the owner's too (0700), and the file is made
 * 0600 before SQLite opens it; SQLite makes the `-wal` and `-shm` files with the mode of the
 * database file. An existing file keeps the mode its owner gave it.
 */
function createPrivately(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/**
 * Opens the registry database with the pragmas the store relies on. WAL lets reads go on during
 * a write; synchronous=FULL makes each acknowledged commit survive power loss as well as a
 * killed process, at the cost of one fsync per write transaction. The registry's group commit
 * moves that fsync off the main thread (src/store/wal-sync.ts) without weakening it.
 */
export function openDatabase(path: string, options: OpenOptions = {}): SqliteDatabase {
  let db: SqliteDatabase;
  try {
    if (path !== ':memory:' && !path.startsWith('file:')) createPrivately(path);
    db = new Database(path);
  } catch (err) {
    throw new DatabaseOpenError(path, err);
  }
  try {
    // The first statement reads the file: a file that is not a database fails here.
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.pragma('foreign_keys = ON');
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
  } catch (err) {
    db.close();
    throw new DatabaseOpenError(path, err);
  }
  return db;
}
