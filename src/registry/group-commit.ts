/**
 * Group commit: writes that arrive while the event loop is busy are queued and run together
 * in one transaction, each in its own savepoint (a failed write rolls back alone), so that a
 * burst of registrations pays one fsync instead of one each. Every write still gets its own
 * registry index.
 *
 * Pipelined: the commit does not wait for the disk on the main thread; the store fsyncs the WAL
 * on the thread pool (src/store/wal-sync.ts) while the main thread reads, authenticates and
 * parses the requests of the next batch. Until its fsync returns a batch is staged: its later
 * writes validate against its earlier ones (a tool may use a service put just before it, see
 * src/registry/staged-view.ts), but nobody sees it: not the catalogue, not the change bus, not
 * the change or audit log readers, and its writers get no answer.
 */
import type { SpanContext } from '@opentelemetry/api';
import type { Change } from '../model/records.js';
import type { RegistryStore, ReplicationPosition } from '../store/registry-store.js';
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogWrite } from '../catalog/snapshot.js';
import type { ChangeBus } from './change-bus.js';
import { callerSpan, CommitTelemetry, type CommitObserver } from './commit-telemetry.js';
import { StagedView, type StagedWrites } from './staged-view.js';

/**
 * Replicated mode: the message a write applies. Its index and time come from the message, so
 * that every replica stores the same records; the replica's position is saved with the write.
 */
export interface Pin {
  index: number;
  at: string;
  topic: string;
  messageId: string;
}

/** How a replicated write ended: decided the same way on every replica. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * A queued write, its result's type sealed in its closures: the queue holds writes of every
 * type, and each answers its own writer, so no resolve is widened to take `unknown`.
 */
interface QueuedWrite {
  kind: 'write';
  /**
   * Does the write, inside the batch's transaction, and returns its writer's answer, given once
   * the commit is on disk. Throws when the write is refused.
   */
  run: () => () => void;
  /** The answer to a write that threw (a replicated write resolves with the refusal as its outcome). */
  refused: (error: unknown) => void;
  /** The shared commit, its fsync or the catalogue's apply failed. */
  reject: (error: unknown) => void;
  /** Replicated mode: the message applied. */
  pin?: Pin;
  /** The span of the request that queued it, linked from its commit's span. */
  span?: SpanContext | undefined;
}

/** A write that runs alone and over many turns of the event loop (an import); it answers its writer itself. */
interface ExclusiveWrite {
  kind: 'exclusive';
  start: () => Promise<void>;
}

/** One group commit, from its transaction until its writers are answered. */
interface Batch extends StagedWrites {
  items: QueuedWrite[];
  /** Each item's answer, in queue order, given once the batch is durable. */
  answers: (() => void)[];
  /** Its successful writes, in index order, for the catalogue. */
  changes: { index: number; change: CatalogWrite }[];
}

/**
 * The time as an ISO string, built once per millisecond: the writes of a batch mostly share one,
 * and toISOString took 5-8 us a write in the bench's profile.
 */
let lastMs = Number.NaN;
let lastIso = '';
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}

export interface GroupCommitOptions {
  now: () => string;
  /** Replicated mode: staged parts of an import older than this, by message time, are dropped. */
  orphanAfterMs: number;
}

export class GroupCommit {
  readonly #store: RegistryStore;
  readonly #catalog: Catalog;
  readonly #bus: ChangeBus;
  readonly #now: () => string;
  readonly #orphanAfterMs: number;
  #queue: (QueuedWrite | ExclusiveWrite)[] = [];
  #scheduled = false;
  /** An exclusive write (an import) is running: nothing else is flushed meanwhile. */
  #exclusive = false;
  /** The batch committing or waiting for its fsync: the catalogue does not show it yet. */
  #staged: Batch | null = null;
  /** The last write time given out. */
  #lastStamp = '';
  /** The time of the replicated write running now (its message's), or null. */
  #pinnedAt: string | null = null;
  /** Group commits' spans and their observers (metrics). */
  readonly #commits = new CommitTelemetry();
  /** What the writes so far leave, staged ones included: what a write validates against. */
  readonly view: StagedView;

  constructor(store: RegistryStore, catalog: Catalog, bus: ChangeBus, options: GroupCommitOptions) {
    this.#store = store;
    this.#catalog = catalog;
    this.#bus = bus;
    this.#now = options.now;
    this.#orphanAfterMs = options.orphanAfterMs;
    this.view = new StagedView(catalog, () => this.#staged);
  }

  /** Queues a local write; it settles once its batch is on disk. */
  enqueue<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#push({
        kind: 'write',
        run: () => {
          const value = write();
          return () => resolve(value);
        },
        refused: reject,
        reject,
        span: callerSpan(),
      });
    });
  }

  /**
   * Replicated mode: queues the write of one message, run with the message's index and time.
   * Resolves with the outcome, refusals included; rejects only when the commit failed.
   */
  enqueuePinned(write: () => unknown, pin: Pin): Promise<Outcome> {
    return new Promise<Outcome>((resolve, reject) => {
      this.#push({
        kind: 'write',
        run: () => {
          const value = write();
          return () => resolve({ ok: true, value });
        },
        refused: (error) => resolve({ ok: false, error }),
        reject,
        pin,
      });
    });
  }

  /** Queues a write that runs alone, once the writes queued before it have settled; later ones wait for it. */
  enqueueExclusive<T>(job: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#push({ kind: 'exclusive', start: () => job().then(resolve, reject) });
    });
  }

  /** Calls `observer` after every group commit (its size, time and outcome); returns the unsubscribe. */
  observeCommits(observer: CommitObserver): () => void {
    return this.#commits.observe(observer);
  }

  /**
   * A write's time. Never before the last one given out, even when the clock steps back:
   * records are stamped in index order, and the catalogue binary-searches their times.
   */
  stamp(): string {
    return this.#advance(this.#pinnedAt ?? this.#now());
  }

  /** Replicated mode: the time of a write that runs outside a batch, from its message. */
  stampAt(at: string): string {
    return this.#advance(at);
  }

  /** The last write time given out. */
  get lastStamp(): string {
    return this.#lastStamp;
  }

  /** Replicated mode: the write time after a restart (the last one given out, saved with the position). */
  restoreStamp(lastAt: string): void {
    if (lastAt > this.#lastStamp) this.#lastStamp = lastAt;
  }

  /** Replicated mode: the position saved with the writes of a message. */
  position(pin: Pin): ReplicationPosition {
    return { topic: pin.topic, messageId: pin.messageId, index: pin.index, lastAt: this.#lastStamp };
  }

  /** Stages a committed write's records for the catalogue. */
  stage(index: number, change: CatalogWrite): void {
    const batch = this.#staged;
    if (!batch) throw new Error('a write ran outside a batch');
    for (const s of change.services ?? []) batch.services.set(s.id, s);
    for (const m of change.mcpServers ?? []) batch.mcpServers.set(m.id, m);
    for (const t of change.tools ?? []) batch.tools.set(t.name, t);
    batch.changes.push({ index, change });
  }

  #advance(now: string): string {
    if (now > this.#lastStamp) this.#lastStamp = now;
    return this.#lastStamp;
  }

  #push(entry: QueuedWrite | ExclusiveWrite): void {
    this.#queue.push(entry);
    this.#schedule();
  }

  /**
   * One batch at a time: while a batch waits for its fsync the next one gathers, and runs when
   * it has settled. With 16 clients on the bench machine that made 8 writes a commit, where
   * committing at every turn of the event loop made 5; a commit writes 12 WAL pages for one
   * tool, 18 for five and 22 for eight, so bigger batches write less per tool.
   */
  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#staged || this.#exclusive) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  /** Runs every queued write under one commit; the batch settles once the commit is on disk. */
  #flush(): void {
    this.#scheduled = false;
    const first = this.#queue[0];
    if (first?.kind === 'exclusive') {
      this.#queue.shift();
      this.#exclusive = true;
      first.start().finally(() => {
        this.#exclusive = false;
        this.#schedule();
      });
      return;
    }
    // Writes queued after an exclusive one wait for it.
    const items: QueuedWrite[] = [];
    for (const entry of this.#queue) {
      if (entry.kind === 'exclusive') break;
      items.push(entry);
    }
    const batch: Batch = { items, answers: [], services: new Map(), mcpServers: new Map(), tools: new Map(), changes: [] };
    this.#queue = items.length === this.#queue.length ? [] : this.#queue.slice(items.length);
    this.#staged = batch;
    const committed = this.#commits.start(batch.items);
    try {
      this.#store.group(
        () => {
          let pinned: Pin | undefined;
          for (const item of batch.items) {
            try {
              if (item.pin) {
                pinned = item.pin;
                this.#pinnedAt = item.pin.at;
                batch.answers.push(this.#store.withIndex(item.pin.index, item.run));
              } else {
                batch.answers.push(item.run());
              }
            } catch (error) {
              batch.answers.push(() => item.refused(error));
            } finally {
              this.#pinnedAt = null;
            }
          }
          // Replicated mode: the position moves with the writes, refused ones included; parts of
          // imports that were never finished go once a message is stamped long enough after them.
          if (pinned) {
            this.#store.dropImportPartsBefore(Date.parse(this.#lastStamp) - this.#orphanAfterMs);
            this.#store.saveReplicationPosition(this.position(pinned));
          }
        },
        { deferSync: true },
      );
    } catch (error) {
      // The shared commit failed, so none of the batch happened: nobody saw any of it, and
      // every write in it is refused.
      this.#staged = null;
      committed(error);
      for (const item of batch.items) item.reject(error);
      this.#schedule();
      return;
    }
    this.#store.sync().then(
      () => {
        committed();
        this.#settle(() => this.#finish(batch));
      },
      // Not durable: refused whole (and the store refuses every later write).
      (error: unknown) => {
        committed(error);
        this.#settle(() => batch.items.forEach((item) => item.reject(error)));
      },
    );
  }

  /** The staged batch's fsync has returned or failed: it settles, and the next one may run. */
  #settle(answer: () => void): void {
    this.#staged = null;
    try {
      answer();
    } finally {
      this.#schedule();
    }
  }

  /** A durable batch goes into the catalogue, then to the change bus, then its writers hear back. */
  #finish(batch: Batch): void {
    const published: [number, readonly Change[]][] = [];
    try {
      for (const { index, change } of batch.changes) published.push([index, this.#catalog.apply(index, change)]);
    } catch (error) {
      // A bug, not a refusal: the writes are stored, so the catalogue is rebuilt from SQLite.
      for (const item of batch.items) item.reject(error);
      try {
        this.#catalog.load(this.#store.loadSnapshot());
      } catch {
        // The database cannot be read either; the next write's failure (and /readyz) say so.
      }
      return;
    }
    for (const [index, changes] of published) this.#bus.publish(index, changes);
    for (const answer of batch.answers) answer();
  }
}
