/**
 * The change feed any front can follow: the changes in one caller's view, replayed from the
 * stored change log after an index and then live, with no gap and no repeat at the hand-over.
 * Transport-neutral: a subscriber gets each write's events as one group (never split, so a
 * resume id never falls inside a write) and may return a promise to slow the replay down.
 */
import type { ChangeRecord } from '../model/records.js';
import { changeInView, type ViewChange, type ViewKey } from '../model/visibility.js';
import type { ChangeBus } from './change-bus.js';

/** Where the feed reads the past: the store's change log. */
export interface ChangeLog {
  /** Rows after `index`, oldest first, at most `limit`. */
  changesSince(index: number, limit: number): ChangeRecord[];
  /** Every row of one write. */
  changesAt(index: number): ChangeRecord[];
}

export interface FeedOptions {
  /** Resume after this registry index; undefined follows live changes only. */
  from: number | undefined;
  key: ViewKey;
  /** Admins also see tool services come and go. */
  admin: boolean;
  /**
   * Called (once) when live events held back during a slow replay pass `MAX_HELD_BACK_EVENTS`:
   * the subscription is closed, and the subscriber ends its stream so that the client resumes
   * from its last id. Without it a client that replays slowly makes the feed buffer every write.
   */
  onFellBehind?: () => void;
}

/**
 * Receives one write's events. During the replay a returned promise is awaited (backpressure);
 * live events are never awaited, so the subscriber bounds its own buffer.
 */
export type FeedDelivery = (events: ViewChange[], phase: 'replay' | 'live') => void | Promise<void>;

export interface FeedSubscription {
  /** True when `from` was ahead of the registry (reset or restored): the client must start over. */
  reset: boolean;
  /** The registry index when the subscription opened. */
  index: number;
  /** Resolves when the replay is done and live delivery has taken over. */
  caughtUp: Promise<void>;
  close(): void;
}

const REPLAY_PAGE = 5000;
/** Live events a subscription may hold back while its replay waits for the client. */
export const MAX_HELD_BACK_EVENTS = 10_000;

export class ChangeFeed {
  readonly #log: ChangeLog;
  readonly #bus: ChangeBus;
  readonly #currentIndex: () => number;

  constructor(log: ChangeLog, bus: ChangeBus, currentIndex: () => number) {
    this.#log = log;
    this.#bus = bus;
    this.#currentIndex = currentIndex;
  }

  /**
   * Subscribes before replaying and holds live events back meanwhile: the replay may wait for
   * the client, and writes that land then are delivered after it, without repeats.
   */
  subscribe(options: FeedOptions, deliver: FeedDelivery): FeedSubscription {
    const { key, admin } = options;
    const index = this.#currentIndex();
    const reset = options.from !== undefined && options.from > index;
    const from = reset ? undefined : options.from;
    let closed = false;
    let replaying = from !== undefined;
    const heldBack: [number, ViewChange[]][] = [];
    let heldBackEvents = 0;
    const close = () => {
      closed = true;
      heldBack.length = 0;
      unsubscribe();
    };
    const unsubscribe = this.#bus.subscribe((at, changes) => {
      if (closed) return;
      const events = changes.map((c) => changeInView(c, at, key, admin)).filter((e): e is ViewChange => e !== null);
      if (events.length === 0) return;
      if (!replaying) {
        void deliver(events, 'live');
        return;
      }
      heldBack.push([at, events]);
      heldBackEvents += events.length;
      if (heldBackEvents > MAX_HELD_BACK_EVENTS) {
        close();
        options.onFellBehind?.();
      }
    });
    const caughtUp =
      from === undefined
        ? Promise.resolve()
        : this.#replay(from, key, admin, () => closed, async (events) => {
            if (!closed) await deliver(events, 'replay');
          }).then((replayedThrough) => {
            replaying = false;
            for (const [at, events] of heldBack) if (at > replayedThrough && !closed) void deliver(events, 'live');
            heldBack.length = 0;
          });
    return {
      reset,
      index,
      caughtUp,
      close,
    };
  }

  /**
   * Delivers the change log after `from`, a page at a time and never ending a page inside a
   * write. Returns the registry index it has replayed through.
   */
  async #replay(from: number, key: ViewKey, admin: boolean, stopped: () => boolean, deliver: (events: ViewChange[]) => Promise<void>): Promise<number> {
    let cursor = from;
    for (;;) {
      // A closed subscription reads no further page.
      if (stopped()) return cursor;
      // Read and note the catalogue's index in one synchronous step: they agree then.
      const through = this.#currentIndex();
      const rows = this.#log.changesSince(cursor, REPLAY_PAGE);
      let complete = rows;
      if (rows.length === REPLAY_PAGE) {
        // Hold the last write's rows back for the next page, or read one huge write (a bulk
        // import) whole.
        const lastIndex = rows.at(-1)?.index;
        complete = rows.filter((r) => r.index !== lastIndex);
        if (complete.length === 0 && lastIndex !== undefined) complete = this.#log.changesAt(lastIndex);
      }
      let group: ViewChange[] = [];
      for (const [i, row] of complete.entries()) {
        const event = changeInView(row, row.index, key, admin);
        if (event) group.push(event);
        if (complete[i + 1]?.index !== row.index && group.length > 0) {
          await deliver(group);
          group = [];
        }
      }
      if (rows.length < REPLAY_PAGE) return Math.max(through, complete.at(-1)?.index ?? cursor);
      cursor = complete.at(-1)?.index ?? cursor;
    }
  }
}
