/**
 * The audit log as a service: successful writes are logged by the store inside their own
 * transaction; refusals (which come in floods, a client retrying a bad token) are buffered and
 * written in batches; reads see everything recorded so far; entries past retention are pruned.
 */
import type { AuditEntry, AuditEntryInput } from '../model/records.js';
import { BatchWriter } from '../store/batch-writer.js';
import type { AuditQuery, AuditStore } from '../store/audit-store.js';

export interface AuditLogOptions {
  retentionDays: number;
  onError: (err: unknown, what: string) => void;
  onPruned?: (removed: number) => void;
  /**
   * The registry index reads may show entries through: writes whose commit still waits for its
   * fsync are left out, like everywhere else (RegistryStore.visibleThrough).
   */
  visibleThrough?: () => number;
}

const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

export class AuditLog {
  readonly #store: AuditStore;
  readonly #options: AuditLogOptions;
  readonly #refusals: BatchWriter<AuditEntryInput>;
  readonly #pruneTimer: NodeJS.Timeout;

  constructor(store: AuditStore, options: AuditLogOptions) {
    this.#store = store;
    this.#options = options;
    this.#refusals = new BatchWriter<AuditEntryInput>((batch) => store.insertMany(batch), {
      flushIntervalMs: 250,
      maxBatch: 1000,
      maxPending: 10_000,
      onError: (err) => options.onError(err, 'writing audit entries failed'),
      gate: store.gate,
    });
    this.prune();
    this.#pruneTimer = setInterval(() => this.prune(), PRUNE_EVERY_MS).unref();
  }

  /** Records a refused write or call (batched). */
  recordRefusal(entry: AuditEntryInput): void {
    this.#refusals.push(entry);
  }

  /** Newest first, keyset-paged; includes refusals still waiting in the batch. */
  list(query: AuditQuery): AuditEntry[] {
    this.#refusals.flush();
    return this.#store.list({ ...query, throughIndex: this.#options.visibleThrough?.() });
  }

  prune(): void {
    try {
      const removed = this.#store.prune(new Date(Date.now() - this.#options.retentionDays * DAY_MS).toISOString());
      if (removed > 0) this.#options.onPruned?.(removed);
    } catch (err) {
      this.#options.onError(err, 'pruning the audit log failed');
    }
  }

  close(): void {
    clearInterval(this.#pruneTimer);
    this.#refusals.flush();
  }
}
