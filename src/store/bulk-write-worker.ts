/**
 * The thread an import's SQLite transaction runs on (src/store/bulk-write.ts): its own
 * connection to the registry's database file, the same store code, one message per step,
 * answered in the order they came. After the commit it checkpoints the WAL, still here, and
 * closes its connection, so that between imports the main connection is the only one.
 */
import { parentPort } from 'node:worker_threads';
import { RegistryError } from '../model/errors.js';
import { AuditStore } from './audit-store.js';
import { openDatabase, type SqliteDatabase } from './database.js';
import type { BulkReply, BulkRequest } from './bulk-write.js';
import { RegistryStore } from './registry-store.js';
import type { SlicedWrite } from './transactions.js';

let db: SqliteDatabase | null = null;
let write: SlicedWrite | null = null;

function end(): void {
  write = null;
  db?.close();
  db = null;
}

function run(request: BulkRequest): unknown {
  switch (request.op) {
    case 'begin': {
      if (write) throw new Error('a bulk write is already open');
      db = openDatabase(request.path);
      // The main connection's limits hold for the import too (a test fills the disk this way).
      db.pragma(`max_page_count = ${Math.trunc(request.maxPageCount)}`);
      // Its checkpoint runs after the answer to the commit, not inside COMMIT.
      db.pragma('wal_autocheckpoint = 0');
      write = new RegistryStore(db, new AuditStore(db)).beginSliced({ deferSync: true, index: request.index });
      return write.index;
    }
    case 'putServices':
      return live().putServices(request.services, request.now);
    case 'putTools':
      return live().putTools(request.tools, request.now);
    case 'commit':
      live().commit(request.audit, request.position, request.partsOf);
      return null;
    case 'rollback':
      write?.rollback();
      end();
      return null;
  }
}

function live(): SlicedWrite {
  if (!write) throw new Error('no bulk write is open');
  return write;
}

const port = parentPort;
if (!port) throw new Error('bulk-write-worker.ts runs as a worker thread');

port.on('message', (request: BulkRequest) => {
  let reply: BulkReply;
  try {
    reply = { id: request.id, ok: true, value: run(request) };
  } catch (err) {
    // A failed step leaves nothing behind: the transaction goes, and so does the connection.
    try {
      write?.rollback();
    } finally {
      end();
    }
    reply = {
      id: request.id,
      ok: false,
      error:
        err instanceof RegistryError
          ? { code: err.code, message: err.message }
          : { message: err instanceof Error ? err.message : String(err) },
    };
  }
  port.postMessage(reply);
  if (request.op === 'commit' && reply.ok) {
    let checkpoint: BulkReply;
    try {
      const [result] = (db as SqliteDatabase).pragma('wal_checkpoint(PASSIVE)') as unknown[];
      checkpoint = { id: -1, ok: true, value: result };
    } catch (err) {
      checkpoint = { id: -1, ok: false, error: { message: err instanceof Error ? err.message : String(err) } };
    }
    end();
    port.postMessage(checkpoint);
  }
});
