/** Server-sent events framing (text/event-stream), shared by every streaming route. */
import type { ViewChange } from '../model/visibility.js';

/**
 * An event stream's own headers, and nosniff, which reply.hijack() keeps Fastify's hooks from
 * adding; src/http/event-stream.ts writes them with the request id.
 */
export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
  'x-content-type-options': 'nosniff',
} as const;

export function sseEvent(event: string, data: unknown, id?: string | number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Changes in log order. Only the last event of each write carries the SSE id, so a resume never
 * splits a write: an event followed by another write's, and the last one when `complete` (it ends
 * its write; a replay may send a big write in parts).
 */
export function sseChanges(events: readonly ViewChange[], complete = true): string {
  let text = '';
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as ViewChange;
    const next = events[i + 1];
    const endsWrite = next === undefined ? complete : next.index !== event.index;
    text += sseEvent('change', event, endsWrite ? event.index : undefined);
  }
  return text;
}
