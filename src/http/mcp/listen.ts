/**
 * `subscriptions/listen` at MCP revision 2026-07-28 (issue 31; basic/patterns/subscriptions and
 * basic/transports/streamable-http of the revision), which the TypeScript SDK 1.x does not
 * speak: the revision's replacement for the GET stream. A 2026-07-28 client POSTs the request
 * and its answer is an event stream that stays open, carrying what its filter opts in to and the
 * registry offers: `notifications/tools/list_changed`, when a committed write changes the
 * listener's own view (its token's, or the anonymous one), and never for writes outside it.
 *
 * The stream, as the revision has it:
 * - first `notifications/subscriptions/acknowledged` with the honoured filter (only
 *   `toolsListChanged`: the registry has no prompts or resources); a filter with nothing the
 *   registry offers is acknowledged empty and ended at once with the graceful result, so that
 *   it holds no slot for a stream that could carry nothing;
 * - every message carries `_meta["io.modelcontextprotocol/subscriptionId"]`, the listen
 *   request's JSON-RPC id;
 * - no event ids: the revision removed resumption, so `Last-Event-ID` is not looked at (a client
 *   that lost the stream listens again and lists again);
 * - server shutdown ends it gracefully with the listen request's result
 *   (`{"resultType":"complete","_meta":{subscriptionId}}`); a token's expiry or a client that
 *   stopped reading ends it without one, which clients take as a lost stream to open again.
 */
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { SubscriptionFilter } from '../../model/mcp-listen.js';
import type { Change } from '../../model/records.js';
import type { ViewKey } from '../../model/visibility.js';
import { toolListChangedBy } from './view-changes.js';

const SUBSCRIPTION_ID_META = 'io.modelcontextprotocol/subscriptionId';

/** An SSE comment this often on every open listen stream, as the SDK's transport keeps the GET stream open. */
export const LISTEN_KEEP_ALIVE = { everyMs: 15_000, text: ': keepalive\n\n' } as const;

/** What a listener writes to: its event stream (src/http/event-stream.ts), which cuts off a client that stopped reading. */
export interface ListenStream {
  write(text: string): void;
  end(text?: string, graceMs?: number): void;
  onEnd(cleanup: () => void): void;
}

interface Listener {
  readonly view: ViewKey;
  readonly stream: ListenStream;
  /** Its list_changed event, made once: every one it is sent is the same bytes. */
  readonly changed: string;
  /** Its graceful end: the listen request's result. */
  readonly closing: string;
}

export interface McpListenersOptions {
  /** How long list_changed waits to fold a burst of writes into one notification. */
  debounceMs?: number;
  /** How long a closing stream's last event may take to reach its client before the socket is dropped. */
  closeGraceMs?: number;
}

/** One JSON-RPC message as the SSE event the SDK's transport writes for it; no `id`: nothing resumes. */
const event = (message: object): string => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/** The part of a requested filter the registry honours: tool-list changes, and nothing it does not offer. */
function honoured(requested: SubscriptionFilter): SubscriptionFilter {
  return requested.toolsListChanged === true ? { toolsListChanged: true } : {};
}

/** The open listen streams; told of every committed write, each stream only of those in its own view. */
export class McpListeners {
  readonly #open = new Set<Listener>();
  readonly #pending = new Set<Listener>();
  readonly #debounceMs: number;
  readonly #closeGraceMs: number;
  #flush: NodeJS.Timeout | null = null;

  constructor(options: McpListenersOptions = {}) {
    this.#debounceMs = options.debounceMs ?? 20;
    this.#closeGraceMs = options.closeGraceMs ?? 1000;
  }

  /** Streams open and listening. */
  get size(): number {
    return this.#open.size;
  }

  /**
   * Starts a listener on a stream whose head is out: the acknowledgment first, then list_changed
   * for each burst of writes that changes `view`.
   */
  listen(stream: ListenStream, id: RequestId, view: ViewKey, requested: SubscriptionFilter): void {
    const meta = { [SUBSCRIPTION_ID_META]: id };
    const notifications = honoured(requested);
    const closing = event({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: meta } });
    stream.write(event({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: meta, notifications } }));
    if (notifications.toolsListChanged !== true) {
      stream.end(closing, this.#closeGraceMs);
      return;
    }
    const listener: Listener = {
      view,
      stream,
      changed: event({ jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: meta } }),
      closing,
    };
    this.#open.add(listener);
    stream.onEnd(() => {
      this.#open.delete(listener);
      this.#pending.delete(listener);
    });
  }

  /** After a committed write: the listeners whose view it changed get one list_changed for the burst. */
  changed(index: number, changes: readonly Change[]): void {
    if (this.#open.size === 0) return;
    const affects = toolListChangedBy(index, changes);
    for (const listener of this.#open) if (affects(listener.view)) this.#pending.add(listener);
    if (this.#pending.size > 0 && this.#flush === null) {
      this.#flush = setTimeout(() => this.#notifyPending(), this.#debounceMs);
      this.#flush.unref();
    }
  }

  /** Server shutdown: every stream is ended gracefully, with its listen request's result. */
  closeAll(): void {
    if (this.#flush) clearTimeout(this.#flush);
    this.#flush = null;
    this.#pending.clear();
    for (const listener of [...this.#open]) listener.stream.end(listener.closing, this.#closeGraceMs);
  }

  #notifyPending(): void {
    this.#flush = null;
    const listeners = [...this.#pending];
    this.#pending.clear();
    // Each write goes through the stream's cut-off: a client that lets even these pile up is not reading.
    for (const listener of listeners) listener.stream.write(listener.changed);
  }
}
