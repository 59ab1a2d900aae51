/**
 * Live sync (TRUSTGRAPH_CONFIG_SYNC): keeps TrustGraph's config in step with the registry's tool
 * services and message-bus tools. It follows the change bus, so it hears of a write only after
 * its commit, and never holds a write up: a change marks its item, and one loop at a time writes
 * the marked items with ConfigRequest `put` and `delete` (the plan is src/model/trustgraph-config.ts
 * `planConfigWrites`).
 *
 * State, not events: the loop sends each marked item as the catalogue holds it when the loop
 * runs, so an item changed twice before it is sent is sent once, with its latest value, and the
 * end state is the registry's whatever the order. A failed request puts its items back and the
 * loop runs again after a backoff (0.5 s doubling to 30 s, jittered), logged and counted, for as
 * long as the process runs. At start every live item is marked once, so that TrustGraph gets
 * what changed while the registry was not syncing; deletions made meanwhile are not replayed.
 */
import { Backoff } from '../pulsar/socket.js';
import type { Catalog } from '../catalog/catalog.js';
import type { Change } from '../model/records.js';
import type { BusTool, ToolService } from '../model/schemas.js';
import {
  planConfigWrites,
  serviceItem,
  TOOL_SERVICE_TYPE,
  TOOL_TYPE,
  toolItem,
  type ConfigItem,
  type ConfigItemType,
  type ConfigKey,
  type ConfigWritePlan,
} from '../model/trustgraph-config.js';
import type { ConfigRequester } from './config-client.js';

/** What the sync reads of the registry: the catalogue (catalogSource), or a fake in tests. */
export interface SyncSource {
  service(id: string): ToolService | undefined;
  /** A live message-bus tool; undefined for a missing, deleted or other kind of tool. */
  busTool(name: string): BusTool | undefined;
  /** Live service ids, in order. */
  serviceIds(): string[];
  /** Names of the live tools on a service, in order. */
  toolsOf(serviceId: string): string[];
}

export function catalogSource(catalog: Catalog): SyncSource {
  return {
    service: (id) => catalog.lookupService(id),
    busTool: (name) => {
      const record = catalog.getTool(name)?.record;
      return record?.kind === 'tool-service' ? (record.descriptor as BusTool) : undefined;
    },
    serviceIds: () => catalog.services().map((s) => s.id),
    toolsOf: (id) => catalog.toolsUsingService(id),
  };
}

export interface ConfigSyncOptions {
  workspace: string;
  /** The most bytes of JSON one request may take (one message on the bus). */
  maxRequestBytes: number;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  backoff?: { minMs: number; maxMs: number };
}

/** Figures for the metrics (tool_registry_trustgraph_config_*). */
export interface ConfigSyncFigures {
  /** Requests TrustGraph's config service answered without an error. */
  requests: number;
  /** Requests that failed (sent again after a backoff). */
  failures: number;
  /** Items too large for one message on the bus: never sent. */
  tooLarge: number;
  /** Items marked and not yet written. */
  pending: number;
}

const itemId = (type: ConfigItemType, key: string) => `${type}/${key}`;

export class ConfigSync {
  readonly #client: ConfigRequester;
  readonly #source: SyncSource;
  readonly #options: ConfigSyncOptions;
  readonly #backoff: Backoff;
  /** Items to write, by `type/key`. */
  readonly #marked = new Map<string, { type: ConfigItemType; key: string }>();
  /** Message-bus tools TrustGraph may hold: only these are deleted there when they go. */
  readonly #known = new Set<string>();
  #running = false;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  #failingSince: number | null = null;
  #idle: (() => void)[] = [];
  readonly #counts = { requests: 0, failures: 0, tooLarge: 0 };

  constructor(client: ConfigRequester, source: SyncSource, options: ConfigSyncOptions) {
    this.#client = client;
    this.#source = source;
    this.#options = options;
    this.#backoff = new Backoff(options.backoff?.minMs ?? 500, options.backoff?.maxMs ?? 30_000);
  }

  get figures(): ConfigSyncFigures {
    return { ...this.#counts, pending: this.#marked.size };
  }

  /** Marks every live service and message-bus tool, and starts writing. */
  start(): void {
    for (const id of this.#source.serviceIds()) {
      this.#mark(TOOL_SERVICE_TYPE, id);
      for (const name of this.#source.toolsOf(id)) this.#mark(TOOL_TYPE, name);
    }
    this.#schedule(0);
  }

  /** A change bus listener: marks what a committed write touched. Returns at once. */
  readonly onChange = (_index: number, changes: readonly Change[]): void => {
    for (const change of changes) this.#mark(change.kind === 'tool' ? TOOL_TYPE : TOOL_SERVICE_TYPE, change.name);
    if (this.#timer === null && !this.#running) this.#schedule(0);
  };

  /** Resolves once nothing is marked and no request is out (or at close). */
  whenSynced(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#settleIdle(true);
  }

  #mark(type: ConfigItemType, key: string): void {
    if (type === TOOL_TYPE && this.#source.busTool(key) !== undefined) this.#known.add(key);
    this.#marked.set(itemId(type, key), { type, key });
  }

  #isIdle(): boolean {
    return this.#closed || (this.#marked.size === 0 && !this.#running && this.#timer === null);
  }

  #settleIdle(force = false): void {
    if (!force && !this.#isIdle()) return;
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  #schedule(delayMs: number): void {
    if (this.#closed || this.#timer !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#run();
    }, delayMs);
    this.#timer.unref();
  }

  async #run(): Promise<void> {
    if (this.#running || this.#closed) return;
    this.#running = true;
    try {
      while (this.#marked.size > 0 && !this.#closed) {
        const batch = [...this.#marked.values()];
        this.#marked.clear();
        const { plan, deletedTools } = this.#plan(batch);
        for (const item of plan.tooLarge) {
          this.#counts.tooLarge += 1;
          this.#options.log.error(
            { item: itemId(item.type, item.key), bytes: item.value.length, maxRequestBytes: this.#options.maxRequestBytes },
            'not written to TrustGraph: too large for one message on the bus',
          );
        }
        try {
          for (const request of plan.requests) {
            await this.#client.request(request);
            this.#counts.requests += 1;
          }
        } catch (err) {
          if (this.#closed) return; // the client was closed under it: nothing to retry
          this.#counts.failures += 1;
          // Back in, unless marked again meanwhile; sent as they are then.
          for (const { type, key } of batch) if (!this.#marked.has(itemId(type, key))) this.#marked.set(itemId(type, key), { type, key });
          this.#failingSince ??= Date.now();
          const delayMs = this.#backoff.next();
          this.#options.log.warn(
            { err, pending: this.#marked.size, retryInMs: delayMs },
            "writing to TrustGraph's config service failed; retrying",
          );
          this.#schedule(delayMs);
          return;
        }
        for (const name of deletedTools) if (this.#source.busTool(name) === undefined) this.#known.delete(name);
        if (this.#failingSince !== null) {
          this.#options.log.info({ failingForMs: Date.now() - this.#failingSince }, "TrustGraph's config service is written again");
          this.#failingSince = null;
        }
        this.#backoff.reset();
      }
    } finally {
      this.#running = false;
      this.#settleIdle();
    }
  }

  /** The requests for a batch of marked items, from the catalogue as it is now. */
  #plan(batch: readonly { type: ConfigItemType; key: string }[]): { plan: ConfigWritePlan; deletedTools: string[] } {
    const source = this.#source;
    const services: ConfigItem[] = [];
    const tools: ConfigItem[] = [];
    const deletes: ConfigKey[] = [];
    const deletedTools: string[] = [];
    let firstTool: BusTool | undefined;
    for (const { type, key } of batch) {
      if (type === TOOL_SERVICE_TYPE) {
        const service = source.service(key);
        if (service) services.push(serviceItem(service));
        else deletes.push({ type, key });
        continue;
      }
      const tool = source.busTool(key);
      if (tool) {
        firstTool ??= tool;
        this.#known.add(key);
        tools.push(toolItem(tool));
      } else if (this.#known.has(key)) {
        // Only what the registry put there: an HTTP tool of the same name in TrustGraph stays.
        deletes.push({ type, key });
        deletedTools.push(key);
      }
    }
    // A live item of each type, so that the push after a put names both (see planConfigWrites).
    const anchorService =
      (firstTool && source.service(firstTool.service)) ?? (services[0] && source.service(services[0].key)) ?? firstService(source);
    const anchorTool = anchorToolOf(source, services[0]?.key ?? firstTool?.service);
    const anchors: Partial<Record<ConfigItemType, ConfigItem>> = {
      ...(anchorService && { [TOOL_SERVICE_TYPE]: serviceItem(anchorService) }),
      ...(anchorTool && { [TOOL_TYPE]: toolItem(anchorTool) }),
    };
    const plan = planConfigWrites({
      puts: [...services, ...tools],
      deletes,
      anchors,
      workspace: this.#options.workspace,
      maxRequestBytes: this.#options.maxRequestBytes,
    });
    return { plan, deletedTools };
  }
}

function firstService(source: SyncSource): ToolService | undefined {
  const id = source.serviceIds()[0];
  return id === undefined ? undefined : source.service(id);
}

/** A live message-bus tool, on `preferredService` when it has one. */
function anchorToolOf(source: SyncSource, preferredService: string | undefined): BusTool | undefined {
  const ids = preferredService === undefined ? source.serviceIds() : [preferredService, ...source.serviceIds()];
  for (const id of ids) {
    for (const name of source.toolsOf(id)) {
      const tool = source.busTool(name);
      if (tool) return tool;
    }
  }
  return undefined;
}
