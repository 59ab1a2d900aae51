/**
 * Checks too costly for the event loop (more than INLINE_VALIDATION_WORK, work.ts) run on one
 * worker thread, so that discovery, `/healthz` and every other call go on meanwhile. The worker
 * has a time limit per check (the call's timeout): a check that overruns it is stopped by
 * terminating the thread, which a synchronous validation on the main thread could never be.
 * It also has a heap limit, and a bounded queue, shared fairly: a caller may have only a few
 * checks waiting at once.
 */
import type { Worker } from 'node:worker_threads';
import type { FieldError } from '../model/errors.js';
import { startWorker } from '../package-root.js';
import { UncompilableSchemaError } from './compile.js';
import { overBudget, ValidationWorkError } from './work.js';

/** What the main thread asks of the worker. */
export interface CheckRequest {
  id: number;
  /** Names the schema: the worker compiles each key once. */
  key: number;
  schema: Record<string, unknown>;
  /**
   * The value as JSON text: copying a string to the worker is one copy of its bytes, where the
   * structured clone of a 1 MB array of objects held the event loop for 100 ms.
   */
  json: string;
  budget: number;
}

export type CheckReply = { id: number } & ({ errors: FieldError[] } | { over: true } | { uncompilable: string });

/** Checks waiting for the worker, in all and per owner (a caller, or a tool's upstream). */
const MAX_WAITING = 32;
const MAX_WAITING_PER_OWNER = 2;
/** The worker's heap: a value a check holds is within the body limits, its errors are not. */
const WORKER_HEAP_MB = 256;

/** The worker's queue is full, or the owner has too many checks waiting: retry shortly. */
export class ValidationBusyError extends Error {
  override readonly name = 'ValidationBusyError';
}

export interface CheckOptions {
  /** Who asked, for the per-owner share of the queue. */
  owner: string;
  /** Stop the check after this long. */
  timeoutMs: number;
  /** What the value is called in messages ("arguments", "answer"). */
  what: string;
  budget: number;
}

interface Pending {
  request: CheckRequest;
  options: CheckOptions;
  resolve: (errors: FieldError[]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

export class ValidationPool {
  #worker: Worker | null = null;
  #nextId = 0;
  /** In the order sent: the worker answers in that order, so the first is the one it runs. */
  readonly #pending = new Map<number, Pending>();
  readonly #waitingBy = new Map<string, number>();

  /** How many checks are waiting or running. */
  get waiting(): number {
    return this.#pending.size;
  }

  check(key: number, schema: Record<string, unknown>, value: unknown, options: CheckOptions): Promise<FieldError[]> {
    const mine = this.#waitingBy.get(options.owner) ?? 0;
    if (this.#pending.size >= MAX_WAITING || mine >= MAX_WAITING_PER_OWNER) {
      return Promise.reject(new ValidationBusyError('too many large checks are waiting; retry shortly'));
    }
    this.#waitingBy.set(options.owner, mine + 1);
    const request: CheckRequest = { id: this.#nextId++, key, schema, json: JSON.stringify(value), budget: options.budget };
    return new Promise<FieldError[]>((resolve, reject) => {
      const pending: Pending = { request, options, resolve, reject, timer: undefined };
      this.#pending.set(request.id, pending);
      this.#send(pending);
    });
  }

  /** Stops the worker; what waits on it fails. */
  close(): void {
    for (const pending of [...this.#pending.values()]) this.#settle(pending, new Error('the validation worker was stopped'));
    this.#stop();
  }

  #send(pending: Pending): void {
    // The time limit runs from when the worker gets the check; checks ahead of it have their own.
    clearTimeout(pending.timer);
    pending.timer = setTimeout(() => this.#overran(pending), pending.options.timeoutMs);
    pending.timer.unref();
    this.#start().postMessage(pending.request);
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = startWorker(import.meta.url, 'validation-worker', { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref();
    worker.on('message', (reply: CheckReply) => this.#answer(reply));
    const lost = () => {
      if (this.#worker !== worker) return;
      this.#worker = null;
      // The check it was running (the oldest) killed it: refused; the rest go to a new worker.
      const [first, ...rest] = this.#pending.values();
      if (first) this.#settle(first, new ValidationWorkError(`the ${first.options.what} could not be checked: the check needed more memory than the registry allows for one check`));
      for (const pending of rest) this.#send(pending);
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.#worker = worker;
    return worker;
  }

  #answer(reply: CheckReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    if ('errors' in reply) this.#settle(pending, reply.errors);
    else if ('over' in reply) this.#settle(pending, overBudget(pending.options.what, pending.options.budget));
    else this.#settle(pending, new UncompilableSchemaError(reply.uncompilable));
  }

  /** A check that ran past its time: the worker is stopped, and the others sent to a new one. */
  #overran(pending: Pending): void {
    if (!this.#pending.has(pending.request.id)) return;
    this.#settle(pending, new ValidationWorkError(`checking the ${pending.options.what} took longer than ${pending.options.timeoutMs} ms, and was stopped: send a smaller value`));
    this.#stop();
    for (const other of this.#pending.values()) this.#send(other);
  }

  #settle(pending: Pending, outcome: FieldError[] | Error): void {
    clearTimeout(pending.timer);
    this.#pending.delete(pending.request.id);
    const { owner } = pending.options;
    const left = (this.#waitingBy.get(owner) ?? 1) - 1;
    if (left > 0) this.#waitingBy.set(owner, left);
    else this.#waitingBy.delete(owner);
    if (outcome instanceof Error) pending.reject(outcome);
    else pending.resolve(outcome);
  }

  #stop(): void {
    const worker = this.#worker;
    this.#worker = null;
    void worker?.terminate();
  }
}

let shared: ValidationPool | undefined;

/** The process's one pool: one worker thread serves every app in the process. */
export function sharedValidationPool(): ValidationPool {
  return (shared ??= new ValidationPool());
}
