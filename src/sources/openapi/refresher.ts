/**
 * When OpenAPI sources read from a `documentUrl` are read again (issue 30): each on a timer of
 * its own, its `refreshIntervalS` or the default (OPENAPI_REFRESH_S; 0: only on demand), counted
 * from its last read; at most one read of a source at a time, so that an on-demand refresh
 * during an interval's read waits for that read instead of starting another. What a read does
 * is the caller's (`read`); this keeps the times, the last error and what is in flight. Timers
 * are unref'd: they never hold the process open.
 */

/** What the refresher needs to know of a source. */
export interface RefreshedSource {
  id: string;
  /** Seconds between reads; 0 or undefined: the default. */
  intervalS: number | undefined;
  /** Only sources read from a URL are read again. */
  fromUrl: boolean;
}

export interface RefreshStatus {
  /** When the document was last read (successfully or not), ISO time; null before the first. */
  lastReadAt: string | null;
  /** Why the last read failed; null when it did not. */
  lastError: string | null;
  /** When the next read on the interval is due; null when only on demand. */
  nextReadAt: string | null;
}

interface Entry extends RefreshStatus {
  timer: NodeJS.Timeout | null;
  inflight: Promise<unknown> | null;
  intervalS: number;
}

export interface RefresherOptions<C> {
  /** OPENAPI_REFRESH_S: seconds between reads for sources that set no interval (0: only on demand). */
  defaultIntervalS: number;
  /** Reads and applies the source's document; throws with the reason when it cannot. */
  read: (id: string, context: C | undefined) => Promise<unknown>;
  now?: () => number;
  onError?: (id: string, error: unknown) => void;
}

export class OpenApiRefresher<C = never> {
  readonly #options: RefresherOptions<C>;
  readonly #entries = new Map<string, Entry>();
  #closed = false;

  constructor(options: RefresherOptions<C>) {
    this.#options = options;
  }

  /**
   * A source as stored now (at startup, and after each PUT, which has just read its document):
   * its timer starts afresh from `readAt` (default: now).
   */
  track(source: RefreshedSource, readAt?: number): void {
    if (this.#closed) return;
    this.untrack(source.id);
    if (!source.fromUrl) return;
    const intervalS = source.intervalS === undefined ? this.#options.defaultIntervalS : source.intervalS;
    const entry: Entry = {
      lastReadAt: readAt === undefined ? null : iso(readAt),
      lastError: null,
      nextReadAt: null,
      timer: null,
      inflight: null,
      intervalS,
    };
    this.#entries.set(source.id, entry);
    this.#schedule(source.id, entry, readAt ?? this.#now());
  }

  /** A deleted source, or one no longer read from a URL. */
  untrack(id: string): void {
    const entry = this.#entries.get(id);
    if (entry?.timer) clearTimeout(entry.timer);
    this.#entries.delete(id);
  }

  status(id: string): RefreshStatus | undefined {
    const entry = this.#entries.get(id);
    return entry && { lastReadAt: entry.lastReadAt, lastError: entry.lastError, nextReadAt: entry.nextReadAt };
  }

  /**
   * Reads a source now (or joins the read in flight), `context` given to `read` (who asked);
   * resolves with what `read` gave, rejects with its error.
   */
  refresh(id: string, context?: C): Promise<unknown> {
    const entry = this.#entries.get(id);
    if (!entry) return this.#options.read(id, context);
    if (entry.inflight) return entry.inflight;
    if (entry.timer) clearTimeout(entry.timer);
    entry.timer = null;
    const started = this.#now();
    const read = this.#options
      .read(id, context)
      .then(
        (value) => {
          entry.lastError = null;
          return value;
        },
        (err: unknown) => {
          entry.lastError = err instanceof Error ? err.message : String(err);
          throw err;
        },
      )
      .finally(() => {
        entry.inflight = null;
        entry.lastReadAt = iso(started);
        // Still the entry of this source (not deleted or replaced meanwhile): its next read.
        if (this.#entries.get(id) === entry) this.#schedule(id, entry, this.#now());
      });
    entry.inflight = read;
    return read;
  }

  close(): void {
    this.#closed = true;
    for (const id of [...this.#entries.keys()]) this.untrack(id);
  }

  #schedule(id: string, entry: Entry, from: number): void {
    if (this.#closed || entry.intervalS === 0) {
      entry.nextReadAt = null;
      return;
    }
    const at = from + entry.intervalS * 1000;
    entry.nextReadAt = iso(at);
    entry.timer = setTimeout(
      () => {
        entry.timer = null;
        this.refresh(id).catch((err: unknown) => this.#options.onError?.(id, err));
      },
      Math.max(0, at - this.#now()),
    );
    entry.timer.unref();
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }
}

const iso = (ms: number): string => new Date(ms).toISOString();
