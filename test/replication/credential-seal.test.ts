/**
 * MCP servers' credentials on the replication topic (src/replication/credential-seal.ts):
 * AES-256-GCM under the shared key, bound to the write and the server; another key is told
 * apart from an altered message.
 */
import { createSecretKey, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SealedCredentialSchema } from '../../src/model/replication.js';
import { BrokenSealError, keyIdOf, openCredential, sealCredential, WrongKeyError } from '../../src/replication/credential-seal.js';

const key = createSecretKey(randomBytes(32));
const other = createSecretKey(randomBytes(32));
const context = { write: 'w-1', target: 'github' };
const BEARER = 'ghp_secret-token-0123456789';

describe('sealed credentials', () => {
  it('opens what it sealed, and carries neither the bearer nor the key', () => {
    const sealed = sealCredential(key, BEARER, context);
    expect(SealedCredentialSchema.parse(sealed)).toEqual(sealed);
    expect(openCredential(key, sealed, context)).toBe(BEARER);
    const text = JSON.stringify(sealed);
    expect(text).not.toContain(BEARER);
    expect(text).not.toContain(key.export().toString('base64'));
    expect(text).not.toContain(key.export().toString('hex'));
    // A random IV each time.
    expect(sealCredential(key, BEARER, context).sealed).not.toBe(sealed.sealed);
    expect(keyIdOf(key)).toBe(sealed.kid);
    expect(keyIdOf(other)).not.toBe(sealed.kid);
  });

  it('tells another key (this replica is wrong) from an altered message (refused everywhere)', () => {
    const sealed = sealCredential(key, BEARER, context);
    expect(() => openCredential(other, sealed, context)).toThrow(WrongKeyError);
    const bytes = Buffer.from(sealed.sealed, 'base64');
    for (const at of [0, 12, bytes.length - 1]) {
      const tampered = Buffer.from(bytes);
      tampered[at] = (tampered[at] ?? 0) ^ 1;
      expect(() => openCredential(key, { ...sealed, sealed: tampered.toString('base64') }, context), `byte ${at} flipped`).toThrow(
        BrokenSealError,
      );
    }
    expect(() => openCredential(key, { ...sealed, sealed: bytes.subarray(0, 20).toString('base64') }, context)).toThrow(BrokenSealError);
    // Moved to another write or server: it does not open.
    expect(() => openCredential(key, sealed, { ...context, write: 'w-2' })).toThrow(BrokenSealError);
    expect(() => openCredential(key, sealed, { ...context, target: 'gitlab' })).toThrow(BrokenSealError);
  });
});
