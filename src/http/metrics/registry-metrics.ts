/**
 * The registry's Prometheus metrics (prom-client), one Registry per app. The services never
 * import prom-client: they tell observers what happened (UsageTracker.observe for every call,
 * RegistryService.observeCommits for every group commit) or expose plain numbers (waiters,
 * sessions, the key set's fetches) that gauges and counters read when scraped, and
 * src/http/plugins/metrics.ts wires them here.
 *
 * Labels stay bounded: routes are route patterns, never URLs; tool names come from the
 * catalogue and are capped (METRICS_MAX_TOOL_LABELS, then "(other)"); token subjects are
 * labels only when METRICS_SUBJECT_LABELS is on, capped alike. Counters count from process
 * start, so they never shrink when old call records are pruned (unlike /stats).
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JwksKeySource } from '../../auth/jwks.js';
import type { BridgeState, ToolBridge } from '../../bridge/bridge.js';
import type { Catalog } from '../../catalog/catalog.js';
import type { ViewWaiters } from '../../catalog/waiters.js';
import type { CallRecord } from '../../model/records.js';
import { REFUSAL_REASONS, type RefusalReason } from '../../model/replication.js';
import type { ViewKey } from '../../model/visibility.js';
import type { CommitObservation } from '../../registry/commit-telemetry.js';
import type { ConfigSyncFigures } from '../../trustgraph/config-sync.js';
import { RequestHistogram } from './request-histogram.js';

/** The label value of tools (and subjects) past the cap. */
export const OTHER_LABEL = '(other)';
/** The route label of requests no route matched (404s). */
const UNMATCHED_ROUTE = '(unmatched)';

const BUS_STATES: readonly BridgeState[] = ['not-configured', 'connected', 'disconnected'];
const VIEW_KINDS: readonly ViewKey['kind'][] = ['all', 'public', 'scopes'];
/** Each view kind's place in VIEW_KINDS, without a search on the hot path. */
const VIEW_SLOT = Object.fromEntries(VIEW_KINDS.map((kind, i) => [kind, i])) as Readonly<Record<ViewKey['kind'], number>>;
const TOOL_KINDS = ['http', 'tool-service', 'mcp'] as const;

/**
 * Few buckets, so that every route and status costs few series. Discovery answers in well under
 * a millisecond; writes wait for a group commit's fsync; calls and held queries take seconds.
 */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10];
const CALL_BUCKETS = [0.005, 0.025, 0.1, 0.5, 2.5, 10, 60];
const COMMIT_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256];

/** A label's first `max` distinct values pass; later ones become "(other)". */
class BoundedLabel {
  readonly #known = new Set<string>();
  constructor(readonly max: number) {}

  of(value: string): string {
    if (this.#known.has(value)) return value;
    if (this.#known.size >= this.max) return OTHER_LABEL;
    this.#known.add(value);
    return value;
  }
}

/** Process metrics (CPU, memory, event loop, GC) belong to the process: one set, however many apps it builds. */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export interface MetricSources {
  catalog: Catalog;
  waiters: ViewWaiters;
  bridge: ToolBridge;
  /** The key set, when tokens are verified with a JWKS. */
  jwks: JwksKeySource | null;
  /** Replicated mode's refused messages by reason (src/replication/replicator.ts), or null for one process. */
  replication?: { readonly refusals: ReadonlyMap<RefusalReason, number> } | null;
}

export interface MetricsOptions {
  /** Distinct tool names (and subjects) labelled apart. */
  maxToolLabels: number;
  /** Count calls per token subject too. */
  subjectLabels: boolean;
}

export class RegistryMetrics {
  readonly registry = new Registry();
  /** Every answered request: plain numbers on the hot path (src/http/metrics/request-histogram.ts). */
  readonly #requests: RequestHistogram;
  readonly #calls: Counter<'tool' | 'outcome'>;
  readonly #callSeconds: Histogram<'tool'>;
  readonly #callsBySubject: Counter<'sub' | 'outcome'> | null;
  readonly #commitWrites: Histogram;
  readonly #commitSeconds: Histogram;
  readonly #commitFailures: Counter;
  readonly #tools: BoundedLabel;
  readonly #subjects: BoundedLabel;
  /** Full views served, by view kind (VIEW_KINDS) x [200, 304]: plain numbers on the hot path, read at scrape. */
  readonly #views = new Float64Array(VIEW_KINDS.length * 2);
  #mcpSessions: () => number = () => 0;
  /** TrustGraph config sync's figures (TRUSTGRAPH_CONFIG_SYNC), read at scrape; null when off. */
  #configSync: () => ConfigSyncFigures | null = () => null;
  /** Where the METRICS_PORT listener listens, once it does. */
  listenAddress: { address: string; port: number } | null = null;

  constructor(sources: MetricSources, options: MetricsOptions) {
    const registers = [this.registry];
    const { catalog, waiters, bridge, jwks, replication } = sources;
    this.#tools = new BoundedLabel(options.maxToolLabels);
    this.#subjects = new BoundedLabel(options.maxToolLabels);

    this.#requests = new RequestHistogram(
      'tool_registry_http_request_duration_seconds',
      'HTTP requests by method, route pattern and status, from the start of the request to the end of the answer; the _count series count the requests',
      REQUEST_BUCKETS,
      this.registry,
    );
    const views = this.#views;
    new Counter({
      name: 'tool_registry_discovery_views_total',
      help: 'Whole discovery views answered (GET / without page, search or filter parameters, held queries included) by view kind: status 200 sent the precomputed view, 304 matched If-None-Match',
      labelNames: ['view', 'status'],
      registers,
      collect() {
        this.reset();
        VIEW_KINDS.forEach((view, i) => {
          this.inc({ view, status: '200' }, views[i * 2] ?? 0);
          this.inc({ view, status: '304' }, views[i * 2 + 1] ?? 0);
        });
      },
    });
    new Gauge({
      name: 'tool_registry_tools',
      help: 'Live tools in the catalogue, by kind',
      labelNames: ['kind'],
      registers,
      collect() {
        const counts = new Map<string, number>(TOOL_KINDS.map((kind) => [kind, 0]));
        for (const { tool } of catalog.tools()) counts.set(tool.kind, (counts.get(tool.kind) ?? 0) + 1);
        for (const [kind, n] of counts) this.set({ kind }, n);
      },
    });
    new Gauge({
      name: 'tool_registry_tool_services',
      help: 'Live tool services (message-bus backends) in the catalogue',
      registers,
      collect() {
        this.set(catalog.serviceCount);
      },
    });
    new Gauge({
      name: 'tool_registry_index',
      help: 'The registry index: the index of the last committed write',
      registers,
      collect() {
        this.set(catalog.index);
      },
    });
    new Gauge({
      name: 'tool_registry_search_backlog',
      help: 'Written tools not yet searchable by ?q= (a big write is indexed in slices between requests after it)',
      registers,
      collect() {
        this.set(catalog.searchBacklog);
      },
    });
    new Gauge({
      name: 'tool_registry_blocking_queries',
      help: 'Blocking discovery queries held (GET /?index=...); they share MAX_WAITERS with the streams',
      registers,
      collect() {
        this.set(waiters.size - waiters.streams);
      },
    });
    new Gauge({
      name: 'tool_registry_streams',
      help: 'Long-lived streams held: GET /changes change streams and MCP event streams',
      registers,
      collect() {
        this.set(waiters.streams);
      },
    });
    const sessions = () => this.#mcpSessions();
    new Gauge({
      name: 'tool_registry_mcp_sessions',
      help: 'MCP sessions held at /mcp',
      registers,
      collect() {
        this.set(sessions());
      },
    });

    this.#calls = new Counter({
      name: 'tool_registry_tool_calls_total',
      help: `Tool calls through the registry since the process started, by tool and outcome (ok, denied, timeout, service-error, unavailable, cancelled); tools past METRICS_MAX_TOOL_LABELS count as "${OTHER_LABEL}"`,
      labelNames: ['tool', 'outcome'],
      registers,
    });
    this.#callSeconds = new Histogram({
      name: 'tool_registry_tool_call_duration_seconds',
      help: 'Duration of tool calls that got past the scope check, by tool',
      labelNames: ['tool'],
      buckets: CALL_BUCKETS,
      registers,
    });
    this.#callsBySubject = options.subjectLabels
      ? new Counter({
          name: 'tool_registry_tool_calls_by_subject_total',
          help: `Tool calls by token subject and outcome (METRICS_SUBJECT_LABELS); subjects past METRICS_MAX_TOOL_LABELS count as "${OTHER_LABEL}"`,
          labelNames: ['sub', 'outcome'],
          registers,
        })
      : null;
    new Gauge({
      name: 'tool_registry_tool_calls_in_flight',
      help: 'Tool calls being carried now',
      registers,
      collect() {
        this.set(bridge.inflight);
      },
    });
    new Gauge({
      name: 'tool_registry_bus_state',
      help: 'The message bus connection: 1 for the current state (not-configured, connected or disconnected), 0 for the others',
      labelNames: ['state'],
      registers,
      collect() {
        const now = bridge.state;
        for (const state of BUS_STATES) this.set({ state }, state === now ? 1 : 0);
      },
    });

    new Counter({
      name: 'tool_registry_jwks_fetches_total',
      help: "Fetches of the authorization server's key set (JWKS), failed ones included; 0 unless tokens are verified with a JWKS",
      registers,
      collect() {
        this.reset();
        this.inc(jwks?.fetches ?? 0);
      },
    });
    new Counter({
      name: 'tool_registry_jwks_fetch_failures_total',
      help: 'Key set (JWKS) fetches that failed; the last good keys stay in use',
      registers,
      collect() {
        this.reset();
        this.inc(jwks?.failedFetches ?? 0);
      },
    });

    new Counter({
      name: 'tool_registry_replication_refused_total',
      help: 'Replication messages this replica refused and passed over without applying them, by reason: unsigned, unknown-key, bad-mac (not written by a replica holding the key), stamp-ahead (stamped more than 5 minutes ahead of when the broker took it), no-publish-time; 0 outside replicated mode',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const reason of REFUSAL_REASONS) this.inc({ reason }, replication?.refusals.get(reason) ?? 0);
      },
    });

    const configSync = () => this.#configSync();
    new Counter({
      name: 'tool_registry_trustgraph_config_requests_total',
      help: "Requests to TrustGraph's config service (TRUSTGRAPH_CONFIG_SYNC) by outcome: ok, failed (sent again after a backoff), too_large (an item too large for one message, never sent)",
      labelNames: ['outcome'],
      registers,
      collect() {
        this.reset();
        const figures = configSync();
        this.inc({ outcome: 'ok' }, figures?.requests ?? 0);
        this.inc({ outcome: 'failed' }, figures?.failures ?? 0);
        this.inc({ outcome: 'too_large' }, figures?.tooLarge ?? 0);
      },
    });
    new Gauge({
      name: 'tool_registry_trustgraph_config_pending',
      help: "Tool services and message-bus tools changed in the registry and not yet written to TrustGraph's config service (0 with TRUSTGRAPH_CONFIG_SYNC off)",
      registers,
      collect() {
        this.set(configSync()?.pending ?? 0);
      },
    });

    this.#commitWrites = new Histogram({
      name: 'tool_registry_commit_writes',
      help: 'Writes per group commit (one transaction and one fsync for all of them)',
      buckets: BATCH_BUCKETS,
      registers,
    });
    this.#commitSeconds = new Histogram({
      name: 'tool_registry_commit_duration_seconds',
      help: 'Group commits from the start of their transaction until their fsync returned',
      buckets: COMMIT_BUCKETS,
      registers,
    });
    this.#commitFailures = new Counter({
      name: 'tool_registry_commit_failures_total',
      help: 'Group commits whose transaction or fsync failed (every write in them was refused)',
      registers,
    });
    processMetrics();
  }

  /** One answered request (Fastify's onResponse): `route` is the route pattern, undefined for 404s. */
  observeRequest(method: string, route: string | undefined, status: number, seconds: number): void {
    this.#requests.observe(method, route ?? UNMATCHED_ROUTE, status, seconds);
  }

  /** One whole discovery view answered (GET /): 200 with its bytes, or 304. */
  viewServed(kind: ViewKey['kind'], notModified: boolean): void {
    const i = VIEW_SLOT[kind] * 2 + (notModified ? 1 : 0);
    this.#views[i] = (this.#views[i] ?? 0) + 1;
  }

  /** One call, as the usage tracker records it. */
  observeCall(call: CallRecord): void {
    const tool = this.#tools.of(call.tool);
    this.#calls.inc({ tool, outcome: call.outcome });
    // A denied call never started (its duration is 0): it would only pull the figures down.
    if (call.outcome !== 'denied') this.#callSeconds.observe({ tool }, call.durationMs / 1000);
    this.#callsBySubject?.inc({ sub: this.#subjects.of(call.sub ?? '(no subject)'), outcome: call.outcome });
  }

  /** One group commit. */
  observeCommit(commit: CommitObservation): void {
    this.#commitWrites.observe(commit.writes);
    this.#commitSeconds.observe(commit.durationMs / 1000);
    if (!commit.ok) this.#commitFailures.inc();
  }

  /** Where the MCP endpoint's session count comes from (src/http/routes/mcp.ts). */
  watchMcpSessions(read: () => number): void {
    this.#mcpSessions = read;
  }

  /** Where the TrustGraph config sync's figures come from (src/http/plugins/trustgraph-config.ts). */
  watchConfigSync(read: () => ConfigSyncFigures | null): void {
    this.#configSync = read;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text a scrape gets: this app's metrics, then the process's. */
  async text(): Promise<string> {
    return `${await this.registry.metrics()}${await processMetrics().metrics()}`;
  }

  close(): void {
    this.#mcpSessions = () => 0;
    this.#configSync = () => null;
    this.registry.clear();
  }
}
