/**
 * Keeps the tools of every registered upstream MCP server in the registry (issue 11): one
 * connection per server, its tool list read on connect, on `notifications/tools/list_changed`
 * and every refresh interval, and the difference written as one registry write (none when
 * nothing changed). A server that cannot be reached is `down` (calls to its tools answer 503)
 * and is retried with backoff, so it comes back without a restart. Nothing here waits for an
 * upstream on the registry's behalf: startup and writes never do.
 *
 * The connection itself (the MCP SDK) is the bridge's (src/bridge/mcp-client.ts); it is passed
 * in as a factory, so that this room stays free of transports.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Scheduler } from '../catalog/scheduler.js';
import { escapeInvisible } from '../model/invisible-characters.js';
import type { McpServer, McpTool } from '../model/mcp-schemas.js';
import { mcpToolsOf, type SkippedTool, type UpstreamTool } from '../model/mcp-tools.js';
import type { Change, ChangeListener, McpServerRecord } from '../model/records.js';
import type { McpSyncResult } from './registry-service.js';
import { toolSchemaErrors } from '../json-schema/tool-schemas.js';

/** What the sync needs of a connection. */
export interface UpstreamConnection {
  connect(): Promise<void>;
  listTools(): Promise<UpstreamTool[]>;
  close(): Promise<void>;
  /** Why the connection was lost, or null while it is usable. */
  readonly lost: string | null;
}

export interface ConnectionEvents {
  onToolsChanged(): void;
  /** `refused`: the outbound address policy refused the server's address. */
  onLost(reason: string, refused: boolean): void;
}

type LogFn = (details: object, message: string) => void;

export interface McpSyncOptions<C extends UpstreamConnection> {
  registry: {
    syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[]): Promise<McpSyncResult>;
    /** A large list is written in slices where the registry can (RegistryService.syncMcpToolsPart). */
    syncMcpToolsPart?(
      serverId: string,
      serverIndex: number,
      part: readonly McpTool[],
      listed?: ReadonlySet<string>,
    ): Promise<McpSyncResult>;
  };
  catalog: { mcpServers(): McpServerRecord[]; toolsOfMcpServer(id: string): string[] };
  /** The change bus: every committed write, MCP server puts and deletes included. */
  subscribe: (listener: ChangeListener) => () => void;
  credentialOf: (id: string) => string | undefined;
  connect: (server: McpServer, credential: string | undefined, events: ConnectionEvents) => C;
  /**
   * The app's one scheduler of background work (the catalogue's): the checks of a long listing
   * take turns in it, each server as an owner of its own, with imports, replays and the search backlog.
   */
  scheduler: Scheduler;
  /** MCP_UPSTREAM_REFRESH_S, for servers that set no `refreshIntervalS`. */
  defaultRefreshS: number;
  /** MCP_UPSTREAM_WRITE_INTERVAL_MS: the least time between one server's writes (0: unbounded). */
  writeIntervalMs?: number;
  /** MCP_UPSTREAM_MAX_WRITE_INTERVAL_MS: what that interval backs off to while the server keeps changing. */
  maxWriteIntervalMs?: number;
  log: { info: LogFn; warn: LogFn; error: LogFn };
}

export type UpstreamState = 'connecting' | 'connected' | 'down';

export interface UpstreamStatus {
  state: UpstreamState;
  lastSyncAt: string | null;
  lastError: string | null;
  /** When the next full refresh of its list is due (while connected); null otherwise. */
  nextRefreshAt: string | null;
  tools: number;
  skipped: SkippedTool[];
}

/** Reconnect delays: at once after a healthy spell, else 0.5 s doubling to 30 s. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
/** A connection up this long counts as healthy: losing it retries at once. */
const HEALTHY_MS = 10_000;
/** A call to a down server brings its next attempt forward, at most this often. */
const KICK_EVERY_MS = 1000;
/**
 * Tools per slice of a listing's checks, and per write of a large sync (issue 29). Checking and
 * writing 5,000 at once held the event loop for 0.1 to 0.4 s at each step (the tool schema, the
 * checks of the schemas, the SQL, the catalogue); a write of 100 took 8 to 35 ms on the test
 * machine, one of 50 mostly under 15 (test/mcp/churn.test.ts).
 */
const SYNC_SLICE = 50;

// eslint-disable-next-line no-control-regex -- the characters to escape
const CONTROL = /[\x00-\x1F\x7F-\x9F]/g;

/**
 * Upstream text for logs and answers: control characters escaped, and the invisible ones (a
 * skipped tool's name may hold tag characters), so that an operator sees them; bounded.
 */
function printable(text: string, max = 500): string {
  const escaped = escapeInvisible(text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  return escaped.length > max ? `${escaped.slice(0, max)}...` : escaped;
}

class Upstream<C extends UpstreamConnection> {
  state: UpstreamState = 'connecting';
  connection: C | null = null;
  connectedAt = 0;
  attempts = 0;
  lastAttemptAt = 0;
  retry: NodeJS.Timeout | null = null;
  refresh: NodeJS.Timeout | null = null;
  /** The refresh interval's period and when it started, for the next refresh's time. */
  refreshMs = 0;
  refreshFrom = 0;
  syncing = false;
  resync = false;
  closed = false;
  lastSyncAt: string | null = null;
  lastError: string | null = null;
  /** Down because the outbound address policy refused its address: its calls say so. */
  refused = false;
  skipped: SkippedTool[] = [];
  skippedKey = '[]';
  /** The registry names its last sync wrote or kept: an operator's write of one displaces it. */
  held = new Set<string>();
  /** Bounded churn (issue 29): no listing before this time after a write, and the interval to the next. */
  nextWriteAt = 0;
  writeIntervalMs: number;
  /** The listing put off until nextWriteAt. */
  deferred: NodeJS.Timeout | null = null;

  constructor(
    readonly record: McpServerRecord,
    /** Kept to redact it from any error text an upstream sends back. */
    readonly credential: string | undefined,
    readonly minWriteIntervalMs: number,
  ) {
    this.writeIntervalMs = minWriteIntervalMs;
  }

  /** Upstream text with the credential taken out. */
  redact(text: string): string {
    return printable(this.credential === undefined ? text : text.replaceAll(this.credential, '[redacted]'));
  }
}

export class McpSync<C extends UpstreamConnection> {
  readonly #options: McpSyncOptions<C>;
  readonly #upstreams = new Map<string, Upstream<C>>();
  #unsubscribe: (() => void) | null = null;

  constructor(options: McpSyncOptions<C>) {
    this.#options = options;
  }

  /** Connects to every registered server (without waiting) and follows puts and deletes. */
  start(): void {
    this.#unsubscribe ??= this.#options.subscribe((_index, changes) => {
      this.#reconcile();
      this.#resyncDisplaced(changes);
    });
    this.#reconcile();
  }

  close(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    for (const upstream of this.#upstreams.values()) this.#drop(upstream);
    this.#upstreams.clear();
  }

  status(id: string): UpstreamStatus | undefined {
    const upstream = this.#upstreams.get(id);
    if (!upstream) return undefined;
    const { state, lastSyncAt, lastError, skipped, refreshMs, refreshFrom } = upstream;
    let nextRefreshAt: string | null = null;
    if (state === 'connected' && refreshMs > 0) {
      const periods = Math.floor((Date.now() - refreshFrom) / refreshMs) + 1;
      nextRefreshAt = new Date(refreshFrom + periods * refreshMs).toISOString();
    }
    return { state, lastSyncAt, lastError, nextRefreshAt, tools: this.#options.catalog.toolsOfMcpServer(id).length, skipped };
  }

  /** The server's connection for a call, or why there is none (a down server is tried again soon). */
  connection(id: string): { client: C } | { down: string; refused?: boolean } {
    const upstream = this.#upstreams.get(id);
    if (!upstream) return { down: 'it is not registered' };
    const connection = upstream.connection;
    if (upstream.state === 'connected' && connection && connection.lost === null) return { client: connection };
    if (upstream.state === 'down' && Date.now() - upstream.lastAttemptAt >= KICK_EVERY_MS) this.#retryNow(upstream);
    if (upstream.state === 'connecting') return { down: 'connecting' };
    return { down: upstream.lastError ?? 'down', ...(upstream.refused && { refused: true }) };
  }

  /**
   * An operator's write of a name an upstream's tool had takes it over (issue 29): that
   * upstream is listed again at once, so that its status shows the tool as skipped, and why,
   * without waiting for its next refresh.
   */
  #resyncDisplaced(changes: readonly Change[]): void {
    for (const upstream of this.#upstreams.values()) {
      if (upstream.held.size === 0) continue;
      const touched = changes.filter((c) => c.kind === 'tool' && c.op === 'upsert' && upstream.held.has(c.name));
      if (touched.length === 0) continue;
      // Its own sync's writes touch its names too: only a name no longer its own counts.
      const own = new Set(this.#options.catalog.toolsOfMcpServer(upstream.record.id));
      // Caused by an operator, not the upstream: not held back by its write interval.
      if (touched.some((c) => !own.has(c.name))) void this.#sync(upstream, true);
    }
  }

  /** Opens servers that are new or changed, drops those that are gone. */
  #reconcile(): void {
    const live = new Map(this.#options.catalog.mcpServers().map((record) => [record.id, record]));
    for (const [id, upstream] of this.#upstreams) {
      const record = live.get(id);
      // Any change of the descriptor (URL, credential, prefix, scopes) makes a new connection and listing.
      if (record?.index === upstream.record.index) continue;
      this.#drop(upstream);
      this.#upstreams.delete(id);
    }
    for (const [id, record] of live) {
      if (this.#upstreams.has(id)) continue;
      const upstream = new Upstream<C>(record, this.#options.credentialOf(id), this.#options.writeIntervalMs ?? 0);
      this.#upstreams.set(id, upstream);
      void this.#open(upstream);
    }
  }

  async #open(upstream: Upstream<C>): Promise<void> {
    upstream.state = 'connecting';
    upstream.lastAttemptAt = Date.now();
    const { record, credential } = upstream;
    let connection: C;
    try {
      connection = this.#options.connect(record.descriptor, credential, {
        onToolsChanged: () => {
          if (upstream.connection === connection) void this.#sync(upstream);
        },
        onLost: (reason, refused) => {
          if (upstream.connection === connection) this.#down(upstream, reason, refused);
        },
      });
    } catch (err) {
      this.#down(upstream, (err as Error).message);
      return;
    }
    upstream.connection = connection;
    try {
      await connection.connect();
    } catch (err) {
      // Unless onLost has already taken it down.
      if (upstream.connection === connection) this.#down(upstream, (err as Error).message);
      return;
    }
    if (upstream.closed || upstream.connection !== connection) return;
    upstream.state = 'connected';
    upstream.connectedAt = Date.now();
    this.#options.log.info({ mcpServer: record.id }, 'MCP server connected');
    const refreshMs = (record.descriptor.refreshIntervalS ?? this.#options.defaultRefreshS) * 1000;
    upstream.refresh = setInterval(() => void this.#sync(upstream), refreshMs).unref();
    upstream.refreshMs = refreshMs;
    upstream.refreshFrom = Date.now();
    await this.#sync(upstream);
  }

  /**
   * Lists the server's tools and writes the difference; a request meanwhile runs once more after.
   * Within the write interval after a write, the listing waits for its end (issue 29): an
   * upstream changing its list every second causes a write every 5 s, then every 10, 20, ...
   * up to every 5 minutes, and at once again after a listing that found no change. `operator`:
   * asked for by an operator's write, which the interval does not hold back.
   */
  async #sync(upstream: Upstream<C>, operator = false): Promise<void> {
    if (upstream.syncing) {
      upstream.resync = true;
      return;
    }
    upstream.syncing = true;
    try {
      do {
        upstream.resync = false;
        const connection = upstream.connection;
        if (upstream.closed || upstream.state !== 'connected' || !connection) return;
        if (!operator && this.#holdBack(upstream)) return;
        let tools: UpstreamTool[];
        try {
          tools = await connection.listTools();
        } catch (err) {
          // A lost connection is handled by onLost; anything else (a bound broken, an error
          // answer) leaves what is stored as it is until the next refresh.
          if (connection.lost === null && !upstream.closed) this.#failed(upstream, `listing its tools failed: ${(err as Error).message}`);
          return;
        }
        if (upstream.closed) return;
        await this.#write(upstream, tools);
      } while (upstream.resync && !upstream.closed);
    } finally {
      upstream.syncing = false;
    }
  }

  /** Puts the listing off until the write interval has passed; true when it did. */
  #holdBack(upstream: Upstream<C>): boolean {
    const wait = upstream.nextWriteAt - Date.now();
    if (wait <= 0) return false;
    upstream.deferred ??= setTimeout(() => {
      upstream.deferred = null;
      void this.#sync(upstream);
    }, wait).unref();
    return true;
  }

  /** After a sync: a write holds the next one back, longer each time; no change ends the backoff. */
  #paceWrites(upstream: Upstream<C>, wrote: boolean): void {
    const min = upstream.minWriteIntervalMs;
    if (!wrote) {
      upstream.writeIntervalMs = min;
      return;
    }
    upstream.nextWriteAt = Date.now() + upstream.writeIntervalMs;
    upstream.writeIntervalMs = Math.min(upstream.writeIntervalMs * 2, Math.max(min, this.#options.maxWriteIntervalMs ?? min));
  }

  /** The tools of a listing the registry would take, and those it skips (why), checked in slices. */
  async #checked(server: McpServer, tools: UpstreamTool[]): Promise<{ wanted: McpTool[]; skipped: SkippedTool[] }> {
    const owner = `mcp-sync:${server.id}`;
    const wanted: McpTool[] = [];
    const skipped: SkippedTool[] = [];
    // mcpToolsOf finds a name listed twice within a slice; this, across slices.
    const seen = new Set<string>();
    for (let start = 0; start < tools.length; start += SYNC_SLICE) {
      const slice: UpstreamTool[] = [];
      for (const tool of tools.slice(start, start + SYNC_SLICE)) {
        if (seen.has(tool.name)) skipped.push({ name: tool.name, reason: 'the upstream lists this name more than once' });
        else slice.push(tool);
      }
      for (const tool of slice) seen.add(tool.name);
      const made = mcpToolsOf(server, slice);
      skipped.push(...made.skipped);
      await this.#options.scheduler.turn(owner);
      // The same check as an operator's tool gets: a schema the registry would refuse is skipped.
      for (const tool of made.tools) {
        const first = toolSchemaErrors('mcp', tool)[0];
        if (first) skipped.push({ name: tool.upstreamName, reason: `${first.path}: ${first.message}` });
        else wanted.push(tool);
        await this.#options.scheduler.turn(owner);
      }
    }
    return { wanted, skipped };
  }

  /** Writes the list whole, or in slices of SYNC_SLICE when it is longer and the registry can. */
  async #store(record: McpServerRecord, wanted: McpTool[]): Promise<McpSyncResult> {
    const { registry } = this.#options;
    if (!registry.syncMcpToolsPart || wanted.length <= SYNC_SLICE) return registry.syncMcpTools(record.id, record.index, wanted);
    const listed = new Set(wanted.map((t) => t.name));
    const merged: McpSyncResult = {
      stale: false,
      index: null,
      plan: { upserts: [], deletes: [], clashes: [], unchanged: 0, pending: [], settled: [], held: [] },
    };
    for (let start = 0; start < wanted.length; start += SYNC_SLICE) {
      const last = start + SYNC_SLICE >= wanted.length;
      const result = await registry.syncMcpToolsPart(
        record.id,
        record.index,
        wanted.slice(start, start + SYNC_SLICE),
        last ? listed : undefined,
      );
      if (result.stale || !result.plan) return result;
      const plan = merged.plan as NonNullable<McpSyncResult['plan']>;
      plan.upserts.push(...result.plan.upserts);
      plan.deletes.push(...result.plan.deletes);
      plan.clashes.push(...result.plan.clashes);
      plan.unchanged += result.plan.unchanged;
      plan.pending.push(...result.plan.pending);
      plan.settled.push(...result.plan.settled);
      plan.held.push(...result.plan.held);
      merged.index = result.index ?? merged.index;
      // A slice is answered where the one before was shown (the catalogue, the change bus):
      // the next is queued a turn later, so that requests are read between the two.
      await nextTurn();
    }
    return merged;
  }

  async #write(upstream: Upstream<C>, tools: UpstreamTool[]): Promise<void> {
    const { record } = upstream;
    const { wanted, skipped } = await this.#checked(record.descriptor, tools);
    if (upstream.closed) return;
    let result: McpSyncResult;
    try {
      result = await this.#store(record, wanted);
    } catch (err) {
      this.#failed(upstream, `storing its tools failed: ${(err as Error).message}`, 'error');
      return;
    }
    // Replaced or deleted meanwhile: the new record's own sync follows.
    if (result.stale || !result.plan) return;
    // Versions held for review are writes too (their rows): an upstream churning them is paced the same.
    this.#paceWrites(upstream, result.index !== null || result.plan.pending.length > 0);
    upstream.lastSyncAt = new Date().toISOString();
    upstream.lastError = null;
    const clashed = new Set(result.plan.clashes.map((c) => c.name));
    upstream.held = new Set(wanted.filter((t) => !clashed.has(t.upstreamName)).map((t) => t.name));
    upstream.skipped = [...skipped, ...result.plan.clashes].map((s) => ({ name: printable(s.name, 200), reason: printable(s.reason) }));
    const key = JSON.stringify(upstream.skipped);
    if (key !== upstream.skippedKey && upstream.skipped.length > 0) {
      this.#options.log.warn({ mcpServer: record.id, skipped: upstream.skipped }, 'MCP server tools skipped');
    }
    upstream.skippedKey = key;
    const fresh = result.plan.pending.filter((p) => p.fresh).map((p) => p.tool.name);
    if (fresh.length > 0) {
      this.#options.log.warn(
        { mcpServer: record.id, pending: fresh.slice(0, 20), count: fresh.length },
        'MCP server changes wait for review',
      );
    }
    if (result.index !== null) {
      const { upserts, deletes } = result.plan;
      this.#options.log.info(
        {
          mcpServer: record.id,
          index: result.index,
          written: upserts.length,
          deleted: deletes.length,
          pending: result.plan.pending.length,
        },
        'MCP server tools synced',
      );
    }
  }

  #failed(upstream: Upstream<C>, reason: string, level: 'warn' | 'error' = 'warn'): void {
    upstream.lastError = upstream.redact(reason);
    this.#options.log[level]({ mcpServer: upstream.record.id, reason: upstream.lastError }, 'MCP server sync failed');
  }

  /** The server cannot be reached: its calls answer 503 until a retry (with backoff) connects. */
  #down(upstream: Upstream<C>, reason: string, refused = false): void {
    if (upstream.closed) return;
    const wasConnected = upstream.state === 'connected';
    this.#disconnect(upstream);
    upstream.state = 'down';
    upstream.lastError = upstream.redact(reason);
    upstream.refused = refused;
    // A connection that stays up only briefly keeps backing off (a server that ends its
    // notification stream at once would otherwise be reconnected in a loop).
    const healthy = wasConnected && Date.now() - upstream.connectedAt >= HEALTHY_MS;
    if (healthy) upstream.attempts = 0;
    const delay = healthy ? 0 : Math.min(FIRST_RETRY_MS * 2 ** upstream.attempts, MAX_RETRY_MS);
    upstream.attempts++;
    const level = wasConnected || upstream.attempts === 1 ? 'warn' : 'info';
    this.#options.log[level]({ mcpServer: upstream.record.id, reason: upstream.lastError, retryInMs: delay }, 'MCP server down');
    upstream.retry = setTimeout(() => this.#retryNow(upstream), delay).unref();
  }

  #retryNow(upstream: Upstream<C>): void {
    if (upstream.closed || upstream.state !== 'down') return;
    if (upstream.retry) clearTimeout(upstream.retry);
    upstream.retry = null;
    void this.#open(upstream);
  }

  #disconnect(upstream: Upstream<C>): void {
    if (upstream.refresh) clearInterval(upstream.refresh);
    if (upstream.retry) clearTimeout(upstream.retry);
    if (upstream.deferred) clearTimeout(upstream.deferred);
    upstream.refresh = null;
    upstream.retry = null;
    upstream.deferred = null;
    const connection = upstream.connection;
    upstream.connection = null;
    connection?.close().catch(() => undefined);
  }

  #drop(upstream: Upstream<C>): void {
    upstream.closed = true;
    this.#disconnect(upstream);
  }
}
