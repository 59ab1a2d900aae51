/**
 * Which messages of the replication topic a replica applies (issue 29): only those a replica
 * holding the shared key wrote, and whose stamp cannot move every replica's time.
 *
 * **The MAC.** Every message carries two properties beside its payload: `registry-kid`, the id
 * of the key it was signed with (keyIdOf in src/replication/credential-seal.ts: an HMAC of a
 * fixed label, never the key), and `registry-mac`, base64 of HMAC-SHA256 under a MAC key
 * derived from that shared key with HKDF-SHA256 under its own label, so the MAC key is never
 * the key that seals credentials. The MAC covers, each prefixed with its length in 4 bytes:
 * the label, the topic, the key id and the payload's bytes exactly as published. The payload
 * holds everything a write is (its op, write id, origin replica, stamp, target, body, part
 * number): MACing its bytes rather than a re-encoding of the parsed fields leaves no room for
 * two encodings of one message, and a forged message is refused before it is even parsed.
 * The topic is in it so a message copied from another topic (a staging cluster with the same
 * key) is refused.
 *
 * **Rotation.** A replica signs with one key (REPLICATION_SECRET_FILE) and accepts any key it
 * holds (that one and REPLICATION_ACCEPTED_SECRET_FILES): add the new key beside the old on
 * every replica, then make it the signing key, then retire the old one.
 *
 * **Stamps.** A write's stamp is its writer's clock, and stamps never go back (records are
 * stamped in index order), so a message stamped far ahead would stamp every later write on
 * every replica with that time. A message stamped more than MAX_STAMP_AHEAD_MS ahead of its
 * publish time (the broker's clock, as the WebSocket service took the message: the same for
 * every reader, however late it reads) is refused, not clamped: a clamped stamp would be each
 * replica's own choice, and refusing keeps every replica's records identical.
 */
import { createHmac, createSecretKey, hkdfSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import { MAX_STAMP_AHEAD_MS, type RefusalReason } from '../model/replication.js';
import { keyIdOf } from './credential-seal.js';

/** The message property that names the key a message was signed with. */
export const KEY_ID_PROPERTY = 'registry-kid';
/** The message property that carries the MAC. */
export const MAC_PROPERTY = 'registry-mac';

const MAC_LABEL = 'tool-registry replication message mac v1';
const MAC_BYTES = 32;

/** Why a message is not applied, in words for the log, /readyz and the audit entry. */
export interface Refusal {
  reason: RefusalReason;
  detail: string;
}

interface HeldKey {
  kid: string;
  /** The shared key itself: what credentials are sealed with. */
  secret: KeyObject;
  /** Derived from it (HKDF): what messages are MACed with. */
  mac: KeyObject;
}

/** The MAC key of a shared key: HKDF-SHA256 with no salt and the label as info. */
export function macKeyOf(secret: KeyObject): KeyObject {
  return createSecretKey(Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), MAC_LABEL, MAC_BYTES)));
}

/** HMAC-SHA256 over the length-prefixed label, topic, key id and payload bytes. */
export function messageMac(macKey: KeyObject, topic: string, kid: string, payload: Buffer): Buffer {
  const hmac = createHmac('sha256', macKey);
  for (const field of [Buffer.from(MAC_LABEL), Buffer.from(topic), Buffer.from(kid), payload]) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(field.length);
    hmac.update(length).update(field);
  }
  return hmac.digest();
}

/** The keys a replica holds: one it signs and seals with, and every one it accepts. */
export class ReplicationKeys {
  readonly #signing: HeldKey;
  readonly #held = new Map<string, HeldKey>();

  /** `accepted`: further keys whose messages and credentials are accepted (rotation); the signing key is always one. */
  constructor(signing: KeyObject, accepted: readonly KeyObject[] = []) {
    this.#signing = held(signing);
    this.#held.set(this.#signing.kid, this.#signing);
    for (const key of accepted) {
      const k = held(key);
      if (!this.#held.has(k.kid)) this.#held.set(k.kid, k);
    }
  }

  /** The signing key's id. */
  get kid(): string {
    return this.#signing.kid;
  }

  /** Every key id held, the signing one first. */
  get kids(): string[] {
    return [...this.#held.keys()];
  }

  /** The key credentials are sealed with. */
  get sealingKey(): KeyObject {
    return this.#signing.secret;
  }

  /** The held key with this id, to open a credential sealed with it. */
  keyFor(kid: string): KeyObject | undefined {
    return this.#held.get(kid)?.secret;
  }

  /** The properties that authenticate `payload` on `topic`. */
  sign(topic: string, payload: Buffer): Record<string, string> {
    const { kid, mac } = this.#signing;
    return { [KEY_ID_PROPERTY]: kid, [MAC_PROPERTY]: messageMac(mac, topic, kid, payload).toString('base64') };
  }

  /**
   * Undefined when `payload` on `topic` carries a MAC under a held key; else why not. A message
   * with neither property is `unsigned` (REPLICATION_ACCEPT_UNSIGNED decides on it elsewhere).
   */
  verify(topic: string, payload: Buffer, properties: ReadonlyMap<string, string>): Refusal | undefined {
    const kid = properties.get(KEY_ID_PROPERTY);
    const mac = properties.get(MAC_PROPERTY);
    if (kid === undefined && mac === undefined) return { reason: 'unsigned', detail: 'the message carries no MAC' };
    if (kid === undefined || mac === undefined)
      return {
        reason: 'bad-mac',
        detail: `the message carries ${kid === undefined ? 'a MAC without a key id' : 'a key id without a MAC'}`,
      };
    const key = this.#held.get(kid);
    if (key === undefined) {
      // Bounded: the id is the sender's text.
      const shown = JSON.stringify(kid.length > 40 ? `${kid.slice(0, 40)}...` : kid);
      return {
        reason: 'unknown-key',
        detail: `the message is signed with key id ${shown}, and this replica holds ${this.kids.join(', ')}`,
      };
    }
    // Compared as text: Node's base64 decoder ignores what follows the padding, so comparing
    // decoded bytes would take more than one spelling of the same MAC.
    const given = Buffer.from(mac);
    const expected = Buffer.from(messageMac(key.mac, topic, kid, payload).toString('base64'));
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      return { reason: 'bad-mac', detail: `the message's MAC does not match its content under key ${kid}` };
    return undefined;
  }
}

function held(secret: KeyObject): HeldKey {
  return { kid: keyIdOf(secret), secret, mac: macKeyOf(secret) };
}

/**
 * Undefined when a write stamped `at` may be applied, given the broker's publish time (as the
 * WebSocket API gives it, ISO 8601); else why not. A stamp behind the publish time is fine:
 * the write is stamped with the last stamp given out, which never goes back.
 */
export function stampRefusal(at: string, publishTime: string | undefined): Refusal | undefined {
  const published = publishTime === undefined ? Number.NaN : Date.parse(publishTime);
  if (Number.isNaN(published)) return { reason: 'no-publish-time', detail: 'the broker gave no publish time to check the stamp against' };
  const ahead = Date.parse(at) - published;
  if (ahead <= MAX_STAMP_AHEAD_MS) return undefined;
  return {
    reason: 'stamp-ahead',
    detail: `the message is stamped ${at}, ${Math.round(ahead / 1000)} s ahead of when the broker took it (${new Date(published).toISOString()}); at most ${MAX_STAMP_AHEAD_MS / 1000} s is accepted: fix the clock of the replica that wrote it`,
  };
}
