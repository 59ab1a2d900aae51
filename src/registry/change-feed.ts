/**
 * The change feed any front can follow: the changes in one caller's view, replayed from the
 * stored change log after an index and then live, with no gap and no repeat at the hand-over.
 * Transport-neutral: a subscriber learns where each write ends (so that a resume id never falls
 * inside a write) and may return a promise to slow the replay down.
 */
import type { Change, ChangeRecord } from '../model/records.js';
import { changeInView, type ViewChange, type ViewKey, viewKeyString } from '../model/visibility.js';
import type { ChangeBus } from './change-bus.js';
import { Scheduler } from '../catalog/scheduler.js';

/** Where the feed reads the past: the store's change log. */
export interface ChangeLog {
  /** Rows after `index`, oldest first, at most `limit`. */
  changesSince(index: number, limit: number): ChangeRecord[];
  /** Rows after the row `seq`, oldest first, at most `limit`. A write's rows are consecutive. */
  changesAfterRow(seq: number, limit: number): ChangeRecord[];
}

export interface FeedOptions {
  /** Resume after this registry index; undefined follows live changes only. */
  from: number | undefined;
  key: ViewKey;
  /** Admins also see tool services come and go. */
  admin: boolean;
  /** Who subscribes (src/http/caller-key.ts): replays take turns by caller first. */
  caller?: string;
  /**
   * Called (once) when live events held back during a slow replay pass `MAX_HELD_BACK_EVENTS`:
   * the subscription is closed, and the subscriber ends its stream so that the client resumes
   * from its last id. Without it a client that replays slowly makes the feed buffer every write.
   */
  onFellBehind?: () => void;
}

/**
 * Receives events in log order. `complete` says whether the last of them ends its write (in
 * this view): a resume id belongs there and after every event followed by another write's. Live
 * deliveries are one whole write each, and the same array goes to every subscriber with the same
 * view (treat it as read-only). A replay delivers at most `REPLAY_PAGE` rows' events at a time, so
 * a big write (a bulk import) may come in several parts, all but the last with `complete` false;
 * a returned promise is awaited (backpressure). Live events are never awaited, so the subscriber
 * bounds its own buffer.
 */
export type FeedDelivery = (events: readonly ViewChange[], phase: 'replay' | 'live', complete: boolean) => void | Promise<void>;

export interface FeedSubscription {
  /** True when `from` was ahead of the registry (reset or restored): the client must start over. */
  reset: boolean;
  /** The registry index when the subscription opened. */
  index: number;
  /** Resolves when the replay is done and live delivery has taken over. */
  caughtUp: Promise<void>;
  close(): void;
}

/** Change-log rows a replay reads and delivers per turn (a few milliseconds of work). */
export const REPLAY_PAGE = 1000;
/** Live events a subscription may hold back while its replay waits for the client. */
export const MAX_HELD_BACK_EVENTS = 10_000;

/** One id per distinct view, so that subscribers with the same view share one write's events. */
function viewId(key: ViewKey, admin: boolean): string {
  const view = viewKeyString(key);
  return admin ? `admin:${view}` : view;
}

export class ChangeFeed {
  readonly #log: ChangeLog;
  readonly #bus: ChangeBus;
  readonly #currentIndex: () => number;
  /**
   * Replays share the event loop in turns, callers round-robin: 20 streams reopened with
   * `since=0` on a log of 100,000 rows held every other request for seconds.
   */
  readonly #turns: Scheduler;
  /** One write's events per view, computed once for all its subscribers. */
  readonly #viewed = new WeakMap<readonly Change[], Map<string, readonly ViewChange[]>>();

  /** `scheduler`: the app's one scheduler of background work (a new one when not given). */
  constructor(log: ChangeLog, bus: ChangeBus, currentIndex: () => number, scheduler = new Scheduler()) {
    this.#turns = scheduler;
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
    const view = viewId(key, admin);
    const index = this.#currentIndex();
    const reset = options.from !== undefined && options.from > index;
    const from = reset ? undefined : options.from;
    let closed = false;
    let replaying = from !== undefined;
    const heldBack: [number, readonly ViewChange[]][] = [];
    let heldBackEvents = 0;
    const close = () => {
      closed = true;
      heldBack.length = 0;
      unsubscribe();
    };
    const unsubscribe = this.#bus.subscribe((at, changes) => {
      if (closed) return;
      const events = this.#inView(changes, at, view, key, admin);
      if (events.length === 0) return;
      if (!replaying) {
        void deliver(events, 'live', true);
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
        : this.#replay(
            from,
            key,
            admin,
            options.caller ?? '',
            () => closed,
            async (events, complete) => {
              if (!closed) await deliver(events, 'replay', complete);
            },
          ).then((replayedThrough) => {
            replaying = false;
            for (const [at, events] of heldBack) if (at > replayedThrough && !closed) void deliver(events, 'live', true);
            heldBack.length = 0;
          });
    return {
      reset,
      index,
      caughtUp,
      close,
    };
  }

  #inView(changes: readonly Change[], at: number, view: string, key: ViewKey, admin: boolean): readonly ViewChange[] {
    let byView = this.#viewed.get(changes);
    if (!byView) {
      byView = new Map();
      this.#viewed.set(changes, byView);
    }
    let events = byView.get(view);
    if (!events) {
      events = changes.map((c) => changeInView(c, at, key, admin)).filter((e): e is ViewChange => e !== null);
      byView.set(view, events);
    }
    return events;
  }

  /**
   * Delivers the change log after `from`, `REPLAY_PAGE` rows per turn of the app's Scheduler.
   * The last event seen is held until the next row shows whether its write goes on, so that
   * `complete` is exact even when a write spans pages or ends in rows outside the view. Returns
   * the registry index it has replayed through.
   */
  async #replay(
    from: number,
    key: ViewKey,
    admin: boolean,
    caller: string,
    stopped: () => boolean,
    deliver: (events: ViewChange[], complete: boolean) => Promise<void>,
  ): Promise<number> {
    let afterRow: number | undefined;
    let last = from;
    let held: ViewChange | undefined;
    for (;;) {
      await this.#turns.turn(caller);
      // A closed subscription reads no further page.
      if (stopped()) return last;
      // Read and note the catalogue's index in one synchronous step: they agree then.
      const through = this.#currentIndex();
      const rows = afterRow === undefined ? this.#log.changesSince(from, REPLAY_PAGE) : this.#log.changesAfterRow(afterRow, REPLAY_PAGE);
      const events: ViewChange[] = [];
      let complete = true;
      for (const row of rows) {
        if (held && row.index !== held.index) {
          events.push(held);
          complete = true;
          held = undefined;
        }
        const event = changeInView(row, row.index, key, admin);
        if (event) {
          if (held) {
            events.push(held);
            complete = false;
          }
          held = event;
        }
      }
      const end = rows.length < REPLAY_PAGE;
      if (end && held) {
        events.push(held);
        complete = true;
        held = undefined;
      }
      if (events.length > 0) await deliver(events, complete);
      const lastRow = rows.at(-1);
      if (lastRow) {
        afterRow = lastRow.seq;
        last = lastRow.index;
      }
      if (end) return Math.max(through, last);
    }
  }
}
