/**
 * Self-announcing tool services (issues 14 and 29): listens on the announcement topic
 * (ANNOUNCE_TOPIC) and turns each announcement (src/model/announcement.ts) into registry writes
 * under the announcer's identity, and each heartbeat into liveness (src/catalog/service-health.ts).
 *
 * - An announcement is a JWS signed with a key an operator bound to one announcer
 *   (ANNOUNCER_KEYS_FILE); the binding's subject is the owner (`announcer:<sub>`) of what it
 *   announces. No bearer token travels in the message (src/announce/verify.ts).
 * - Each announcer process's sequence numbers are taken only upwards, in the order the topic
 *   delivers them, and kept in SQLite (migration 014), so a replay is refused, restarts
 *   included; so is an issued-at beyond ANNOUNCE_MAX_SKEW_S.
 * - Only what the binding grants is written: its queues, its scopes (src/announce/binding.ts).
 *   The write side refuses an announcement over anything an operator (or another announcer)
 *   registered, and over another owner's queues.
 * - Writes happen only when the announcement differs from what the catalogue holds (compared
 *   here, so that heartbeats cost no write, and in replicated mode no message on the topic).
 *   Tools the service stops announcing are deleted. One sync per service at a time.
 * - Liveness is renewed only for a service this announcer owns, so an announcement can never make
 *   an operator's service go unavailable.
 * - Every process listens (a subscription of its own, non-durable): each replica hears the
 *   heartbeats itself, and keeps its own sequence numbers (a replica that took an announcement
 *   must not make the others refuse it as a replay). Refusals are logged and audited, never
 *   with the message itself.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Catalog } from '../catalog/catalog.js';
import type { ServiceHealth } from '../catalog/service-health.js';
import type { Announcement } from '../model/announcement.js';
import type { AnnouncerBinding } from '../model/announcer-bindings.js';
import { RegistryError } from '../model/errors.js';
import type { Actor, AuditEntryInput } from '../model/records.js';
import { parseToolServicePut } from '../model/descriptors.js';
import { resolveTool } from '../model/resolve.js';
import { parseToolBody } from '../json-schema/tool-schemas.js';
import { Consumer } from '../pulsar/consumer.js';
import { consumerUrl } from '../pulsar/wire.js';
import type { RegistryWrites } from '../registry/writes.js';
import { refusedQueues, refusedScopes, refusedSharing } from './binding.js';
import { takeInOrder, verifySignature, type Refused, type SequenceLedger, type TrustedKey, type Verified } from './verify.js';

/** How often sequence rows of processes unheard for longer than the skew bound are dropped. */
const PRUNE_INTERVAL_MS = 60_000;

export interface AnnounceOptions {
  url: string;
  token?: string | undefined;
  topic: string;
  connectTimeoutMs: number;
  /** The operator's announcer keys by `kid`, each with its binding (ANNOUNCER_KEYS_FILE). */
  announcers: ReadonlyMap<string, TrustedKey>;
  /** Each announcer process's last sequence number (SQLite: src/store/announcer-sequence-rows.ts). */
  sequences: SequenceLedger;
  /** ANNOUNCE_MAX_SKEW_S. */
  maxSkewS: number;
  /** The clock, in milliseconds (tests move it). */
  now?: () => number;
  registry: RegistryWrites;
  catalog: Catalog;
  health: ServiceHealth;
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  /** Records a refused announcement in the audit log (accepted ones are audited by their writes). */
  auditRefusal?: (entry: AuditEntryInput) => void;
}

/** What one announcement did (for tests and logs). */
export interface AnnouncementOutcome {
  serviceId: string | undefined;
  refused?: string;
  wrote: number;
}

export class AnnouncementListener {
  readonly #options: AnnounceOptions;
  readonly #syncing = new Set<string>();
  readonly #consumer: Consumer;
  readonly #now: () => number;
  /** Verification in the topic's order: a later message must not take its sequence number first. */
  #inOrder: Promise<unknown> = Promise.resolve();
  #prunedAt = 0;
  #connected: ((value: void) => void) | null = null;
  /** Resolves once subscribed the first time. */
  readonly ready: Promise<void>;

  constructor(options: AnnounceOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.ready = new Promise((resolve) => (this.#connected = resolve));
    const { url, token, topic, connectTimeoutMs, log } = options;
    const subscription = `tool-registry-announce-${randomUUID()}`;
    // Every process hears every heartbeat: a subscription of its own, gone with the connection.
    this.#consumer = new Consumer(
      {
        url: consumerUrl(url, topic, subscription, { subscriptionType: 'Exclusive', subscriptionMode: 'NonDurable' }),
        token,
        connectTimeoutMs,
        backoff: { minMs: 250, maxMs: 5_000 },
      },
      (message) => void this.handle(message.text),
      {
        open: () => {
          log.info({ topic }, 'listening for tool services announcing themselves');
          this.#connected?.();
        },
      },
    );
  }

  start(): void {
    this.#consumer.socket.start();
  }

  close(): void {
    this.#consumer.socket.close();
  }

  /** Handles one message's payload; exported for tests through the class. */
  async handle(text: string | undefined): Promise<AnnouncementOutcome> {
    const step = this.#inOrder.then(() => this.#verify(text));
    this.#inOrder = step.catch(() => undefined);
    let checked: Verified | Refused;
    try {
      checked = await step;
    } catch (err) {
      // The database could not take the sequence number (busy, full): not taken, so not written;
      // the next heartbeat tries again.
      const status = err instanceof RegistryError ? err.status : 500;
      this.#options.log.warn({ topic: this.#options.topic, reason: (err as Error).message }, 'announcement not taken');
      this.#audit(undefined, status, err instanceof RegistryError ? err.code : null, undefined);
      return { serviceId: undefined, refused: (err as Error).message, wrote: 0 };
    }
    if (!checked.ok) return this.#refuse(checked);
    const { announcement, binding } = checked;
    const serviceId = typeof announcement.service['id'] === 'string' ? announcement.service['id'] : undefined;
    if (serviceId === undefined) return this.#refuse({ reason: 'the announced service has no id', status: 400, subject: binding.subject });
    const owner = `announcer:${binding.subject}`;
    const actor: Actor = { sub: binding.subject, iss: null, client: 'announcement', requestId: null, announcer: owner };
    if (announcement.goodbye) {
      if (this.#owns(serviceId, owner)) this.#options.health.gone(serviceId);
      return { serviceId, wrote: 0 };
    }
    let wrote = 0;
    if (!this.#syncing.has(serviceId)) {
      this.#syncing.add(serviceId);
      try {
        const refusal = this.#outsideBinding(serviceId, announcement, binding, owner);
        if (refusal !== undefined) return this.#refuse({ reason: refusal, status: 403, subject: binding.subject, serviceId });
        wrote = await this.#sync(serviceId, announcement, actor, owner);
      } catch (err) {
        const status = err instanceof RegistryError ? err.status : 500;
        this.#options.log.warn({ serviceId, subject: binding.subject, reason: (err as Error).message }, 'announcement refused');
        this.#audit(serviceId, status, err instanceof RegistryError ? err.code : null, binding.subject);
        return { serviceId, refused: (err as Error).message, wrote };
      } finally {
        this.#syncing.delete(serviceId);
      }
    }
    if (this.#owns(serviceId, owner)) this.#options.health.beat(serviceId, announcement.heartbeatIntervalS);
    return { serviceId, wrote };
  }

  /** Signature, then issued-at and sequence number (the ledger's write: in the topic's order). */
  async #verify(text: string | undefined): Promise<Verified | Refused> {
    const { announcers, sequences, maxSkewS } = this.#options;
    const verified = await verifySignature(text, announcers);
    if (!verified.ok) return verified;
    const nowMs = this.#now();
    const refused = takeInOrder(verified, sequences, Math.floor(nowMs / 1000), maxSkewS);
    if (refused) return refused;
    if (nowMs - this.#prunedAt >= PRUNE_INTERVAL_MS) {
      this.#prunedAt = nowMs;
      // A process unheard for longer than the skew bound: its old messages are refused for their age.
      sequences.prune(Math.floor(nowMs / 1000) - maxSkewS - 1);
    }
    return verified;
  }

  /** The binding's queues, sharing and scopes, before anything is written; the reason of a refusal. */
  #outsideBinding(serviceId: string, announcement: Announcement, binding: AnnouncerBinding, owner: string): string | undefined {
    const service = { ...parseToolServicePut(announcement.service, serviceId), id: serviceId };
    const refusal = refusedQueues(binding, service) ?? refusedSharing(binding, owner, service, this.#options.catalog.services());
    if (refusal !== undefined) return refusal;
    const tools: { name: string; scopes: string[] }[] = [];
    for (const input of announcement.tools) {
      try {
        const body = parseToolBody(input);
        tools.push({ name: body.name, scopes: body.scopes });
      } catch {
        // Refused one by one in #sync, with its reason logged.
      }
    }
    return refusedScopes(binding, tools);
  }

  #owns(serviceId: string, owner: string): boolean {
    return this.#options.catalog.getService(serviceId)?.owner === owner;
  }

  /** Writes what differs from the catalogue: the service, its tools, and deletes tools no longer announced. */
  async #sync(serviceId: string, announcement: Announcement, actor: Actor, owner: string): Promise<number> {
    const { registry, catalog, log } = this.#options;
    let wrote = 0;
    const stored = catalog.getService(serviceId);
    const service = parseToolServicePut(announcement.service, serviceId);
    if (!stored || stored.status === 'deleted' || stored.owner !== owner || !isDeepStrictEqual(stored.descriptor, service)) {
      await registry.putService(service, { pathId: serviceId, actor });
      wrote++;
    }
    const announced = new Set<string>();
    for (const input of announcement.tools) {
      const name = typeof input['name'] === 'string' ? input['name'] : undefined;
      if (name === undefined) continue;
      announced.add(name);
      try {
        const body = parseToolBody(input);
        const tool = resolveTool(body, (id) => catalog.lookupService(id));
        if (tool.serviceId !== serviceId)
          throw new Error(`tool "${name}" names service "${String(tool.serviceId)}", not the announced "${serviceId}"`);
        const record = catalog.getTool(name)?.record;
        if (record && record.owner === owner && isDeepStrictEqual(record.descriptor, tool.descriptor)) continue;
        await registry.putTool(body, { pathName: name, actor });
        wrote++;
      } catch (err) {
        log.warn({ serviceId, tool: name, reason: (err as Error).message }, 'announced tool refused');
      }
    }
    for (const name of catalog.toolsUsingService(serviceId)) {
      if (announced.has(name) || catalog.getTool(name)?.record.owner !== owner) continue;
      try {
        await registry.deleteTool(name, { actor });
        wrote++;
      } catch (err) {
        // In replicated mode every replica hears the announcement and deletes the tool: the
        // replica whose delete comes second on the topic finds it gone, which is what it wanted.
        if (!(err instanceof RegistryError && err.code === 'TR_ERR_NOT_FOUND')) throw err;
      }
    }
    return wrote;
  }

  #refuse(refused: Omit<Refused, 'ok'>): AnnouncementOutcome {
    const { serviceId, subject, reason, status } = refused;
    this.#options.log.warn({ serviceId, subject, topic: this.#options.topic }, `announcement refused: ${reason}`);
    this.#audit(serviceId, status, reason, subject);
    return { serviceId, refused: reason, wrote: 0 };
  }

  /**
   * A refused announcement in the audit log: action `announcement`, the service as target, the
   * announcer as subject once its signature was good, and the code or the reason as detail.
   */
  #audit(serviceId: string | undefined, status: number, detail: string | null, subject: string | undefined): void {
    this.#options.auditRefusal?.({
      at: new Date(this.#now()).toISOString(),
      sub: subject ?? null,
      iss: null,
      client: 'announcement',
      action: 'announcement',
      target: serviceId ?? null,
      outcome: status === 401 || status === 403 ? 'denied' : status >= 500 ? 'error' : 'invalid',
      status,
      detail,
      requestId: null,
    });
  }
}
