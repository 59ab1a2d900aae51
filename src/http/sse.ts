/** Server-sent events framing (text/event-stream), shared by every streaming route. */
import type { ViewChange } from '../model/visibility.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  'x-content-type-options': 'nosniff',
} as const;

export function sseEvent(event: string, data: unknown, id?: string | number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** One write's changes; only the last carries the SSE id, so a resume never splits a write. */
export function sseChanges(events: readonly ViewChange[]): string {
  return events.map((e, i) => sseEvent('change', e, i === events.length - 1 ? e.index : undefined)).join('');
}
