/**
 * The MCP sessions this registry holds: one SDK server and transport each, bound to the caller
 * that opened it (token issuer and subject, or client address), bounded per caller and in all,
 * ended when idle, and told `notifications/tools/list_changed` when a write changes the view of
 * the token that last used it, and never for writes outside that view.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCNotification } from '@modelcontextprotocol/sdk/types.js';
import { RegistryError } from '../../model/errors.js';
import type { Change } from '../../model/records.js';
import type { ViewKey } from '../../model/visibility.js';
import { toolListChangedBy } from './view-changes.js';

/** The notification Server.sendToolListChanged sends (the SDK's Protocol adds `jsonrpc` to the method). */
const LIST_CHANGED = { method: 'notifications/tools/list_changed', jsonrpc: '2.0' } satisfies JSONRPCNotification;
/**
 * Its bytes on the session's stream, at most: the event the SDK's transport writes for it
 * (writeSSEEvent), with the longest id the session's event store gives it (event-store.ts).
 */
const LIST_CHANGED_BYTES = Buffer.byteLength(
  `event: message\nid: _GET_stream/${Number.MAX_SAFE_INTEGER}\ndata: ${JSON.stringify(LIST_CHANGED)}\n\n`,
);

export interface McpSession {
  /** Given by the transport when `initialize` succeeds; empty until then. */
  id: string;
  /** The caller key that opened it; no other caller may use it. */
  readonly owner: string;
  readonly server: Server;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  /** The view of the token that last used the session: list_changed follows it. */
  view: ViewKey;
  lastSeen: number;
  /**
   * The open standalone stream (GET /mcp) that carries notifications, if any: its event-stream
   * helper (src/http/event-stream.ts), which cuts off a client that stopped reading.
   */
  stream: { admits(bytes: number): boolean } | null;
  /** Ids of the requests being answered (as JSON text): a second request with one would never be. */
  readonly inflight: Set<string>;
}

export interface McpSessionsOptions {
  maxSessions: number;
  perCaller: number;
  idleMs: number;
  /** How long list_changed waits to fold a burst of writes into one notification. */
  debounceMs?: number;
}

export class McpSessions {
  readonly #options: McpSessionsOptions;
  readonly #byId = new Map<string, McpSession>();
  /** Owner -> its sessions (present only while it holds one). */
  readonly #byOwner = new Map<string, Set<McpSession>>();
  /** Sessions with a list_changed queued. */
  readonly #pending = new Set<McpSession>();
  #flush: NodeJS.Timeout | null = null;
  readonly #sweeper: NodeJS.Timeout;

  constructor(options: McpSessionsOptions) {
    this.#options = options;
    this.#sweeper = setInterval(() => this.sweep(Date.now()), Math.min(60_000, Math.max(1000, options.idleMs / 4))).unref();
  }

  get size(): number {
    return this.#byId.size;
  }

  heldBy(owner: string): number {
    return this.#byOwner.get(owner)?.size ?? 0;
  }

  /** The session, when `owner` holds it: another caller's session is as unknown as none. */
  get(id: string, owner: string): McpSession | undefined {
    const session = this.#byId.get(id);
    return session?.owner === owner ? session : undefined;
  }

  /**
   * Makes room for one more session of `owner`: past its share its least recently used session
   * ends (a client that lost its session id only hurts itself); past the total, idle sessions
   * end, and if none is idle the new session is refused.
   */
  makeRoom(owner: string, now: number): void {
    const mine = this.#byOwner.get(owner);
    if (mine !== undefined && mine.size >= this.#options.perCaller) {
      let oldest: McpSession | undefined;
      for (const session of mine) if (oldest === undefined || session.lastSeen < oldest.lastSeen) oldest = session;
      if (oldest) this.close(oldest);
    }
    if (this.#byId.size < this.#options.maxSessions) return;
    this.sweep(now);
    if (this.#byId.size >= this.#options.maxSessions) {
      throw new RegistryError(
        'TR_ERR_UNAVAILABLE',
        `the registry holds ${this.#byId.size} MCP sessions, the most it keeps; retry shortly`,
        { retryAfterS: 5 },
      );
    }
  }

  add(session: McpSession): void {
    this.#byId.set(session.id, session);
    let mine = this.#byOwner.get(session.owner);
    if (!mine) this.#byOwner.set(session.owner, (mine = new Set()));
    mine.add(session);
  }

  /** Ends a session: forgets it first, then closes its server (which ends its streams). */
  close(session: McpSession): void {
    if (this.#byId.get(session.id) !== session) return;
    this.#byId.delete(session.id);
    this.#pending.delete(session);
    const mine = this.#byOwner.get(session.owner);
    mine?.delete(session);
    if (mine?.size === 0) this.#byOwner.delete(session.owner);
    session.server.close().catch(() => undefined);
  }

  /** Ends sessions unused for the idle time; one with an open stream is in use. */
  sweep(now: number): void {
    for (const session of this.#byId.values()) {
      if (session.stream === null && now - session.lastSeen > this.#options.idleMs) this.close(session);
    }
  }

  closeAll(): void {
    clearInterval(this.#sweeper);
    if (this.#flush) clearTimeout(this.#flush);
    for (const session of [...this.#byId.values()]) this.close(session);
  }

  /** After a committed write: the sessions whose view it changed get one list_changed for the burst. */
  changed(index: number, changes: readonly Change[]): void {
    if (this.#byId.size === 0) return;
    const affects = toolListChangedBy(index, changes);
    for (const session of this.#byId.values()) if (affects(session.view)) this.#pending.add(session);
    if (this.#pending.size > 0 && this.#flush === null) {
      this.#flush = setTimeout(() => this.#notifyPending(), this.#options.debounceMs ?? 20);
      this.#flush.unref();
    }
  }

  #notifyPending(): void {
    this.#flush = null;
    const sessions = [...this.#pending];
    this.#pending.clear();
    for (const session of sessions) {
      const stream = session.stream;
      // Notifications go out on the session's standalone stream. Without one, the SDK keeps the
      // event in the session's event store for a client reconnecting with Last-Event-ID (and,
      // with no store, drops it: there is no one to tell). A client that lets even these small
      // notices pile up is not reading: the stream's cut-off ends it, and it reconnects (and
      // lists again) when it reads.
      if (stream !== null && !stream.admits(LIST_CHANGED_BYTES)) continue;
      session.server.sendToolListChanged().catch(() => undefined);
    }
  }
}
