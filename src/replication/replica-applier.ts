/**
 * The apply side of replicated mode (src/replication/replicator.ts has the publish side): reads
 * the topic from this replica's position and hands each message, in order, to the write side
 * (RegistryService.applyReplicated), after checking its MAC and stamp (message-auth.ts) and
 * opening a sealed credential (credential-seal.ts). It answers this replica's own writes once
 * they are applied, notes when the replica has caught up (its marker read back), and stops for
 * good when a commit fails, so that the replica needs a restart rather than skipping a message.
 */
import { RegistryError } from '../model/errors.js';
import { isObject } from '../model/json-object.js';
import {
  isLastImportPart,
  REPLICATION_OPS,
  ReplicationEventSchema,
  SealedCredentialSchema,
  type RefusalReason,
  type ReplicationEvent,
} from '../model/replication.js';
import type { Actor, AuditEntryInput } from '../model/records.js';
import type { Outcome, RegistryService } from '../registry/registry-service.js';
import type { ReceivedMessage as TopicMessage } from '../pulsar/wire.js';
import { openCredential, WrongKeyError } from './credential-seal.js';
import { stampRefusal, type Refusal, type ReplicationKeys } from './message-auth.js';
import { indexOf } from './message-id.js';
import { TopicReader, type TopicOptions } from './topic.js';

/** A message refused: where it was, why, and when this replica refused it. */
export interface RefusedMessage {
  index: number;
  messageId: string;
  reason: RefusalReason;
  detail: string;
  at: string;
}

/** A write of this replica's own, waiting for its outcome. */
export interface Waiting {
  actor: Actor | undefined;
  resolve: (outcome: Outcome) => void;
  reject: (err: unknown) => void;
}

export interface ApplierOptions {
  /** The topic's connection, read from `from`. */
  topic: TopicOptions;
  /** This replica's name: its own writes and markers carry it as their origin. */
  replicaId: string;
  /** Messages without a MAC at or before this registry index are applied anyway (REPLICATION_ACCEPT_UNSIGNED). */
  acceptUnsignedThrough?: number | undefined;
  keys: ReplicationKeys;
  /** Where the replica's position was saved (undefined: a new replica, which reads from the start). */
  from: { messageId: string; index: number } | undefined;
  /** The replica's own write `write`, when one waits for its outcome. */
  waitingFor: (write: string) => Waiting | undefined;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void; error(obj: object, msg: string): void };
}

export const unavailable = (message: string, cause?: unknown) =>
  new RegistryError('TR_ERR_UNAVAILABLE', message, { retryAfterS: 1, cause });

export class ReplicaApplier {
  readonly #service: RegistryService;
  readonly #options: ApplierOptions;
  readonly #reader: TopicReader;
  /** The last message handed to the service: the reader resumes after it. */
  #queued: { messageId: string; index: number } | null;
  #appliedIndex: number;
  /** Every apply handed to the service, chained: settles once all before it have. */
  #tail: Promise<unknown> = Promise.resolve();
  #marker: string | null = null;
  #caughtUp = false;
  #failed: string | undefined;
  /** Messages handed to the write side and not settled yet, and when the last one settled. */
  #applying = 0;
  #progressAt = Date.now();
  readonly #caughtUpListeners: (() => void)[] = [];
  readonly #refusals = new Map<RefusalReason, number>();
  #lastRefusal: RefusedMessage | undefined;

  constructor(service: RegistryService, options: ApplierOptions) {
    this.#service = service;
    this.#options = options;
    this.#queued = options.from ?? null;
    this.#appliedIndex = options.from?.index ?? 0;
    this.#reader = new TopicReader(
      options.topic,
      () => this.#queued?.messageId ?? null,
      (message) => this.#onMessage(message),
    );
  }

  start(): void {
    this.#reader.start();
  }

  stop(): void {
    this.#reader.stop();
  }

  /** Whether the reader is connected to the broker. */
  get open(): boolean {
    return this.#reader.open;
  }

  /** The index of the last message applied here. */
  get appliedIndex(): number {
    return this.#appliedIndex;
  }

  get caughtUp(): boolean {
    return this.#caughtUp;
  }

  /** Why this replica stopped applying the topic, if it did. */
  get failed(): string | undefined {
    return this.#failed;
  }

  /** Whether a message is in the write side's hands now. */
  get busy(): boolean {
    return this.#applying > 0;
  }

  /** When the last message handed to the write side settled (or when this started). */
  get progressAt(): number {
    return this.#progressAt;
  }

  /** Messages refused since this process started, by reason. */
  get refusals(): ReadonlyMap<RefusalReason, number> {
    return this.#refusals;
  }

  get lastRefusal(): RefusedMessage | undefined {
    return this.#lastRefusal;
  }

  /** The marker this replica published last: caught up once it is read back with everything before it applied. */
  expectMarker(marker: string): void {
    this.#marker = marker;
  }

  /** Resolves once this replica has caught up with the topic. */
  whenCaughtUp(): Promise<void> {
    if (this.#caughtUp) return Promise.resolve();
    return new Promise((resolve) => this.#caughtUpListeners.push(resolve));
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
    const unauthentic = this.#options.keys.verify(this.#options.topic.topic, message.payload, message.properties);
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
    const waiting = event.origin === this.#options.replicaId ? this.#options.waitingFor(event.write) : undefined;
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
      { index, at: event.at, topic: this.#options.topic.topic, messageId: message.messageId },
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
    const topic = this.#options.topic.topic;
    this.#refusals.set(refusal.reason, (this.#refusals.get(refusal.reason) ?? 0) + 1);
    this.#lastRefusal = { index, messageId: message.messageId, reason: refusal.reason, detail: refusal.detail, at };
    this.#options.log.warn(
      { topic, messageId: message.messageId, index, reason: refusal.reason },
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
    const refused = this.#service.refuseReplicated({ index, topic, messageId: message.messageId }, error, audit);
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
    const keys = this.#options.keys;
    const key = keys.keyFor(sealed.data.kid) ?? keys.sealingKey;
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
    this.#options.log.info({ topic: this.#options.topic.topic, index: this.#appliedIndex }, 'replication: caught up');
    for (const listener of this.#caughtUpListeners.splice(0)) listener();
  }

  /** A commit failed (disk full, say): this replica stops applying, reports it, and needs a restart. */
  #fail(reason: string): void {
    if (this.#failed !== undefined) return;
    this.#failed = reason;
    this.#options.log.error({ topic: this.#options.topic.topic }, `replication stopped: ${reason}; restart this replica`);
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
