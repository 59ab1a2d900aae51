import fp from 'fastify-plugin';
import { Catalog } from '../../catalog/catalog.js';
import { CatalogListing } from '../../catalog/listing.js';
import { ServiceHealth } from '../../catalog/service-health.js';
import { ViewWaiters } from '../../catalog/waiters.js';
import { ChangeBus } from '../../registry/change-bus.js';
import { ChangeFeed } from '../../registry/change-feed.js';
import { RegistryService } from '../../registry/registry-service.js';
import type { RegistryWrites } from '../../registry/writes.js';
import { adminUrlOf } from '../../replication/admin.js';
import { KEY_ID_PROPERTY, MAC_PROPERTY } from '../../replication/message-auth.js';
import { ReplicaDatabaseError, Replicator } from '../../replication/replicator.js';
import { readBrokerLimits, type BrokerLimits } from '../../pulsar/broker-limits.js';
import { effectiveLimits, payloadLimit } from '../../pulsar/limits.js';
import type { Config } from '../../config.js';
import { ConfigError } from '../../config/errors.js';
import { openDatabase } from '../../store/database.js';
import { migrate } from '../../store/migrations.js';
import { AuditStore } from '../../store/audit-store.js';
import { RegistryStore } from '../../store/registry-store.js';
import { CredentialBox } from '../../store/credential-box.js';
import { UsageStore } from '../../store/usage-store.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The SQLite repository (writes and health probes only; reads use the catalogue). */
    store: RegistryStore;
    /** The in-memory catalogue every read is served from. */
    catalog: Catalog;
    /** The write path: validate, store, swap into the catalogue, publish after the commit (through the replication topic in replicated mode). */
    registry: RegistryWrites;
    /** Replicated mode's state, or null for one process. */
    replication: Replicator | null;
    /** Every committed write, for whoever follows the registry (waiters, feeds, sessions). */
    changes: ChangeBus;
    /** The change feed in one caller's view, replayed and then live. */
    changeFeed: ChangeFeed;
    /** The audit log. */
    auditStore: AuditStore;
    /** Tool-call records. */
    usageStore: UsageStore;
    /** Blocking discovery queries and the change-stream budget. */
    waiters: ViewWaiters;
    /** Paged, searched and filtered discovery. */
    listing: CatalogListing;
    /** Which announced tool services are alive (without announcements, every service is). */
    serviceHealth: ServiceHealth;
  }
}

export interface RegistryPluginOptions {
  config: Config;
}

/** How long a write waits on another process's lock once the registry serves (5 s at startup, for migrations). */
const SERVING_BUSY_TIMEOUT_MS = 200;

/**
 * The key that seals outbound credentials at rest: CREDENTIALS_KEY_FILE, which must exist, or
 * one made beside the database file on first start; a database in memory gets a key of its own.
 */
function credentialBoxOf(config: Config): CredentialBox {
  const file = config.credentialsKeyFile;
  if (file === undefined && config.databasePath === ':memory:') return CredentialBox.ephemeral();
  try {
    return CredentialBox.atPath(file ?? `${config.databasePath}.credentials-key`, file === undefined);
  } catch (err) {
    throw new ConfigError(`CREDENTIALS_KEY_FILE: ${(err as Error).message}`);
  }
}

/** Opens and migrates the database, loads the catalogue once, and closes the database on close. */
export default fp<RegistryPluginOptions>(
  async (app, { config }) => {
    const db = openDatabase(config.databasePath);
    let store: RegistryStore;
    let auditStore: AuditStore;
    try {
      const { applied, version } = migrate(db);
      if (applied.length > 0) app.log.info({ applied, version }, 'database migrated');
      auditStore = new AuditStore(db);
      store = new RegistryStore(db, auditStore, { minRoomBytes: config.readyMinFreeBytes, credentials: credentialBoxOf(config) });
    } catch (err) {
      db.close();
      throw err;
    }
    const catalog = new Catalog({ publicUrl: config.publicUrl, serviceName: 'tool-registry', viewCacheBytes: config.viewCacheBytes });
    catalog.load(store.loadSnapshot());
    // Serving, a write waiting on another process's lock (say `tool-registry migrate` run against
    // the live file) holds the event loop, and every read with it: give up soon and answer 503 with
    // Retry-After. The registry's own writers never wait on each other (one connection, and the
    // import worker's is held apart by the write gate).
    db.pragma(`busy_timeout = ${SERVING_BUSY_TIMEOUT_MS}`);
    app.log.info({ tools: catalog.tools().length, toolServices: catalog.services().length, index: catalog.index }, 'catalogue loaded');
    app.decorate('store', store);
    app.decorate('auditStore', auditStore);
    app.decorate('usageStore', new UsageStore(db));
    app.decorate('catalog', catalog);
    const changes = new ChangeBus((err) => app.log.error({ err }, 'a change listener failed'));
    app.decorate('changes', changes);
    // Replicas decide writes alike, and each listens at its own address: the self rule of the
    // outbound address policy holds at call time there, not at registration.
    const outboundCheck = config.replication ? app.outbound.policy.checkRules : app.outbound.policy.check;
    const service = new RegistryService(store, catalog, changes, { outbound: outboundCheck });
    const replication = config.replication && (await startReplication(service, store, catalog, config, app.log));
    app.decorate('registry', (replication ?? service) as RegistryWrites);
    app.decorate('replication', (replication ?? null) as Replicator | null);
    if (replication) await replication.start();
    app.decorate('changeFeed', new ChangeFeed(store, changes, () => catalog.index, catalog.scheduler));
    const waiters = new ViewWaiters(catalog, (listener) => changes.subscribe(listener), {
      maxWaiters: config.maxWaiters,
      maxPerCaller: config.maxWaitersPerCaller,
    });
    app.decorate('waiters', waiters);
    // Which announced tool services are alive (src/announce/ feeds it; without announcements every service is).
    const health = new ServiceHealth();
    app.decorate('serviceHealth', health);
    // Heartbeats count for announced services only: one an operator takes over, or a deleted one, is forgotten.
    changes.subscribe((_index, written) => {
      for (const change of written) {
        if (change.kind !== 'tool-service') continue;
        const record = catalog.getService(change.name);
        if (!record || record.status === 'deleted' || !record.owner) health.forget(change.name);
      }
    });
    // Page bodies share the view cache's budget: a quarter of VIEW_CACHE_BYTES.
    app.decorate('listing', new CatalogListing(catalog, config.publicUrl, health, Math.floor(config.viewCacheBytes / 4)));
    // Before the server stops accepting: answer held requests so that close does not wait on them.
    app.addHook('preClose', async () => waiters.releaseAll());
    app.addHook('onClose', async () => {
      health.close();
      replication?.close();
      waiters.close();
      catalog.close();
      store.close();
    });
  },
  { name: 'registry', dependencies: ['outbound'] },
);

/** A message's MAC properties as long as they get (src/replication/message-auth.ts), to size the payload beside them. */
const MAC_PROPERTIES_SIZED = { [KEY_ID_PROPERTY]: '0'.repeat(16), [MAC_PROPERTY]: '0'.repeat(44) };

/** Replicated mode: the write path goes through the topic (src/replication/). */
async function startReplication(
  service: RegistryService,
  store: RegistryStore,
  catalog: Catalog,
  config: Config,
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void; error(obj: object, msg: string): void },
): Promise<Replicator | undefined> {
  const replication = config.replication;
  if (!replication) return undefined;
  // A write is one message: base64 JSON in one text frame of PULSAR_WS_MAX_FRAME_BYTES, under the
  // broker's maxMessageSize (read from its admin API when it can be; a refusal for size is a 413 anyway).
  let broker: BrokerLimits | undefined;
  try {
    broker = await readBrokerLimits(replication.url, config.bridge.pulsarToken, config.bridge.connectTimeoutMs);
  } catch (err) {
    log.warn(
      { reason: (err as Error).message },
      "replication: the broker's message limits could not be read; PULSAR_WS_MAX_FRAME_BYTES alone bounds a write",
    );
  }
  const limits = effectiveLimits(config.bridge.maxFrameBytes, broker);
  try {
    return new Replicator(service, store, {
      url: replication.url,
      token: config.bridge.pulsarToken,
      topic: replication.topic,
      replicaId: replication.replicaId,
      adminUrl: replication.adminUrl ?? adminUrlOf(replication.url),
      connectTimeoutMs: config.bridge.connectTimeoutMs,
      applyTimeoutMs: replication.applyTimeoutMs,
      // Less room for the message key (a tool's name) beside the payload; the properties carry the MAC.
      maxMessageBytes: payloadLimit(limits, MAC_PROPERTIES_SIZED, '0000000000').bytes - 1536,
      secretKey: replication.secretKey,
      acceptedKeys: replication.acceptedKeys,
      acceptUnsignedThrough: replication.acceptUnsignedThrough,
      scheduler: catalog.scheduler,
      log,
    });
  } catch (err) {
    // A database that cannot be this replica's is a setting's mistake (exit 2), like any other DATABASE_PATH problem.
    throw err instanceof ReplicaDatabaseError ? new ConfigError(err.message) : err;
  }
}
