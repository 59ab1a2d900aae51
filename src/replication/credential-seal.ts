/**
 * MCP servers' credentials on the replication topic (REPLICATION_SECRET_FILE): the replica that
 * takes the write encrypts the bearer with AES-256-GCM under the key every replica shares, and
 * the message carries only `{ "sealed": base64(iv || ciphertext || tag), "kid": ... }` in place
 * of `{ "bearer": ... }`. The IV is 12 random bytes; the additional authenticated data binds the
 * sealed bearer to its write id and its server, so that it cannot be moved to another message
 * or server without failing.
 *
 * `kid` names the key (an HMAC of a fixed label under it, never the key): a replica whose key has
 * another kid holds the wrong key and must stop rather than apply the server without its
 * credential; a message whose kid matches but does not open was altered, and every replica with
 * the right key refuses it the same way.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes, type KeyObject } from 'node:crypto';
import type { SealedCredential } from '../model/replication.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What the sealed bearer is bound to. */
export interface SealContext {
  write: string;
  /** The MCP server's id. */
  target: string;
}

/** A sealed credential that another key sealed: this replica's key is not the others'. */
export class WrongKeyError extends Error {
  override readonly name = 'WrongKeyError';
}

/** A sealed credential that does not open with the right key: it was altered. */
export class BrokenSealError extends Error {
  override readonly name = 'BrokenSealError';
}

/** The key's id, safe to show: it does not reveal the key. */
export function keyIdOf(key: KeyObject): string {
  return createHmac('sha256', key).update('tool-registry replication key id').digest().subarray(0, 8).toString('hex');
}

function aad({ write, target }: SealContext): Buffer {
  return Buffer.from(JSON.stringify(['tool-registry mcp-server credential v1', write, target]));
}

export function sealCredential(key: KeyObject, bearer: string, context: SealContext): SealedCredential {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad(context));
  const data = Buffer.concat([cipher.update(bearer, 'utf8'), cipher.final()]);
  return { sealed: Buffer.concat([iv, data, cipher.getAuthTag()]).toString('base64'), kid: keyIdOf(key) };
}

/** The bearer; throws WrongKeyError (another key sealed it) or BrokenSealError (altered). */
export function openCredential(key: KeyObject, credential: SealedCredential, context: SealContext): string {
  if (credential.kid !== keyIdOf(key)) throw new WrongKeyError('the credential was sealed with another key than this replica holds');
  const bytes = Buffer.from(credential.sealed, 'base64');
  if (bytes.length < IV_BYTES + TAG_BYTES) throw new BrokenSealError('the sealed credential is too short');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAAD(aad(context));
  decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new BrokenSealError('the sealed credential does not open: it was altered, or sealed for another write or server');
  }
}
