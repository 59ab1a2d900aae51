/**
 * What authenticates a replication message (src/replication/message-auth.ts, issue 29): the MAC
 * over the topic, key id and payload bytes under a key derived with HKDF from the shared key;
 * every way a message can fail it; rotation across keys; and the stamp bound against the
 * broker's publish time.
 */
import { createHmac, createSecretKey, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_STAMP_AHEAD_MS } from '../../src/model/replication.js';
import { keyIdOf, openCredential, sealCredential } from '../../src/replication/credential-seal.js';
import { KEY_ID_PROPERTY, MAC_PROPERTY, macKeyOf, messageMac, ReplicationKeys, stampRefusal } from '../../src/replication/message-auth.js';

const TOPIC = 'persistent://tg/registry/descriptors';
const PAYLOAD = Buffer.from(
  JSON.stringify({
    v: 1,
    op: 'tool.put',
    write: 'w-1',
    origin: 'a',
    at: '2026-11-30T10:00:00.000Z',
    target: 'calc',
    body: { name: 'calc' },
  }),
);
const newKey = () => createSecretKey(randomBytes(32));
const asMap = (properties: Record<string, string>) => new Map(Object.entries(properties));

describe('the MAC of a replication message', () => {
  it('is HMAC-SHA256 under an HKDF-derived key over the length-prefixed label, topic, key id and payload, named by the key id', () => {
    const key = newKey();
    const properties = new ReplicationKeys(key).sign(TOPIC, PAYLOAD);
    expect(Object.keys(properties).sort()).toEqual([KEY_ID_PROPERTY, MAC_PROPERTY].sort());
    expect(properties[KEY_ID_PROPERTY]).toBe(keyIdOf(key));
    // The encoding spelled out, as another writer would implement it.
    const macKey = Buffer.from(hkdfSync('sha256', key.export(), Buffer.alloc(0), 'tool-registry replication message mac v1', 32));
    const hmac = createHmac('sha256', macKey);
    for (const field of [Buffer.from('tool-registry replication message mac v1'), Buffer.from(TOPIC), Buffer.from(keyIdOf(key)), PAYLOAD]) {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(field.length);
      hmac.update(length).update(field);
    }
    expect(properties[MAC_PROPERTY]).toBe(hmac.digest('base64'));
    expect(new ReplicationKeys(key).verify(TOPIC, PAYLOAD, asMap(properties))).toBeUndefined();
  });

  it('is made with a key other than the one credentials are sealed with', () => {
    const key = newKey();
    expect(macKeyOf(key).export().equals(key.export())).toBe(false);
    // A MAC made with the shared key itself (not the derived one) is refused.
    const kid = keyIdOf(key);
    const underSealingKey = messageMac(key, TOPIC, kid, PAYLOAD).toString('base64');
    expect(
      new ReplicationKeys(key).verify(TOPIC, PAYLOAD, asMap({ [KEY_ID_PROPERTY]: kid, [MAC_PROPERTY]: underSealingKey })),
    ).toMatchObject({ reason: 'bad-mac' });
    // And sealing is unchanged by it: what the signing key seals, it opens.
    const keys = new ReplicationKeys(key);
    const sealed = sealCredential(keys.sealingKey, 'bearer', { write: 'w', target: 's' });
    expect(openCredential(keys.keyFor(sealed.kid)!, sealed, { write: 'w', target: 's' })).toBe('bearer');
  });

  it('is refused for any change of the payload, another topic, a swapped key id, or a mangled MAC', () => {
    const key = newKey();
    const other = newKey();
    const keys = new ReplicationKeys(key, [other]);
    const properties = keys.sign(TOPIC, PAYLOAD);
    for (let i = 0; i < PAYLOAD.length; i += 7) {
      const altered = Buffer.from(PAYLOAD);
      altered[i] = (altered[i] ?? 0) ^ 1;
      expect(keys.verify(TOPIC, altered, asMap(properties))?.reason, `byte ${i}`).toBe('bad-mac');
    }
    expect(keys.verify(TOPIC, Buffer.concat([PAYLOAD, Buffer.from(' ')]), asMap(properties))?.reason).toBe('bad-mac');
    expect(keys.verify(`${TOPIC}-staging`, PAYLOAD, asMap(properties))?.reason).toBe('bad-mac');
    // The other held key's id on this key's MAC.
    expect(keys.verify(TOPIC, PAYLOAD, asMap({ ...properties, [KEY_ID_PROPERTY]: keyIdOf(other) }))?.reason).toBe('bad-mac');
    const mac = properties[MAC_PROPERTY] ?? '';
    for (const mangled of [mac.slice(0, 20), '', 'not base64 at all!', Buffer.alloc(32).toString('base64'), `${mac}AAAA`]) {
      expect(keys.verify(TOPIC, PAYLOAD, asMap({ ...properties, [MAC_PROPERTY]: mangled }))?.reason, mangled).toBe('bad-mac');
    }
    expect(keys.verify(TOPIC, PAYLOAD, asMap({ [MAC_PROPERTY]: mac }))).toMatchObject({
      reason: 'bad-mac',
      detail: expect.stringMatching(/without a key id/),
    });
    expect(keys.verify(TOPIC, PAYLOAD, asMap({ [KEY_ID_PROPERTY]: keyIdOf(key) }))).toMatchObject({
      reason: 'bad-mac',
      detail: expect.stringMatching(/without a MAC/),
    });
  });

  it('tells a message without a MAC and one under a key not held apart, naming no more than it must', () => {
    const keys = new ReplicationKeys(newKey());
    expect(keys.verify(TOPIC, PAYLOAD, new Map())).toMatchObject({ reason: 'unsigned' });
    // Other properties are no MAC.
    expect(keys.verify(TOPIC, PAYLOAD, asMap({ id: 'x' }))).toMatchObject({ reason: 'unsigned' });
    const forged = new ReplicationKeys(newKey()).sign(TOPIC, PAYLOAD);
    const refusal = keys.verify(TOPIC, PAYLOAD, asMap(forged));
    expect(refusal).toMatchObject({ reason: 'unknown-key' });
    expect(refusal?.detail).toContain(forged[KEY_ID_PROPERTY]);
    expect(refusal?.detail).toContain(keys.kid);
    const long = keys.verify(TOPIC, PAYLOAD, asMap({ ...forged, [KEY_ID_PROPERTY]: 'k'.repeat(10_000) }));
    expect(long?.detail.length).toBeLessThan(200);
  });

  it('rotates: add the new key beside the old, sign with it, then retire the old', () => {
    const old = newKey();
    const next = newKey();
    const before = new ReplicationKeys(old);
    const beside = new ReplicationKeys(old, [next]);
    const switched = new ReplicationKeys(next, [old]);
    const retired = new ReplicationKeys(next);
    const byOld = asMap(before.sign(TOPIC, PAYLOAD));
    const byNext = asMap(switched.sign(TOPIC, PAYLOAD));
    // Step 1, the new key beside the old everywhere: the old one still signs.
    expect(beside.kid).toBe(keyIdOf(old));
    expect(beside.kids).toEqual([keyIdOf(old), keyIdOf(next)]);
    expect(beside.verify(TOPIC, PAYLOAD, byOld)).toBeUndefined();
    // Step 2, replicas switch to signing with the new key one by one: each accepts both.
    for (const keys of [beside, switched]) {
      expect(keys.verify(TOPIC, PAYLOAD, byOld)).toBeUndefined();
      expect(keys.verify(TOPIC, PAYLOAD, byNext)).toBeUndefined();
    }
    // A replica that skipped step 1 refuses the new key's messages: why the order matters.
    expect(before.verify(TOPIC, PAYLOAD, byNext)?.reason).toBe('unknown-key');
    // Step 3, the old key retired: its messages are refused from then on.
    expect(retired.verify(TOPIC, PAYLOAD, byNext)).toBeUndefined();
    expect(retired.verify(TOPIC, PAYLOAD, byOld)?.reason).toBe('unknown-key');
    // Credentials sealed under either open while both are held; the signing key seals.
    expect(switched.keyFor(keyIdOf(old))?.export()).toEqual(old.export());
    expect(sealCredential(switched.sealingKey, 'b', { write: 'w', target: 't' }).kid).toBe(keyIdOf(next));
    // The same key twice is held once.
    expect(new ReplicationKeys(old, [old, next, next]).kids).toEqual([keyIdOf(old), keyIdOf(next)]);
  });
});

describe('the stamp bound', () => {
  const published = '2026-11-30T10:00:00.000Z';
  const plus = (ms: number) => new Date(Date.parse(published) + ms).toISOString();

  it(`takes a stamp up to ${MAX_STAMP_AHEAD_MS / 60_000} minutes ahead of the publish time, and any behind it`, () => {
    expect(MAX_STAMP_AHEAD_MS).toBe(5 * 60 * 1000);
    for (const at of [published, plus(MAX_STAMP_AHEAD_MS), plus(-1000), plus(-365 * 86_400_000)])
      expect(stampRefusal(at, published), at).toBeUndefined();
  });

  it('refuses a stamp further ahead, saying by how much and what to fix', () => {
    expect(stampRefusal(plus(MAX_STAMP_AHEAD_MS + 1), published)).toMatchObject({ reason: 'stamp-ahead' });
    const aYear = stampRefusal(plus(365 * 86_400_000), published);
    expect(aYear).toMatchObject({
      reason: 'stamp-ahead',
      detail: expect.stringMatching(/31536000 s ahead of when the broker took it \(2026-11-30T10:00:00\.000Z\); at most 300 s .*clock/),
    });
  });

  it("reads the broker's publish time with an offset, and refuses a message without one", () => {
    // Pulsar formats it in its own time zone (ISO_OFFSET_DATE_TIME).
    expect(stampRefusal(plus(6 * 60_000), '2026-11-30T11:00:00+01:00')).toMatchObject({ reason: 'stamp-ahead' });
    expect(stampRefusal(plus(60_000), '2026-11-30T11:00:00+01:00')).toBeUndefined();
    for (const time of [undefined, '', 'yesterday']) expect(stampRefusal(published, time)?.reason, String(time)).toBe('no-publish-time');
  });
});
