/**
 * Replicators (src/replication/replicator.ts) following an in-process topic (fake-topic.ts), for
 * test/replication/: each on its own database (support.ts), with its log lines kept, signing
 * with KEY unless told otherwise.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { ReplicationKeys } from '../../src/replication/message-auth.js';
import { Replicator } from '../../src/replication/replicator.js';
import { FakeTopic } from './fake-topic.js';
import { openReplica, removeReplicaDirs, TOPIC, type TestReplica } from './support.js';

/** The key the replicas here share unless a test gives another. */
export const KEY = createSecretKey(randomBytes(32));

export interface Running extends TestReplica {
  replicator: Replicator;
  logs: string[];
}

export interface StartOptions {
  maxMessageBytes?: number;
  secretKey?: KeyObject;
  acceptedKeys?: KeyObject[];
  acceptUnsignedThrough?: number;
  /** false: do not wait until caught up (a replica that stops). */
  wait?: boolean;
  /** Reopen this replica's database (a restart). */
  dir?: string;
}

/** One topic and the replicas following it; `close()` after each test. */
export class Replicas {
  topic = new FakeTopic();
  readonly running: Running[] = [];

  async startTopic(): Promise<FakeTopic> {
    this.topic = new FakeTopic();
    await this.topic.start();
    return this.topic;
  }

  /** A replica following the topic; resolves once caught up unless `wait` is false. */
  async start(id: string, options: StartOptions = {}): Promise<Running> {
    const replica = openReplica(options.dir === undefined ? {} : { dir: options.dir });
    const logs: string[] = [];
    const line = (level: string) => (obj: object, msg: string) => void logs.push(`${level} ${JSON.stringify(obj)} ${msg}`);
    const replicator = new Replicator(replica.service, replica.store, {
      url: this.topic.url,
      topic: TOPIC,
      replicaId: id,
      connectTimeoutMs: 2000,
      applyTimeoutMs: 10_000,
      maxMessageBytes: options.maxMessageBytes ?? 64 * 1024,
      secretKey: options.secretKey ?? KEY,
      acceptedKeys: options.acceptedKeys,
      acceptUnsignedThrough: options.acceptUnsignedThrough,
      scheduler: replica.catalog.scheduler,
      log: { info: line('info'), warn: line('warn'), error: line('error') },
    });
    const r = { ...replica, replicator, logs };
    this.running.push(r);
    await replicator.start();
    if (options.wait !== false) await replicator.caughtUp();
    return r;
  }

  /** Stops one replica and closes its database (to restart it on the same `dir`). */
  stop(r: Running): void {
    const i = this.running.indexOf(r);
    if (i >= 0) this.running.splice(i, 1);
    r.replicator.close();
    r.store.close();
  }

  async close(): Promise<void> {
    for (const r of this.running.splice(0)) {
      r.replicator.close();
      r.store.close();
    }
    removeReplicaDirs();
    await this.topic.stop();
  }

  /** Appends `text` as a writer holding `key` would: signed (`key` null: unsigned, as a writer without one). */
  append(text: string, key: KeyObject | null = KEY, publishTime?: string): string {
    const properties = key === null ? {} : new ReplicationKeys(key).sign(TOPIC, Buffer.from(text));
    return this.topic.append(text, 'test', properties, publishTime);
  }
}

/** vi.waitUntil's options for a replica following the topic (its default, 50 ms for 1 s, is too short). */
export const POLLING = { timeout: 10_000, interval: 20 };
