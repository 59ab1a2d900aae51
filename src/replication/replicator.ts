/**
 * Replicated mode (issue 14): every registry write is one message on a persistent Pulsar topic,
 * and every replica applies the topic in order to its own SQLite and catalogue. The topic's order
 * decides conflicts: a message carries the write as its caller sent it, and each replica decides
 * it with the same validation against the same prior state (src/registry/registry-service.ts,
 * applyReplicated), so all replicas reach the same state, refusals included.
 *
 * A write is published (here), persisted by the broker, then applied like any other replica's
 * (src/replication/replica-applier.ts reads and applies the topic); its caller is answered with
 * the outcome once this replica has applied it (read-your-writes). The registry index of a
 * write is its message's position (src/replication/message-id.ts), the same on every replica.
 * The replica's position is saved in the transaction of what it applied, so a crash neither
 * repeats nor skips a message. A replica is caught up (ready) once it reads back a marker it
 * published after starting. With the broker down, writes are refused at once (503) and reads go
 * on from memory; the producer and the reader reconnect by themselves.
 *
 * Two writes do not travel as they came. An import too big for one message goes as `import.part`
 * messages (src/replication/import-parts.ts) that every replica stages and applies at the last
 * one; its caller is answered then, with the last part's index. An MCP server's credential goes
 * sealed with the key every replica shares (src/replication/credential-seal.ts), never in clear.
 *
 * Every message is signed (src/replication/message-auth.ts): a replica applies only messages
 * MACed under a key it holds and stamped no more than MAX_STAMP_AHEAD_MS ahead of when the broker
 * took them. Any other is refused the same way on every replica holding the same keys: not
 * applied, audited, counted (the state in /readyz, the metrics), and passed over with the
 * position moved past it, so that one forged message cannot stall the topic.
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import { RegistryError } from '../model/errors.js';
import type { McpServerPutBody, ToolPutBody, ToolServicePutBody } from '../model/descriptors.js';
import type { McpTool } from '../model/mcp-schemas.js';
import { withForwardingStated } from '../model/forwarding.js';
import { IMPORT_PART_LIMITS, replicationKey, type RefusalReason, type ReplicationEvent, type ReplicationOp } from '../model/replication.js';
import type { Actor, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ImportSummary, McpSyncResult, Outcome, RegistryService } from '../registry/registry-service.js';
import type { CommitObserver } from '../registry/commit-telemetry.js';
import type { ReviewedChange, ReviewResult } from '../registry/write-commands.js';
import type { DeleteOptions, KeyedWriteOptions, RegistryWrites, ServiceWriteOptions, ToolWriteOptions } from '../registry/writes.js';
import type { RegistryStore } from '../store/registry-store.js';
import { ensureTopic } from './admin.js';
import { sealCredential } from './credential-seal.js';
import { importParts } from './import-parts.js';
import { ReplicationKeys } from './message-auth.js';
import { ReplicaApplier, unavailable, type RefusedMessage, type Waiting } from './replica-applier.js';
import { MessageTooLargeError, TopicProducer, TopicUnavailableError } from './topic.js';
import type { DeprecationBody } from '../model/deprecation.js';

export interface ReplicatorOptions {
  /** Pulsar's WebSocket API. */
  url: string;
  token?: string | undefined;
  /** A persistent topic, e.g. persistent://tg/registry/descriptors. */
  topic: string;
  /** This replica's name: stable across restarts (its audit entries, its writes' origin). */
  replicaId: string;
  /** The admin REST API, for the topic's retention; undefined: not set from here. */
  adminUrl?: string | undefined;
  connectTimeoutMs: number;
  /**
   * How long a write waits, after the broker took it, while this replica applies nothing: a
   * write behind a long import keeps waiting as long as the replica is busy applying.
   */
  applyTimeoutMs: number;
  /** Largest message, as JSON, the broker takes through the WebSocket API (base64 in one frame); a bigger import goes in parts. */
  maxMessageBytes: number;
  /**
   * The key every replica shares (REPLICATION_SECRET_FILE): every message is signed with a MAC
   * key derived from it (src/replication/message-auth.ts), and MCP servers' credentials travel
   * the topic encrypted with it (src/replication/credential-seal.ts).
   */
  secretKey: KeyObject;
  /** Further keys whose messages and sealed credentials are accepted (REPLICATION_ACCEPTED_SECRET_FILES): rotation. */
  acceptedKeys?: readonly KeyObject[] | undefined;
  /** Messages without a MAC at or before this registry index are applied anyway (REPLICATION_ACCEPT_UNSIGNED); default 0, none. */
  acceptUnsignedThrough?: number | undefined;
  /**
   * The app's one scheduler of background work (the catalogue's Scheduler, src/catalog/
   * scheduler.ts): cutting a big import into its parts takes turns in it with the rest.
   */
  scheduler: StepRunner;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

/**
 * What the replicator needs of the app's Scheduler, stated here: replication/ does not import
 * the catalogue's room (eslint.config.js), and the Scheduler has this shape.
 */
interface StepRunner {
  run<T>(steps: Generator<void, T, void>, owner: string): Promise<T>;
}

/** The replicator's name among the scheduler's owners. */
const REPLICATION_OWNER = 'replication';

export interface ReplicationState {
  replica: string;
  topic: string;
  /** Whether this replica has applied everything published before it started. */
  caughtUp: boolean;
  /** Whether writes can reach the broker now. */
  broker: 'connected' | 'disconnected';
  /** The index of the last message applied here. */
  appliedIndex: number;
  /** Why this replica stopped applying the topic (it needs a restart), if it did. */
  failed?: string;
  /** Messages refused (not applied, passed over) since this process started, and the last one. */
  refused: { count: number; last?: RefusedMessage };
}

/** The database cannot serve as this replica's (a setting's mistake: the CLI exits 2 with it). */
export class ReplicaDatabaseError extends Error {}

export class Replicator implements RegistryWrites {
  readonly #service: RegistryService;
  readonly #options: ReplicatorOptions;
  readonly #producer: TopicProducer;
  readonly #applier: ReplicaApplier;
  readonly #waiting = new Map<string, Waiting>();
  #markerTimer: NodeJS.Timeout | null = null;
  readonly #keys: ReplicationKeys;

  constructor(service: RegistryService, store: RegistryStore, options: ReplicatorOptions) {
    this.#service = service;
    this.#options = options;
    this.#keys = new ReplicationKeys(options.secretKey, options.acceptedKeys);
    const position = store.replicationPosition();
    if (position === undefined && store.registryIndex() > 0) {
      throw new ReplicaDatabaseError(
        `DATABASE_PATH holds ${store.registryIndex()} write(s) made outside replication: start a replica on a new database and load them with \`tool-registry export\` and POST /import`,
      );
    }
    if (position !== undefined && position.topic !== options.topic) {
      throw new ReplicaDatabaseError(`DATABASE_PATH follows replication topic ${position.topic}, not REPLICATION_TOPIC ${options.topic}`);
    }
    if (position) service.restoreStamp(position.lastAt);
    const topic = {
      url: options.url,
      token: options.token,
      topic: options.topic,
      connectTimeoutMs: options.connectTimeoutMs,
      name: `tool-registry-${options.replicaId}`,
      log: options.log,
    };
    this.#producer = new TopicProducer(topic);
    this.#applier = new ReplicaApplier(service, {
      topic,
      replicaId: options.replicaId,
      acceptUnsignedThrough: options.acceptUnsignedThrough,
      keys: this.#keys,
      from: position && { messageId: position.messageId, index: position.index },
      waitingFor: (write) => this.#waiting.get(write),
      log: options.log,
    });
  }

  /** Sets the topic's retention (best effort), then connects the producer and the reader, and starts catching up. */
  async start(): Promise<void> {
    if (this.#options.adminUrl !== undefined) {
      const problem = await ensureTopic({
        adminUrl: this.#options.adminUrl,
        token: this.#options.token,
        topic: this.#options.topic,
        timeoutMs: this.#options.connectTimeoutMs,
      });
      if (problem)
        this.#options.log.warn(
          { topic: this.#options.topic },
          `replication: ${problem}; set the namespace's retention to keep every message (see the README)`,
        );
    }
    this.#producer.start();
    this.#applier.start();
    this.#sendMarker();
  }

  close(): void {
    if (this.#markerTimer) clearTimeout(this.#markerTimer);
    this.#producer.stop();
    this.#applier.stop();
    for (const waiting of this.#waiting.values()) waiting.reject(unavailable('the registry is shutting down'));
    this.#waiting.clear();
  }

  get state(): ReplicationState {
    const applier = this.#applier;
    return {
      replica: this.#options.replicaId,
      topic: this.#options.topic,
      caughtUp: applier.caughtUp,
      broker: this.#producer.open && applier.open ? 'connected' : 'disconnected',
      appliedIndex: applier.appliedIndex,
      ...(applier.failed !== undefined && { failed: applier.failed }),
      refused: {
        count: [...applier.refusals.values()].reduce((a, b) => a + b, 0),
        ...(applier.lastRefusal && { last: applier.lastRefusal }),
      },
    };
  }

  /** Messages refused since this process started, by reason (for the metrics). */
  get refusals(): ReadonlyMap<RefusalReason, number> {
    return this.#applier.refusals;
  }

  /** Resolves once this replica has caught up with the topic. */
  caughtUp(): Promise<void> {
    return this.#applier.whenCaughtUp();
  }

  // A condition travels with the write and is checked where it is applied, on every replica alike.
  putTool(input: ToolPutBody, { pathName, actor, condition }: ToolWriteOptions = {}): Promise<PutResult<ToolRecord>> {
    return this.#write('tool.put', () => ({ target: pathName, body: input, ...(condition && { condition }) }), actor);
  }

  deleteTool(name: string, { actor, condition }: DeleteOptions = {}): Promise<ToolRecord> {
    return this.#write('tool.delete', () => ({ target: name, ...(condition && { condition }) }), actor);
  }

  /** Issue 34: the body travels as sent (null lifts it); every replica stamps `since` with the message's time. */
  deprecateTool(name: string, body: DeprecationBody | null, { actor, condition }: DeleteOptions = {}): Promise<ToolRecord> {
    return this.#write(
      body ? 'tool.deprecate' : 'tool.undeprecate',
      () => ({ target: name, ...(body && { body }), ...(condition && { condition }) }),
      actor,
    );
  }

  putService(input: ToolServicePutBody, { pathId, actor, condition }: ServiceWriteOptions = {}): Promise<PutResult<ServiceRecord>> {
    return this.#write('tool-service.put', () => ({ target: pathId, body: input, ...(condition && { condition }) }), actor);
  }

  deleteService(id: string, { actor, condition }: DeleteOptions = {}): Promise<ServiceRecord> {
    return this.#write('tool-service.delete', () => ({ target: id, ...(condition && { condition }) }), actor);
  }

  /**
   * A credential never travels the topic in clear: `{ bearer }` is sealed with the shared key
   * (bound to the write and the server), and refused without one. `{ set: true }` keeps the
   * stored credential and carries no secret.
   */
  putMcpServer(input: McpServerPutBody, { pathId, actor }: KeyedWriteOptions = {}): Promise<PutResult<McpServerRecord>> {
    const { credential } = input;
    if (credential === undefined || 'set' in credential)
      return this.#write('mcp-server.put', () => ({ target: pathId, body: input }), actor);
    const key = this.#keys.sealingKey;
    const target = pathId ?? input.id;
    if (target === undefined) {
      const message = 'an MCP server with a credential needs its id';
      return Promise.reject(new RegistryError('TR_ERR_VALIDATION', message, { fieldErrors: [{ path: 'id', message }] }));
    }
    return this.#write(
      'mcp-server.put',
      (write) => ({ target, body: { ...input, credential: sealCredential(key, credential.bearer, { write, target }) } }),
      actor,
    );
  }

  /**
   * OpenAPI sources (issue 30) are not on the replication topic yet: their credential is sealed
   * under each replica's own key, and the converted tools would have to travel in parts. Refused
   * with a reason rather than written on one replica only.
   */
  putOpenApiSource(): Promise<never> {
    return Promise.reject(notReplicated());
  }

  deleteOpenApiSource(): Promise<never> {
    return Promise.reject(notReplicated());
  }

  /** A tool's own credential is sealed under each replica's key: not on the topic yet either. */
  setToolCredential(): Promise<never> {
    return Promise.reject(
      new RegistryError('TR_ERR_CONFLICT', "a tool's own credential is not replicated yet: in replicated mode HTTP tools carry none"),
    );
  }

  removeToolCredential(): Promise<never> {
    return this.setToolCredential();
  }

  refreshOpenApiSource(): Promise<never> {
    return Promise.reject(notReplicated());
  }

  acceptOpenApiChanges(): Promise<never> {
    return Promise.reject(notReplicated());
  }

  rejectOpenApiChanges(): Promise<never> {
    return Promise.reject(notReplicated());
  }

  deleteMcpServer(id: string, actor?: Actor): Promise<{ server: McpServerRecord; tools: ToolRecord[] }> {
    return this.#write('mcp-server.delete', () => ({ target: id }), actor);
  }

  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[]): Promise<McpSyncResult> {
    return this.#write('mcp-server.sync', () => ({ target: serverId, serverIndex, body: wanted }), undefined);
  }

  /**
   * A slice of a long sync (issue 29) as a message of its own, so that every replica writes it
   * in slices too: 5,000 tools in one message held every replica's event loop for the whole
   * write. The last slice carries every name of the list.
   */
  syncMcpToolsPart(serverId: string, serverIndex: number, part: readonly McpTool[], listed?: ReadonlySet<string>): Promise<McpSyncResult> {
    return this.#write(
      'mcp-server.sync',
      () => ({ target: serverId, serverIndex, body: part, slice: true, ...(listed && { listed: [...listed] }) }),
      undefined,
    );
  }

  acceptMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult> {
    return this.#write('mcp-server.accept', () => ({ target: serverId, body: changes }), actor);
  }

  rejectMcpChanges(serverId: string, changes: readonly ReviewedChange[], actor?: Actor): Promise<ReviewResult> {
    return this.#write('mcp-server.reject', () => ({ target: serverId, body: changes }), actor);
  }

  /** One message when it fits one; else `import.part` messages (src/replication/import-parts.ts), applied at the last. */
  importBundle(input: unknown, actor?: Actor): Promise<ImportSummary> {
    // The field written out, so that replicas of every version store what this writer means.
    return this.#write('import', () => ({ body: withForwardingStated(input, false) }), actor);
  }

  observeCommits(observer: CommitObserver): () => void {
    return this.#service.observeCommits(observer);
  }

  probeWrite(): void {
    this.#service.probeWrite();
  }

  exportBundle(): ReturnType<RegistryService['exportBundle']> {
    return this.#service.exportBundle();
  }

  async #write<T>(
    op: ReplicationOp,
    fields: (write: string) => Pick<ReplicationEvent, 'target' | 'body' | 'serverIndex' | 'slice' | 'listed'>,
    actor: Actor | undefined,
  ): Promise<T> {
    const failed = this.#applier.failed;
    if (failed !== undefined) throw unavailable(`this replica stopped applying the replication topic (${failed}); restart it`);
    const write = randomUUID();
    const event: ReplicationEvent = {
      v: 1,
      op,
      write,
      origin: this.#options.replicaId,
      at: new Date().toISOString(),
      ...fields(write),
      ...(actor?.announcer !== undefined && { owner: actor.announcer }),
    };
    const max = this.#options.maxMessageBytes;
    if (op !== 'import') {
      const payload = JSON.stringify(event);
      const bytes = Buffer.byteLength(payload);
      if (bytes > max)
        throw new RegistryError(
          'TR_ERR_BODY_TOO_LARGE',
          `in replicated mode a write travels as one message of at most ${max} bytes of JSON; this one is ${bytes}`,
        );
      return this.#publish(event, actor, 1, () => payload);
    }
    // The bundle's text once: the whole message if it fits, else what the parts cut.
    const { body, ...header } = event;
    const text = JSON.stringify(body) ?? 'null';
    const head = JSON.stringify(header);
    const single = `${head.slice(0, -1)},"body":${text}}`;
    if (Buffer.byteLength(single) <= max) return this.#publish(event, actor, 1, () => single);
    const bytes = Buffer.byteLength(text);
    if (bytes > IMPORT_PART_LIMITS.maxImportBytes) {
      throw new RegistryError(
        'TR_ERR_BODY_TOO_LARGE',
        `in replicated mode an import has at most ${IMPORT_PART_LIMITS.maxImportBytes} bytes of JSON; this one is ${bytes}`,
      );
    }
    const parts = await this.#options.scheduler.run(importParts(event, text, max, IMPORT_PART_LIMITS.maxParts), REPLICATION_OWNER);
    if (parts === undefined)
      throw new RegistryError(
        'TR_ERR_BODY_TOO_LARGE',
        `in replicated mode an import goes in at most ${IMPORT_PART_LIMITS.maxParts} messages of ${max} bytes; this one needs more`,
      );
    return this.#publish(event, actor, parts.count, (n) => parts.message(n, n === 0 ? event.at : new Date().toISOString()));
  }

  /**
   * Publishes a write's messages in order (one, or the parts of an import: each once the broker
   * has taken the one before, and no more once one is refused), then waits for this replica to
   * apply the last, and answers with its outcome.
   */
  async #publish<T>(event: ReplicationEvent, actor: Actor | undefined, count: number, message: (n: number) => string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    let early: Outcome | undefined;
    const applied = new Promise<Outcome>((resolve, reject) => this.#waiting.set(event.write, { actor, resolve, reject }));
    applied.then(
      (outcome) => void (early = outcome),
      () => undefined,
    );
    const key = replicationKey(event);
    try {
      for (let n = 0; n < count && early === undefined; n++) {
        try {
          await this.#send(message(n), key);
        } catch (err) {
          const what = count > 1 ? `part ${n + 1} of ${count} of this import` : 'this write';
          if (err instanceof MessageTooLargeError) {
            throw new RegistryError(
              'TR_ERR_BODY_TOO_LARGE',
              `the broker refused ${what} as too large (${err.message}); set PULSAR_WS_MAX_FRAME_BYTES to what the broker takes`,
            );
          }
          if (err instanceof TopicUnavailableError)
            throw unavailable(`${err.message}: writes are refused until the broker is back; reads go on`, err);
          throw err;
        }
      }
      const timeoutMs = this.#options.applyTimeoutMs;
      const timedOut = new Promise<never>((_resolve, reject) => {
        const check = () => {
          // Still applying what came before it (an import, say): wait on.
          const { busy, progressAt } = this.#applier;
          if (busy || Date.now() - progressAt < timeoutMs) {
            timer = setTimeout(check, Math.max(50, timeoutMs - (Date.now() - progressAt)));
            return;
          }
          reject(
            unavailable(
              `the broker took the write but this replica has applied nothing for ${timeoutMs} ms; the write takes effect when applied`,
            ),
          );
        };
        timer = setTimeout(check, timeoutMs);
      });
      const outcome = await Promise.race([applied, timedOut]);
      if (!outcome.ok) throw outcome.error;
      return outcome.value as T;
    } finally {
      clearTimeout(timer);
      this.#waiting.delete(event.write);
    }
  }

  /** Publishes a marker; caught up once it is read back with everything before it applied. Retried until the broker takes it. */
  #sendMarker(): void {
    this.#markerTimer = null;
    if (this.#applier.caughtUp || this.#applier.failed !== undefined) return;
    const marker = randomUUID();
    const event: ReplicationEvent = { v: 1, op: 'marker', write: marker, origin: this.#options.replicaId, at: new Date().toISOString() };
    this.#applier.expectMarker(marker);
    this.#send(JSON.stringify(event), replicationKey(event)).then(
      () => undefined,
      () => {
        this.#markerTimer = setTimeout(() => this.#sendMarker(), 500);
        this.#markerTimer.unref();
      },
    );
  }

  /** Publishes one message, signed. */
  #send(text: string, key: string): Promise<string> {
    const payload = Buffer.from(text);
    return this.#producer.publish(payload, key, this.#keys.sign(this.#options.topic, payload));
  }
}

function notReplicated(): RegistryError {
  return new RegistryError(
    'TR_ERR_CONFLICT',
    'OpenAPI sources are not replicated yet: in replicated mode register the API as HTTP tools (PUT /tools/{name} with a target), which replicas share',
  );
}
