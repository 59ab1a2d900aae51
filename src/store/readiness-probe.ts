/**
 * The database's part of /readyz: it takes a write and has room for more.
 */
import { statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import { RegistryError } from '../model/errors.js';
import type { SqliteDatabase } from './database.js';
import { translate, type Transactions } from './transactions.js';

/**
 * Readiness wants room for writes, not only a write that succeeds: the probe rewrites one row in
 * place, which needs no new page, so it kept passing on a full disk while every real write
 * failed with SQLITE_FULL. Below this much room (on the disk, or under max_page_count) the
 * database is reported not ready; READY_MIN_FREE_BYTES sets it.
 */
const DEFAULT_MIN_ROOM_BYTES = 16 * 1024 * 1024;

export class ReadinessProbe {
  readonly #db: SqliteDatabase;
  readonly #transactions: Transactions;
  readonly #minRoomBytes: number;
  readonly #stmts;

  constructor(db: SqliteDatabase, transactions: Transactions, minRoomBytes = DEFAULT_MIN_ROOM_BYTES) {
    this.#db = db;
    this.#transactions = transactions;
    this.#minRoomBytes = minRoomBytes;
    this.#stmts = {
      room: db
        .prepare(
          'SELECT (m.max_page_count - c.page_count + f.freelist_count) * s.page_size FROM pragma_max_page_count() m, pragma_page_count() c, pragma_freelist_count() f, pragma_page_size() s',
        )
        .pluck(),
      probe: db.prepare(
        'INSERT INTO health_probe (id, probed_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at',
      ),
    };
  }

  /** See RegistryStore.probeWrite. */
  probeWrite(now: string): void {
    this.#transactions.refuseAfterSyncFailure();
    const room = this.#roomBytes();
    if (room < this.#minRoomBytes) {
      throw new RegistryError(
        'TR_ERR_UNAVAILABLE',
        `the database has ${room} bytes of room left, under the ${this.#minRoomBytes} readiness needs (READY_MIN_FREE_BYTES)`,
      );
    }
    // While an import holds the connection its transaction is the proof; the probe would join it.
    if (this.#transactions.gate.held) return;
    translate(() => this.#stmts.probe.run(now));
  }

  /** Bytes the database can still grow by: pages under max_page_count, and the disk's free space. */
  #roomBytes(): number {
    const pages = translate(() => this.#stmts.room.get() as number);
    if (this.#db.memory) return pages;
    const disk = statfsSync(dirname(this.#db.name));
    return Math.min(pages, disk.bavail * disk.bsize);
  }
}
