/**
 * Self-announcing tool services (issue 14): listens on the announcement topic (ANNOUNCE_TOPIC)
 * and turns each announcement (src/model/announcement.ts) into registry writes under the
 * announcer's identity, and each heartbeat into liveness (src/catalog/service-health.ts).
 *
 * - The announcer's token is verified like a request's and must hold ANNOUNCE_SCOPE; its
 *   subject is the owner (`announcer:<sub>`) of what it announces. The write side refuses an
 *   announcement over anything an operator (or another announcer) registered.
 * - Writes happen only when the announcement differs from what the catalogue holds (compared
 *   here, so that heartbeats cost no write, and in replicated mode no message on the topic).
 *   Tools the service stops announcing are deleted. One sync per service at a time.
 * - Liveness is renewed only for a service this announcer owns, so an announcement can never make
 *   an operator's service go unavailable.
 * - Every process listens (a subscription of its own, non-durable): each replica hears the
 *   heartbeats itself. Tokens are never logged.
 */
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Catalog } from '../catalog/catalog.js';
import type { ServiceHealth } from '../catalog/service-health.js';
import { AnnouncementSchema, type Announcement } from '../model/announcement.js';
import type { Caller } from '../model/caller.js';
import { RegistryError } from '../model/errors.js';
import type { Actor, AuditEntryInput } from '../model/records.js';
import { parseToolServicePut } from '../model/descriptors.js';
import { resolveTool } from '../model/resolve.js';
import { parseToolBody } from '../json-schema/tool-schemas.js';
import { Consumer } from '../pulsar/consumer.js';
import { consumerUrl } from '../pulsar/wire.js';
import type { RegistryWrites } from '../registry/writes.js';

export interface AnnounceOptions {
  url: string;
  token?: string | undefined;
  topic: string;
  scope: string;
  connectTimeoutMs: number;
  registry: RegistryWrites;
  catalog: Catalog;
  health: ServiceHealth;
  verifyToken: (token: string) => Promise<Caller>;
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
  #connected: ((value: void) => void) | null = null;
  /** Resolves once subscribed the first time. */
  readonly ready: Promise<void>;

  constructor(options: AnnounceOptions) {
    this.#options = options;
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
    const { log, scope } = this.#options;
    let value: unknown;
    try {
      value = text === undefined ? undefined : JSON.parse(text);
    } catch {
      value = undefined;
    }
    const parsed = AnnouncementSchema.safeParse(value);
    if (!parsed.success) return this.#refuse(undefined, 'not an announcement (see src/model/announcement.ts)', 400);
    const announcement = parsed.data;
    const serviceId = typeof announcement.service['id'] === 'string' ? announcement.service['id'] : undefined;
    if (serviceId === undefined) return this.#refuse(undefined, 'the announced service has no id', 400);
    let caller: Caller;
    try {
      caller = await this.#options.verifyToken(announcement.token);
    } catch (err) {
      return this.#refuse(serviceId, `its token was refused (${(err as Error).message})`, 401);
    }
    if (caller.kind !== 'token' || caller.sub === undefined) return this.#refuse(serviceId, 'its token names no subject', 401);
    if (!caller.scopes.has(scope)) return this.#refuse(serviceId, `its token lacks scope ${scope}`, 403, caller);
    const owner = `announcer:${caller.sub}`;
    const actor: Actor = { sub: caller.sub, iss: caller.iss ?? null, client: 'announcement', requestId: null, announcer: owner };
    if (announcement.goodbye) {
      if (this.#owns(serviceId, owner)) this.#options.health.gone(serviceId);
      return { serviceId, wrote: 0 };
    }
    let wrote = 0;
    if (!this.#syncing.has(serviceId)) {
      this.#syncing.add(serviceId);
      try {
        wrote = await this.#sync(serviceId, announcement, actor, owner);
      } catch (err) {
        log.warn({ serviceId, reason: (err as Error).message }, 'announcement refused');
        this.#audit(serviceId, err instanceof RegistryError ? err.status : 500, err instanceof RegistryError ? err.code : null, caller);
        return { serviceId, refused: (err as Error).message, wrote };
      } finally {
        this.#syncing.delete(serviceId);
      }
    }
    if (this.#owns(serviceId, owner)) this.#options.health.beat(serviceId, announcement.heartbeatIntervalS);
    return { serviceId, wrote };
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
      await registry.deleteTool(name, { actor });
      wrote++;
    }
    return wrote;
  }

  #refuse(serviceId: string | undefined, reason: string, status: number, caller?: Caller): AnnouncementOutcome {
    this.#options.log.warn({ serviceId, topic: this.#options.topic }, `announcement refused: ${reason}`);
    this.#audit(serviceId, status, null, caller);
    return { serviceId, refused: reason, wrote: 0 };
  }

  /** A refused announcement in the audit log: action `announcement`, the service as target, the announcer as subject when its token was good. */
  #audit(serviceId: string | undefined, status: number, code: string | null, caller?: Caller): void {
    const token = caller?.kind === 'token' ? caller : undefined;
    this.#options.auditRefusal?.({
      at: new Date().toISOString(),
      sub: token?.sub ?? null,
      iss: token?.iss ?? null,
      client: 'announcement',
      action: 'announcement',
      target: serviceId ?? null,
      outcome: status === 401 || status === 403 ? 'denied' : status >= 500 ? 'error' : 'invalid',
      status,
      detail: code,
      requestId: null,
    });
  }
}
