/**
 * Blocking queries with Consul's semantics: a caller that passes the index it last saw waits
 * until its own view changes or its wait elapses. Waiters are grouped by view, so one write
 * computes each waiting view once; one broadcaster (a change-bus listener) wakes
 * them and one coarse ticker ends expired waits. A waiter holds no timer or closure of its own
 * beyond its entry here. Each holder (a caller key: token issuer and subject, or client address)
 * holds at most `maxPerCaller` waiters and streams, so that one caller cannot take the whole
 * MAX_WAITERS budget from the others.
 */
import { RegistryError } from '../model/errors.js';
import type { ChangeListener } from '../model/records.js';
import { viewKeyString, type ViewKey } from '../model/visibility.js';
import type { Catalog, CatalogView } from './catalog.js';

interface Waiter {
  key: ViewKey;
  index: number;
  /** The ETag of the view the caller already has; any other view wakes it. */
  etag: string;
  deadline: number;
  /** The caller key that holds it. */
  holder: string;
  resolve: (view: CatalogView) => void;
}

export interface WaitersOptions {
  maxWaiters: number;
  /** Waiters and streams one holder (caller key) may hold at once. */
  maxPerCaller: number;
  /** Resolution of wait deadlines. */
  tickMs?: number;
}

export interface Wait {
  /** Resolves with the caller's view when it changed since the index, or when the wait ends. */
  view: Promise<CatalogView>;
  /** Drops the waiter (the client went away). */
  cancel(): void;
}

export class ViewWaiters {
  readonly #catalog: Catalog;
  readonly #options: WaitersOptions;
  /** View key string -> its waiters. */
  readonly #groups = new Map<string, Set<Waiter>>();
  #count = 0;
  #ticker: NodeJS.Timeout | null = null;
  #unsubscribe: () => void;
  /** Extra long-lived listeners (change-feed streams) that share the MAX_WAITERS budget. */
  #reserved = 0;
  /** Caller key -> waiters and streams it holds (present only while above zero). */
  readonly #held = new Map<string, number>();

  /** `subscribe` is the change bus's: waiters wake only after a write has committed. */
  constructor(catalog: Catalog, subscribe: (listener: ChangeListener) => () => void, options: WaitersOptions) {
    this.#catalog = catalog;
    this.#options = options;
    this.#unsubscribe = subscribe(() => this.#wake());
  }

  /** Waiters plus reserved stream slots. */
  get size(): number {
    return this.#count + this.#reserved;
  }

  /** Reserved stream slots (GET /changes and MCP streams); `size` minus these are blocking queries. */
  get streams(): number {
    return this.#reserved;
  }

  /** What one holder (caller key) holds now. */
  heldBy(holder: string): number {
    return this.#held.get(holder) ?? 0;
  }

  /** Holds a slot for a long-lived stream of `holder`; returns its release. */
  reserve(holder: string): () => void {
    this.#ensureRoom(holder);
    this.#reserved++;
    this.#hold(holder, 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#reserved--;
      this.#hold(holder, -1);
    };
  }

  /**
   * Answers at once when the view changed after `index`, or when `index` is ahead of the
   * registry (a client from a reset or restored registry must start over); otherwise waits.
   */
  wait(key: ViewKey, index: number, waitMs: number, holder: string): Wait {
    // The plan alone (no bytes) while the query is held: its body is built when it is answered.
    const plan = this.#catalog.plan(key);
    if (index > this.#catalog.index || this.#catalog.changedAt(key) > index || waitMs <= 0) {
      return { view: Promise.resolve(this.#catalog.view(key)), cancel: () => undefined };
    }
    this.#ensureRoom(holder);
    let waiter!: Waiter;
    const promise = new Promise<CatalogView>((resolve) => {
      waiter = { key, index, etag: plan.etag, deadline: Date.now() + waitMs, holder, resolve };
    });
    // Grouped by the caller's own scopes (not the normalised key, which can change under them).
    const group = viewKeyString(key);
    let set = this.#groups.get(group);
    if (!set) {
      set = new Set();
      this.#groups.set(group, set);
    }
    set.add(waiter);
    this.#count++;
    this.#hold(holder, 1);
    this.#startTicker();
    return { view: promise, cancel: () => this.#remove(group, waiter) };
  }

  /** Answers every waiter with its current view (shutdown). */
  releaseAll(): void {
    for (const [group, set] of this.#groups) {
      for (const waiter of set) {
        this.#remove(group, waiter);
        waiter.resolve(this.#catalog.view(waiter.key));
      }
    }
  }

  close(): void {
    this.releaseAll();
    this.#unsubscribe();
    this.#stopTicker();
  }

  #ensureRoom(holder: string): void {
    if (this.size >= this.#options.maxWaiters) {
      throw new RegistryError(
        'TR_ERR_UNAVAILABLE',
        `${this.size} blocking queries and streams are open, the most this registry holds; retry shortly`,
        {
          retryAfterS: 5,
        },
      );
    }
    const held = this.heldBy(holder);
    if (held >= this.#options.maxPerCaller) {
      throw new RegistryError(
        'TR_ERR_UNAVAILABLE',
        `this caller holds ${held} blocking queries and streams, the most one caller may hold; close one or retry shortly`,
        {
          retryAfterS: 5,
        },
      );
    }
  }

  #hold(holder: string, delta: 1 | -1): void {
    const held = this.heldBy(holder) + delta;
    if (held > 0) this.#held.set(holder, held);
    else this.#held.delete(holder);
  }

  #wake(): void {
    for (const [group, set] of this.#groups) {
      const first = set.values().next().value;
      if (!first) continue;
      // One view computation per group, however many wait on it. Bytes, not indexes, decide:
      // a write that leaves this view's bytes alone wakes nobody here.
      const { etag } = this.#catalog.plan(first.key);
      let view: CatalogView | undefined;
      for (const waiter of set) {
        if (etag !== waiter.etag) {
          this.#remove(group, waiter);
          view ??= this.#catalog.view(first.key);
          waiter.resolve(view);
        }
      }
    }
  }

  #tick(): void {
    const now = Date.now();
    for (const [group, set] of this.#groups) {
      for (const waiter of set) {
        if (waiter.deadline <= now) {
          this.#remove(group, waiter);
          waiter.resolve(this.#catalog.view(waiter.key));
        }
      }
    }
  }

  #remove(group: string, waiter: Waiter): void {
    const set = this.#groups.get(group);
    if (!set?.delete(waiter)) return;
    this.#count--;
    this.#hold(waiter.holder, -1);
    if (set.size === 0) this.#groups.delete(group);
    if (this.#count === 0) this.#stopTicker();
  }

  #startTicker(): void {
    this.#ticker ??= setInterval(() => this.#tick(), this.#options.tickMs ?? 250).unref();
  }

  #stopTicker(): void {
    if (this.#ticker) clearInterval(this.#ticker);
    this.#ticker = null;
  }
}
