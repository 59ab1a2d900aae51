/**
 * Buffers records and writes them in batches, one transaction per batch: for records that
 * arrive in floods (tool calls, refused requests), where one fsync each would let cheap
 * requests turn into disk-bound ones. A flush runs after `flushIntervalMs`, or at once when
 * `maxBatch` records wait. Memory is bounded: past `maxPending` the oldest are dropped and
 * counted.
 */
export interface BatchWriterOptions {
  flushIntervalMs: number;
  maxBatch: number;
  maxPending: number;
  onError?: (err: unknown) => void;
  /** While this is held (a write spanning many turns, src/store/write-gate.ts), flushes wait. */
  gate?: { readonly held: boolean };
}

export class BatchWriter<T> {
  readonly #write: (batch: readonly T[]) => void;
  readonly #options: BatchWriterOptions;
  #pending: T[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Records dropped because the buffer was full or their batch failed to write. */
  dropped = 0;

  constructor(write: (batch: readonly T[]) => void, options: BatchWriterOptions) {
    this.#write = write;
    this.#options = options;
  }

  push(record: T): void {
    if (this.#pending.length >= this.#options.maxPending) {
      this.#pending.shift();
      this.dropped++;
    }
    this.#pending.push(record);
    if (this.#pending.length >= this.#options.maxBatch) this.flush();
    else this.#timer ??= setTimeout(() => this.flush(), this.#options.flushIntervalMs).unref();
  }

  /** Writes everything pending now (also on shutdown and before reads that must see it). */
  flush(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#pending.length === 0) return;
    if (this.#options.gate?.held) {
      this.#timer = setTimeout(() => this.flush(), this.#options.flushIntervalMs).unref();
      return;
    }
    const batch = this.#pending;
    this.#pending = [];
    try {
      this.#write(batch);
    } catch (err) {
      this.dropped += batch.length;
      this.#options.onError?.(err);
    }
  }
}
