/**
 * Buffers audit entries for refused requests and writes them in batches: refusals come in
 * floods (a client retrying with a bad token), and one transaction per refusal would let a
 * flood of cheap requests turn into a flood of fsyncs. Memory is bounded; past the bound the
 * oldest pending entries are dropped and counted.
 */
import type { AuditEntryInput, AuditStore } from '../store/audit-store.js';

export interface AuditRecorderOptions {
  flushIntervalMs: number;
  maxPending: number;
  onError?: (err: unknown) => void;
}

export class AuditRecorder {
  readonly #store: AuditStore;
  readonly #options: AuditRecorderOptions;
  #pending: AuditEntryInput[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Entries dropped because the buffer was full. */
  dropped = 0;

  constructor(store: AuditStore, options: AuditRecorderOptions) {
    this.#store = store;
    this.#options = options;
  }

  record(entry: AuditEntryInput): void {
    if (this.#pending.length >= this.#options.maxPending) {
      this.#pending.shift();
      this.dropped++;
    }
    this.#pending.push(entry);
    this.#timer ??= setTimeout(() => this.flush(), this.#options.flushIntervalMs).unref();
  }

  /** Writes everything pending in one transaction. */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    try {
      this.#store.insertMany(batch);
    } catch (err) {
      this.dropped += batch.length;
      this.#options.onError?.(err);
    }
  }
}
