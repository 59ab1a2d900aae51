/**
 * Replicated mode (issue 14): every registry write is one message on a persistent Pulsar topic,
 * and every replica applies the topic in order to its own SQLite and catalogue. The topic's order
 * decides conflicts: a message carries the write as its caller sent it, and each replica decides
 * it with the same validation against the same prior state (src/registry/registry-service.ts,
 * applyReplicated), so all replicas reach the same state, refusals included.
 *
 * A write is published, persisted by the broker, then applied here like any other replica's; its
 * caller is answered with the outcome once this replica has applied it (read-your-writes). The
 * registry index of a write is its message's position (src/replication/message-id.ts), the same
 * on every replica. The replica's position is saved in the transaction of what it applied, so a
 * crash neither repeats nor skips a message. A replica is caught up (ready) once it reads back a
 * marker it published after starting. With the broker down, writes are refused at once (503)
 * and reads go on from memory; the producer and the reader reconnect by themselves.
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
import { isObject } from '../model/json-object.js';
import type { McpTool } from '../model/mcp-schemas.js';
import {
  IMPORT_PART_LIMITS,
  isLastImportPart,
  REPLICATION_OPS,
  ReplicationEventSchema,
  replicationKey,
  SealedCredentialSchema,
  type RefusalReason,
  type ReplicationEvent,
  type ReplicationOp,
} from '../model/replication.js';
import type { Actor, AuditEntryInput, McpServerRecord, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ImportSummary, McpSyncResult, Outcome, RegistryService } from '../registry/registry-service.js';
import type { CommitObserver } from '../registry/commit-telemetry.js';
import type { KeyedWriteOptions, RegistryWrites, ToolDeleteOptions, ToolWriteOptions } from '../registry/writes.js';
import type { RegistryStore } from '../store/registry-store.js';
import { ensureTopic } from './admin.js';
import { openCredential, sealCredential, WrongKeyError } from './credential-seal.js';
import { importParts } from './import-parts.js';
import { ReplicationKeys, stampRefusal, type Refusal } from './message-auth.js';
import { indexOf } from './message-id.js';
import type { ReceivedMessage as TopicMessage } from '../pulsar/wire.js';
import { MessageTooLargeError, TopicProducer, TopicReader, TopicUnavailableError } from './topic.js';

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

/** A message refused: where it was, why, and when this replica refused it. */
export interface RefusedMessage {
  index: number;
  messageId: string;
  reason: RefusalReason;
  detail: string;
  at: string;
}

/** The database cannot serve as this replica's (a setting's mistake: the CLI exits 2 with it). */
export class ReplicaDatabaseError extends Error {}

interface Waiting {
  actor: Actor | undefined;
  resolve: (outcome: Outcome) => void;
  reject: (err: unknown) => void;
}

const unavailable = (message: string, cause?: unknown) => new RegistryError('TR_ERR_UNAVAILABLE', message, { retryAfterS: 1, cause });

export class Replicator implements RegistryWrites {
  readonly #service: RegistryService;
  readonly #options: ReplicatorOptions;
  readonly #producer: TopicProducer;
  readonly #reader: TopicReader;
  readonly #waiting = new Map<string, Waiting>();
  /** The last message handed to the service: the reader resumes after it. */
  #queued: { messageId: string; index: number } | null;
  #appliedIndex: number;
  /** Every apply handed to the service, chained: settles once all before it have. */
  #tail: Promise<unknown> = Promise.resolve();
  #marker: string | null = null;
  #markerTimer: NodeJS.Timeout | null = null;
  #caughtUp = false;
  #failed: string | undefined;
  /** Messages handed to the write side and not settled yet, and when the last one settled. */
  #applying = 0;
  #progressAt = Date.now();
  readonly #caughtUpListeners: (() => void)[] = [];
  readonly #keys: ReplicationKeys;
  readonly #refusals = new Map<RefusalReason, number>();
  #lastRefusal: RefusedMessage | undefined;

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
    this.#queued = position ? { messageId: position.messageId, index: position.index } : null;
    this.#appliedIndex = position?.index ?? 0;
    const topic = {
      url: options.url,
      token: options.token,
      topic: options.topic,
      connectTimeoutMs: options.connectTimeoutMs,
      name: `tool-registry-${options.replicaId}`,
      log: options.log,
    };
    this.#producer = new TopicProducer(topic);
    this.#reader = new TopicReader(
      topic,
      () => this.#queued?.messageId ?? null,
      (message) => this.#onMessage(message),
    );
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
    this.#reader.start();
    this.#sendMarker();
  }

  close(): void {
    if (this.#markerTimer) clearTimeout(this.#markerTimer);
    this.#producer.stop();
    this.#reader.stop();
    for (const waiting of this.#waiting.values()) waiting.reject(unavailable('the registry is shutting down'));
    this.#waiting.clear();
  }

  get state(): ReplicationState {
    return {
      replica: this.#options.replicaId,
      topic: this.#options.topic,
      caughtUp: this.#caughtUp,
      broker: this.#producer.open && this.#reader.open ? 'connected' : 'disconnected',
      appliedIndex: this.#appliedIndex,
      ...(this.#failed !== undefined && { failed: this.#failed }),
      refused: { count: [...this.#refusals.values()].reduce((a, b) => a + b, 0), ...(this.#lastRefusal && { last: this.#lastRefusal }) },
    };
  }

  /** Messages refused since this process started, by reason (for the metrics). */
  get refusals(): ReadonlyMap<RefusalReason, number> {
    return this.#refusals;
  }

  /** Resolves once this replica has caught up with the topic. */
  caughtUp(): Promise<void> {
    if (this.#caughtUp) return Promise.resolve();
    return new Promise((resolve) => this.#caughtUpListeners.push(resolve));
  }

  // A condition travels with the write and is checked where it is applied, on every replica alike.
  putTool(input: unknown, { pathName, actor, condition }: ToolWriteOptions = {}): Promise<PutResult<ToolRecord>> {
    return this.#write('tool.put', () => ({ target: pathName, body: input, ...(condition && { condition }) }), actor);
  }

  deleteTool(name: string, { actor, condition }: ToolDeleteOptions = {}): Promise<ToolRecord> {
    return this.#write('tool.delete', () => ({ target: name, ...(condition && { condition }) }), actor);
  }

  putService(input: unknown, { pathId, actor }: KeyedWriteOptions = {}): Promise<PutResult<ServiceRecord>> {
    return this.#write('tool-service.put', () => ({ target: pathId, body: input }), actor);
  }

  deleteService(id: string, actor?: Actor): Promise<ServiceRecord> {
    return this.#write('tool-service.delete', () => ({ target: id }), actor);
  }

  /**
   * A credential never travels the topic in clear: `{ bearer }` is sealed with the shared key
   * (bound to the write and the server), and refused without one. `{ set: true }` keeps the
   * stored credential and carries no secret.
   */
  putMcpServer(input: unknown, { pathId, actor }: KeyedWriteOptions = {}): Promise<PutResult<McpServerRecord>> {
    const body = isObject(input) ? input : undefined;
    const credential = body?.['credential'];
    if (body === undefined || credential === undefined || credential === null || (isObject(credential) && credential['set'] === true)) {
      return this.#write('mcp-server.put', () => ({ target: pathId, body: input }), actor);
    }
    const key = this.#keys.sealingKey;
    const refuse = (message: string, field: string) =>
      Promise.reject(new RegistryError('TR_ERR_VALIDATION', message, { fieldErrors: [{ path: field, message }] }));
    const bearer = isObject(credential) && Object.keys(credential).length === 1 ? credential['bearer'] : undefined;
    // Checked here, so that nothing else shaped like a secret goes out in clear.
    if (typeof bearer !== 'string') return refuse('must be {"bearer": "..."}, or {"set": true} to keep the stored one', 'credential');
    const target = pathId ?? (typeof body['id'] === 'string' ? body['id'] : undefined);
    if (target === undefined) return refuse('an MCP server with a credential needs its id', 'id');
    return this.#write(
      'mcp-server.put',
      (write) => ({ target, body: { ...body, credential: sealCredential(key, bearer, { write, target }) } }),
      actor,
    );
  }

  deleteMcpServer(id: string, actor?: Actor): Promise<{ server: McpServerRecord; tools: ToolRecord[] }> {
    return this.#write('mcp-server.delete', () => ({ target: id }), actor);
  }

  syncMcpTools(serverId: string, serverIndex: number, wanted: readonly McpTool[]): Promise<McpSyncResult> {
    return this.#write('mcp-server.sync', () => ({ target: serverId, serverIndex, body: wanted }), undefined);
  }

  /** One message when it fits one; else `import.part` messages (src/replication/import-parts.ts), applied at the last. */
  importBundle(input: unknown, actor?: Actor): Promise<ImportSummary> {
    return this.#write('import', () => ({ body: input }), actor);
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
    fields: (write: string) => Pick<ReplicationEvent, 'target' | 'body' | 'serverIndex'>,
    actor: Actor | undefined,
  ): Promise<T> {
    if (this.#failed !== undefined) throw unavailable(`this replica stopped applying the replication topic (${this.#failed}); restart it`);
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
          if (this.#applying > 0 || Date.now() - this.#progressAt < timeoutMs) {
            timer = setTimeout(check, Math.max(50, timeoutMs - (Date.now() - this.#progressAt)));
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
    if (this.#caughtUp || this.#failed !== undefined) return;
    const marker = randomUUID();
    const event: ReplicationEvent = { v: 1, op: 'marker', write: marker, origin: this.#options.replicaId, at: new Date().toISOString() };
    this.#marker = marker;
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

  #onMessage(message: TopicMessage): Promise<void> {
    if (this.#failed !== undefined) return Promise.resolve();
    let index: number;
    try {
      index = indexOf(message.messageId);
    } catch (err) {
      this.#fail(`message id ${message.messageId}: ${(err as Error).message}`);
      return Promise.resolve();
    }
    // Delivered again after a reconnect: it is applied or queued already.
    if (this.#queued !== null && index <= this.#queued.index) return Promise.resolve();
    this.#queued = { messageId: message.messageId, index };
    // Before anything in it is read: a forged message is never even parsed.
    const unauthentic = this.#keys.verify(this.#options.topic, message.payload, message.properties);
    if (unauthentic && !(unauthentic.reason === 'unsigned' && index <= (this.#options.acceptUnsignedThrough ?? 0)))
      return this.#refuse(message, index, unauthentic);
    const event = parseEvent(message.text);
    if (event === undefined) {
      // Not ours to decide: every replica skips it the same way.
      this.#options.log.warn({ messageId: message.messageId }, 'replication: skipped a message that is not a registry write');
      return Promise.resolve();
    }
    if (event.op === 'marker') {
      if (event.write === this.#marker && event.origin === this.#options.replicaId) void this.#tail.then(() => this.#markCaughtUp());
      return Promise.resolve();
    }
    const waiting = event.origin === this.#options.replicaId ? this.#waiting.get(event.write) : undefined;
    const ahead = stampRefusal(event.at, message.publishTime);
    if (ahead) return this.#refuse(message, index, ahead, waiting);
    const opened = this.#openCredential(event, message.messageId);
    if (opened === undefined) {
      waiting?.reject(unavailable('this replica cannot decrypt the write; fix its REPLICATION_SECRET_FILE and restart it'));
      return Promise.resolve();
    }
    this.#applying++;
    const applied = this.#service.applyReplicated(
      opened.event,
      { index, at: event.at, topic: this.#options.topic, messageId: message.messageId },
      waiting?.actor,
      opened.refusal,
    );
    const settled = () => {
      this.#applying--;
      this.#progressAt = Date.now();
    };
    this.#tail = applied.then(
      (outcome) => {
        settled();
        this.#appliedIndex = index;
        // An import's caller hears at its last part (or at the first part refused).
        if (outcome.ok && event.op === 'import.part' && !isLastImportPart(event)) return;
        waiting?.resolve(outcome);
      },
      (err: unknown) => {
        settled();
        waiting?.reject(unavailable('this replica could not apply the write; restart it', err));
        this.#fail(err instanceof Error ? err.message : String(err));
      },
    );
    return this.#tail.then(() => undefined);
  }

  /**
   * Refuses a message (src/replication/message-auth.ts): nothing of it is applied; it is counted
   * and logged here, and the position moves past it with its audit entry in a commit queued
   * behind the messages before it, so that the topic goes on. `waiting`: this replica's own write
   * (only for a message whose MAC holds), whose caller hears why.
   */
  #refuse(message: TopicMessage, index: number, refusal: Refusal, waiting?: Waiting): Promise<void> {
    const at = new Date().toISOString();
    this.#refusals.set(refusal.reason, (this.#refusals.get(refusal.reason) ?? 0) + 1);
    this.#lastRefusal = { index, messageId: message.messageId, reason: refusal.reason, detail: refusal.detail, at };
    this.#options.log.warn(
      { topic: this.#options.topic, messageId: message.messageId, index, reason: refusal.reason },
      `replication: refused a message, not applied: ${refusal.detail}`,
    );
    const authentic = refusal.reason === 'stamp-ahead' || refusal.reason === 'no-publish-time';
    const audit: AuditEntryInput = {
      at,
      sub: null,
      iss: null,
      client: null,
      requestId: null,
      action: 'replication.refused',
      target: String(index),
      outcome: authentic ? 'invalid' : 'denied',
      status: authentic ? 400 : 401,
      detail: `${refusal.reason}: ${refusal.detail} (message ${message.messageId})`,
    };
    const error = unavailable(`every replica refused this write: ${refusal.detail}`);
    this.#applying++;
    const refused = this.#service.refuseReplicated({ index, topic: this.#options.topic, messageId: message.messageId }, error, audit);
    const settled = () => {
      this.#applying--;
      this.#progressAt = Date.now();
    };
    this.#tail = refused.then(
      (outcome) => {
        settled();
        this.#appliedIndex = index;
        waiting?.resolve(outcome);
      },
      (err: unknown) => {
        settled();
        waiting?.reject(unavailable('this replica could not record the refusal of the write; restart it', err));
        this.#fail(err instanceof Error ? err.message : String(err));
      },
    );
    return this.#tail.then(() => undefined);
  }

  /**
   * A replicated `mcp-server.put` with its sealed credential opened (src/replication/
   * credential-seal.ts), or with the refusal every replica holding the key decides the same way
   * (malformed, or altered); undefined when this replica has stopped: it holds no key with the
   * credential's kid, and must not apply the server without its credential. Its position
   * stays before the message, so that it applies it once restarted with the right key.
   */
  #openCredential(event: ReplicationEvent, messageId: string): { event: ReplicationEvent; refusal?: RegistryError } | undefined {
    const body = event.op === 'mcp-server.put' && isObject(event.body) ? event.body : undefined;
    const credential = body?.['credential'];
    if (body === undefined || !isObject(credential) || !('sealed' in credential)) return { event };
    const refuse = (why: string) => ({
      event,
      refusal: new RegistryError('TR_ERR_VALIDATION', `invalid MCP server: credential: ${why}`, {
        fieldErrors: [{ path: 'credential', message: why }],
      }),
    });
    const sealed = SealedCredentialSchema.safeParse(credential);
    if (!sealed.success) return refuse('the sealed credential is malformed');
    if (event.target === undefined) return refuse('a sealed credential needs the server id as the target');
    // The key its kid names, if held; else the signing key, which tells a wrong key apart.
    const key = this.#keys.keyFor(sealed.data.kid) ?? this.#keys.sealingKey;
    try {
      const bearer = openCredential(key, sealed.data, { write: event.write, target: event.target });
      return { event: { ...event, body: { ...body, credential: { bearer } } } };
    } catch (err) {
      if (err instanceof WrongKeyError) {
        this.#fail(
          `message ${messageId} carries an MCP server's credential encrypted with a key this replica does not hold (REPLICATION_SECRET_FILE, REPLICATION_ACCEPTED_SECRET_FILES): give it the key the other replicas have`,
        );
        return undefined;
      }
      return refuse((err as Error).message);
    }
  }

  #markCaughtUp(): void {
    if (this.#caughtUp || this.#failed !== undefined) return;
    this.#caughtUp = true;
    this.#options.log.info({ topic: this.#options.topic, index: this.#appliedIndex }, 'replication: caught up');
    for (const listener of this.#caughtUpListeners.splice(0)) listener();
  }

  /** A commit failed (disk full, say): this replica stops applying, reports it, and needs a restart. */
  #fail(reason: string): void {
    if (this.#failed !== undefined) return;
    this.#failed = reason;
    this.#options.log.error({ topic: this.#options.topic }, `replication stopped: ${reason}; restart this replica`);
    this.#reader.stop();
  }
}

function parseEvent(text: string | undefined): ReplicationEvent | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = ReplicationEventSchema.safeParse(value);
  return parsed.success && REPLICATION_OPS.includes(parsed.data.op) ? parsed.data : undefined;
}
