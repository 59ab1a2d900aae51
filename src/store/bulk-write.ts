/**
 * An import's SQLite transaction on a worker thread. Written on the main thread, even in slices,
 * a 100,000-tool import held the event loop for the SQL of every slice, and at the end for its
 * COMMIT: 55-120 ms, most of it SQLite re-checksumming the WAL frames of pages it wrote out
 * during the transaction and changed again (a bigger page cache made the COMMIT longer), plus
 * 0.55-0.75 s of checkpoint when the WAL passed wal_autocheckpoint. The worker
 * (bulk-write-worker.ts) opens its own connection to the same file, runs the same store code
 * in one IMMEDIATE transaction (commits under synchronous=NORMAL; the caller fdatasyncs the WAL
 * as for any deferred commit), and checkpoints after answering the commit, off the main thread.
 * It is started for each import and stopped after its checkpoint.
 */
import type { Worker } from 'node:worker_threads';
import { RegistryError, type ErrorCode } from '../model/errors.js';
import type { AuditEntryInput, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import { startWorker } from '../package-root.js';
import type { ReplicationPosition } from './replication-position-rows.js';
import type { ToolWrite } from './tool-rows.js';

/** One step of a bulk write, as the main thread asks it of the worker. */
type BulkStep =
  | { op: 'begin'; path: string; maxPageCount: number; index: number | undefined }
  | { op: 'putServices'; services: readonly ToolService[]; now: string }
  | { op: 'putTools'; tools: readonly ToolWrite[]; now: string }
  | { op: 'commit'; audit: AuditEntryInput | undefined; position: ReplicationPosition | undefined; partsOf: string | undefined }
  | { op: 'rollback' };

/** A step with the id its answer carries. */
export type BulkRequest = BulkStep & { id: number };

/** The worker's answer to a request (id -1: its checkpoint after a commit). */
export type BulkReply = { id: number } & ({ ok: true; value: unknown } | { ok: false; error: { code?: ErrorCode; message: string } });

/** A bulk write under way on the worker; every step resolves once the worker has done it. */
export interface RemoteBulkWrite {
  readonly index: number;
  putServices(services: readonly ToolService[], now: string): Promise<PutResult<ServiceRecord>[]>;
  putTools(tools: readonly ToolWrite[], now: string): Promise<PutResult<ToolRecord>[]>;
  /** Resolves once committed (not yet fdatasynced); `checkpointed` once the worker has checkpointed after it. */
  commit(
    audit: AuditEntryInput | undefined,
    position: ReplicationPosition | undefined,
    partsOf: string | undefined,
  ): Promise<{ checkpointed: Promise<void> }>;
  rollback(): Promise<void>;
}

export class BulkWriter {
  readonly #path: string;
  #worker: Worker | null = null;
  #nextId = 0;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  #onCheckpoint: (() => void) | null = null;

  constructor(path: string) {
    this.#path = path;
  }

  /** Opens the worker's connection and its transaction (IMMEDIATE: it waits for other writers). */
  async begin(maxPageCount: number, pinnedIndex?: number): Promise<RemoteBulkWrite> {
    const index = (await this.#call({ op: 'begin', path: this.#path, maxPageCount, index: pinnedIndex })) as number;
    return {
      index,
      putServices: async (services, now) => (await this.#call({ op: 'putServices', services, now })) as PutResult<ServiceRecord>[],
      putTools: async (tools, now) => (await this.#call({ op: 'putTools', tools, now })) as PutResult<ToolRecord>[],
      commit: async (audit, position, partsOf) => {
        const checkpointed = new Promise<void>((resolve) => {
          this.#onCheckpoint = resolve;
        });
        await this.#call({ op: 'commit', audit, position, partsOf });
        return { checkpointed };
      },
      rollback: async () => {
        await this.#call({ op: 'rollback' });
        if (this.#pending.size === 0) this.#stop();
      },
    };
  }

  /** Stops the worker; a bulk write still open is rolled back by SQLite. */
  close(): void {
    this.#fail(new Error('the database is closed'));
    this.#stop();
  }

  #stop(): void {
    const worker = this.#worker;
    this.#worker = null;
    void worker?.terminate();
  }

  #call(request: BulkStep): Promise<unknown> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#start().postMessage({ ...request, id });
    });
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = startWorker(import.meta.url, 'bulk-write-worker');
    worker.unref();
    worker.on('message', (reply: BulkReply) => this.#answer(reply));
    // Only a worker that stops on its own fails what waits on it (#stop forgets it first).
    const failed = (err: Error) => {
      if (this.#worker !== worker) return;
      this.#worker = null;
      this.#fail(err);
    };
    worker.on('error', failed);
    worker.on('exit', () => failed(new Error('the bulk write worker stopped')));
    this.#worker = worker;
    return worker;
  }

  #answer(reply: BulkReply): void {
    if (reply.id === -1) {
      this.#onCheckpoint?.();
      this.#onCheckpoint = null;
      // The import is over: the thread goes (its heap is tens of MiB), the next one starts anew.
      if (this.#pending.size === 0) this.#stop();
      return;
    }
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    this.#pending.delete(reply.id);
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(reply.error.code ? new RegistryError(reply.error.code, reply.error.message) : new Error(reply.error.message));
  }

  #fail(err: Error): void {
    for (const { reject } of this.#pending.values()) reject(err);
    this.#pending.clear();
    this.#onCheckpoint?.();
    this.#onCheckpoint = null;
  }
}
