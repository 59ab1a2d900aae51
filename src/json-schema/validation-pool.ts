/**
 * Checks too costly for the event loop (more than INLINE_VALIDATION_WORK, work.ts) run on one
 * worker thread, so that discovery, `/healthz` and every other call go on meanwhile. The worker
 * runs one check at a time, with a time limit per check (the call's timeout) from when it
 * starts: a check that overruns it is stopped by terminating the thread, which a synchronous
 * validation on the main thread could never be. It also has a heap limit, and a bounded queue,
 * shared fairly: a caller may have only a few checks waiting at once, and the owners of waiting
 * checks take turns.
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
  /** The check the worker runs now: one at a time, so that its time limit is its own. */
  #running: Pending | null = null;
  /** Waiting checks per owner, taken in turn: one owner's checks cannot hold back another's. */
  readonly #waiting = new Map<string, Pending[]>();
  #count = 0;

  /** How many checks are waiting or running. */
  get waiting(): number {
    return this.#count;
  }

  check(key: number, schema: Record<string, unknown>, value: unknown, options: CheckOptions): Promise<FieldError[]> {
    const mine = (this.#waiting.get(options.owner)?.length ?? 0) + (this.#running?.options.owner === options.owner ? 1 : 0);
    if (this.#count >= MAX_WAITING || mine >= MAX_WAITING_PER_OWNER) {
      return Promise.reject(new ValidationBusyError('too many large checks are waiting; retry shortly'));
    }
    const request: CheckRequest = { id: this.#nextId++, key, schema, json: JSON.stringify(value), budget: options.budget };
    return new Promise<FieldError[]>((resolve, reject) => {
      const pending: Pending = { request, options, resolve, reject, timer: undefined };
      const queue = this.#waiting.get(options.owner);
      if (queue) queue.push(pending);
      else this.#waiting.set(options.owner, [pending]);
      this.#count++;
      this.#dispatch();
    });
  }

  /** Stops the worker; what waits on it fails. */
  close(): void {
    const stopped = new Error('the validation worker was stopped');
    if (this.#running) this.#settle(this.#running, stopped);
    for (const queue of this.#waiting.values()) for (const pending of queue) this.#settle(pending, stopped);
    this.#waiting.clear();
    this.#stop();
  }

  /** Sends the next check, from the owner whose turn it is, when the worker is free. */
  #dispatch(): void {
    if (this.#running) return;
    const next = this.#waiting.entries().next();
    if (next.done) return;
    const [owner, queue] = next.value;
    const pending = queue.shift() as Pending;
    // The owner goes to the back of the turn order (a Map keeps insertion order).
    this.#waiting.delete(owner);
    if (queue.length > 0) this.#waiting.set(owner, queue);
    this.#running = pending;
    // The time limit runs from when the worker gets the check, not while it waits.
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
      // The check it was running killed it: refused; the next goes to a new worker.
      const running = this.#running;
      if (running)
        this.#settle(
          running,
          new ValidationWorkError(
            `the ${running.options.what} could not be checked: the check needed more memory than the registry allows for one check`,
          ),
        );
      this.#dispatch();
    };
    worker.on('error', lost);
    worker.on('exit', lost);
    this.#worker = worker;
    return worker;
  }

  #answer(reply: CheckReply): void {
    const pending = this.#running;
    if (!pending || pending.request.id !== reply.id) return;
    if ('errors' in reply) this.#settle(pending, reply.errors);
    else if ('over' in reply) this.#settle(pending, overBudget(pending.options.what, pending.options.budget));
    else this.#settle(pending, new UncompilableSchemaError(reply.uncompilable));
    this.#dispatch();
  }

  /** The running check ran past its time: the worker is stopped, and the next sent to a new one. */
  #overran(pending: Pending): void {
    if (this.#running !== pending) return;
    this.#settle(
      pending,
      new ValidationWorkError(
        `checking the ${pending.options.what} took longer than ${pending.options.timeoutMs} ms, and was stopped: send a smaller value`,
      ),
    );
    this.#stop();
    this.#dispatch();
  }

  #settle(pending: Pending, outcome: FieldError[] | Error): void {
    clearTimeout(pending.timer);
    if (this.#running === pending) this.#running = null;
    this.#count--;
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
