/**
 * Issue 34: the sunsets of the live tools, so that the catalogue drops a deprecated tool at its
 * sunset without a write. Kept by name beside the live indexes and updated with each write's
 * tools, so that neither a read nor a write looks at every tool; the nearest one arms a timer.
 */
import { pastSunset } from '../model/deprecation.js';
import type { ToolRecord } from '../model/records.js';

/** The record a tool past its sunset is served as: a tombstone, its deprecation still saying why. */
function sunsetTombstone(record: ToolRecord): ToolRecord {
  return { ...record, status: 'deleted' };
}

/** A live record past its sunset by `now` becomes its tombstone; any other stays as it is. */
export function asOf(record: ToolRecord, now: number): ToolRecord {
  return record.status !== 'deleted' && pastSunset(record.deprecation, now) ? sunsetTombstone(record) : record;
}

export class Sunsets {
  /** Live tool name to its sunset, epoch milliseconds: typically a handful. */
  readonly #at = new Map<string, number>();

  clear(): void {
    this.#at.clear();
  }

  /** Follows one record a write (or a load) leaves: a live tool with a sunset is tracked, any other not. */
  track(record: ToolRecord): void {
    const sunset = record.status !== 'deleted' ? record.deprecation?.sunset : undefined;
    if (sunset === undefined) this.#at.delete(record.name);
    else this.#at.set(record.name, Date.parse(sunset));
  }

  /** The nearest sunset, or undefined for none. */
  nearest(): number | undefined {
    let min: number | undefined;
    for (const at of this.#at.values()) if (min === undefined || at < min) min = at;
    return min;
  }

  /** Names whose sunset has come by `now`. */
  due(now: number): string[] {
    const names: string[] = [];
    for (const [name, at] of this.#at) if (at <= now) names.push(name);
    return names;
  }
}
