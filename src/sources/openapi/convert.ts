/**
 * OpenAPI conversion off the event loop (issue 30): a document of 1,000 operations takes 340 to
 * 640 ms of parsing, validation and $ref expansion here, which would stall every read. It runs
 * in a worker thread, with a heap limit and a time limit, one conversion per worker and at most
 * CONCURRENT workers; a worker that ran out of time or memory is stopped and replaced. Idle
 * workers are kept (they do not hold the process open): starting one costs more than most
 * conversions.
 */
import type { Worker } from 'node:worker_threads';
import { RegistryError, type ErrorCode, type FieldError } from '../../model/errors.js';
import { startWorker } from '../../package-root.js';
import type { ImportedDocument, OpenApiImportOptions } from './import.js';

/** Conversions at once; each holds a worker. */
const CONCURRENT = 2;
/** Conversions waiting for a worker; past it a write is refused (503, Retry-After). */
const WAITING_MAX = 8;
/** A worker's heap: 10 MiB of YAML expands to some hundreds of MiB of objects. */
const WORKER_HEAP_MB = 512;

export interface ConvertOptions {
  /** Longest a conversion may run (from when its worker takes it). */
  timeoutMs: number;
}

type Reply = { id: number } & (
  { ok: true; converted: ImportedDocument } | { ok: false; code: ErrorCode; message: string; fieldErrors?: FieldError[] }
);

interface Job {
  id: number;
  options: OpenApiImportOptions;
  resolve: (converted: ImportedDocument) => void;
  reject: (error: Error) => void;
}

export class OpenApiConverter {
  readonly #idle: Worker[] = [];
  readonly #busy = new Map<Worker, { job: Job; timer: NodeJS.Timeout }>();
  readonly #waiting: Job[] = [];
  readonly #timeoutMs: number;
  #nextId = 1;

  constructor({ timeoutMs }: ConvertOptions) {
    this.#timeoutMs = timeoutMs;
  }

  convert(options: OpenApiImportOptions): Promise<ImportedDocument> {
    if (this.#busy.size >= CONCURRENT && this.#waiting.length >= WAITING_MAX)
      return Promise.reject(
        new RegistryError('TR_ERR_UNAVAILABLE', 'too many OpenAPI documents are being converted; retry shortly', { retryAfterS: 5 }),
      );
    return new Promise((resolve, reject) => {
      this.#waiting.push({ id: this.#nextId++, options, resolve, reject });
      this.#dispatch();
    });
  }

  /** Stops every worker; conversions still running are refused. */
  close(): void {
    for (const worker of [...this.#idle, ...this.#busy.keys()]) void worker.terminate();
    for (const { job } of this.#busy.values()) job.reject(new RegistryError('TR_ERR_UNAVAILABLE', 'the registry is stopping'));
    this.#idle.length = 0;
    this.#busy.clear();
  }

  #dispatch(): void {
    while (this.#waiting.length > 0 && this.#busy.size < CONCURRENT) {
      const job = this.#waiting.shift() as Job;
      const worker = this.#idle.pop() ?? this.#start();
      const timer = setTimeout(() => this.#lost(worker, timedOut(this.#timeoutMs)), this.#timeoutMs);
      this.#busy.set(worker, { job, timer });
      worker.postMessage({ id: job.id, options: job.options });
    }
  }

  #start(): Worker {
    const worker = startWorker(import.meta.url, 'convert-worker', { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const running = this.#busy.get(worker);
      if (running?.job.id !== reply.id) return;
      clearTimeout(running.timer);
      this.#busy.delete(worker);
      this.#idle.push(worker);
      if (reply.ok) running.job.resolve(reply.converted);
      else running.job.reject(new RegistryError(reply.code, reply.message, reply.fieldErrors ? { fieldErrors: reply.fieldErrors } : {}));
      this.#dispatch();
    });
    worker.on('error', (error) => this.#lost(worker, outOfMemory(error)));
    worker.on('exit', () => this.#lost(worker, outOfMemory()));
    return worker;
  }

  /** A worker that overran, crashed or exited: its conversion is refused, and it is not used again. */
  #lost(worker: Worker, error: RegistryError): void {
    const idle = this.#idle.indexOf(worker);
    if (idle >= 0) this.#idle.splice(idle, 1);
    const running = this.#busy.get(worker);
    if (running) {
      clearTimeout(running.timer);
      this.#busy.delete(worker);
      running.job.reject(error);
    }
    void worker.terminate();
    this.#dispatch();
  }
}

const timedOut = (ms: number) =>
  new RegistryError('TR_ERR_VALIDATION', `OpenAPI document: converting it took longer than ${ms} ms, and was stopped`);

const outOfMemory = (error?: Error) =>
  new RegistryError(
    'TR_ERR_VALIDATION',
    `OpenAPI document: converting it needed more memory than the registry allows for one document${error && !/memory/i.test(error.message) ? ` (${error.message.slice(0, 200)})` : ''}`,
  );
