/**
 * Whether announced tool services are alive (src/announce/): each heartbeat renews a service
 * for MISSED_HEARTBEATS of its intervals; a goodbye or the missed heartbeats mark it
 * unavailable until it announces itself again. A service that never announced itself (an
 * operator's) is always available. Held in memory per process: every replica hears the
 * heartbeats itself.
 */
import { MISSED_HEARTBEATS } from '../model/announcement.js';

interface Beat {
  /** When it lapses (ms since the epoch). */
  until: number;
  intervalS: number;
  /** Set by a goodbye or when the lapse was noticed. */
  gone: boolean;
  /** Set by a goodbye. */
  goodbye?: boolean;
}

export interface ServiceAvailability {
  available: boolean;
  /** The heartbeat interval it announced, when it announced itself. */
  intervalS?: number;
  /** Unavailable because it said goodbye (rather than missed its heartbeats). */
  saidGoodbye?: true;
}

export class ServiceHealth {
  readonly #beats = new Map<string, Beat>();
  readonly #now: () => number;
  readonly #listeners = new Set<(serviceId: string, available: boolean) => void>();
  #timer: NodeJS.Timeout | null = null;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A heartbeat (or announcement) of `serviceId`. */
  beat(serviceId: string, intervalS: number): void {
    const was = this.available(serviceId);
    this.#beats.set(serviceId, { until: this.#now() + intervalS * 1000 * MISSED_HEARTBEATS, intervalS, gone: false });
    if (!was) this.#changed(serviceId, true);
    this.#arm();
  }

  /** A goodbye: unavailable now. */
  gone(serviceId: string): void {
    const beat = this.#beats.get(serviceId);
    if (!beat || beat.gone) return;
    beat.gone = true;
    beat.goodbye = true;
    this.#changed(serviceId, false);
  }

  /**
   * Forgets a service's heartbeats: an operator took it over or it was deleted, and an
   * operator's service is always available (its announcer can no longer beat for it).
   */
  forget(serviceId: string): void {
    const was = this.available(serviceId);
    if (this.#beats.delete(serviceId) && !was) this.#changed(serviceId, true);
  }

  available(serviceId: string): boolean {
    const beat = this.#beats.get(serviceId);
    return beat === undefined || (!beat.gone && beat.until > this.#now());
  }

  availability(serviceId: string): ServiceAvailability {
    const beat = this.#beats.get(serviceId);
    if (beat === undefined) return { available: true };
    const available = this.available(serviceId);
    return { available, intervalS: beat.intervalS, ...(!available && beat.goodbye === true && { saidGoodbye: true as const }) };
  }

  /** Whether any announced service is unavailable now (a filter has work to do). */
  get anyUnavailable(): boolean {
    for (const id of this.#beats.keys()) if (!this.available(id)) return true;
    return false;
  }

  onChange(listener: (serviceId: string, available: boolean) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #changed(serviceId: string, available: boolean): void {
    for (const listener of this.#listeners) listener(serviceId, available);
  }

  /** Wakes at the next lapse, so that listeners hear of it without a request asking. */
  #arm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    let next = Infinity;
    for (const beat of this.#beats.values()) if (!beat.gone && beat.until < next) next = beat.until;
    if (next === Infinity) {
      this.#timer = null;
      return;
    }
    this.#timer = setTimeout(
      () => {
        const now = this.#now();
        for (const [id, beat] of this.#beats) {
          if (!beat.gone && beat.until <= now) {
            beat.gone = true;
            this.#changed(id, false);
          }
        }
        this.#arm();
      },
      Math.max(0, next - this.#now()) + 5,
    );
    this.#timer.unref();
  }
}
