/**
 * Outbound credentials sealed at rest (issue 30): AES-256-GCM under the credentials key
 * (CREDENTIALS_KEY_FILE, or a key the registry makes beside the database, mode 0600), with the
 * owner (`openapi-source:<id>`) as additional authenticated data, so a sealed value copied to
 * another source's row does not open. The stored text is `v1.<kid>.<base64(iv||ciphertext||tag)>`;
 * `kid` names the key without revealing it, so a database opened with another key says so
 * instead of failing as if altered.
 */
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { RegistryError } from '../model/errors.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export class CredentialBox {
  readonly #key: KeyObject;
  readonly #kid: string;

  constructor(key: KeyObject) {
    this.#key = key;
    this.#kid = createHmac('sha256', key).update('tool-registry credentials key id').digest().subarray(0, 8).toString('hex');
  }

  /** A box with a key of its own, for a database that lives in memory (and dies with the process). */
  static ephemeral(): CredentialBox {
    return new CredentialBox(createSecretKey(randomBytes(32)));
  }

  /**
   * The key in `path`, made there (32 random bytes, base64, mode 0600) when there is none: the
   * default lives beside the database, so the two are backed up together unless an operator
   * names a key file elsewhere (CREDENTIALS_KEY_FILE), which then must exist.
   */
  static atPath(path: string, create: boolean): CredentialBox {
    if (!existsSync(path)) {
      if (!create) throw new Error(`the credentials key file ${path} does not exist`);
      writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    }
    const mode = statSync(path).mode & 0o777;
    if (process.platform !== 'win32' && (mode & 0o077) !== 0)
      throw new Error(`the credentials key file ${path} is open to other users (mode ${mode.toString(8)}); run chmod 600 on it`);
    const text = readFileSync(path, 'utf8').trim();
    const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
    if (bytes.length !== 32) throw new Error(`the credentials key file ${path} must hold 32 bytes as base64 or hex`);
    return new CredentialBox(createSecretKey(bytes));
  }

  seal(owner: string, value: unknown): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(`tool-registry outbound credential v1\n${owner}`));
    const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `v1.${this.#kid}.${Buffer.concat([iv, data]).toString('base64')}`;
  }

  /** The sealed value; a RegistryError (a failed call, never its secret) when it does not open here. */
  open(owner: string, sealed: string): unknown {
    const [version, kid, body] = sealed.split('.');
    if (version !== 'v1' || kid === undefined || body === undefined) throw failure('its stored form is not one this registry reads');
    if (kid !== this.#kid) throw failure('it was sealed under another credentials key than this registry holds (CREDENTIALS_KEY_FILE)');
    const bytes = Buffer.from(body, 'base64');
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, bytes.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(Buffer.from(`tool-registry outbound credential v1\n${owner}`));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const text = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      return JSON.parse(text) as unknown;
    } catch {
      throw failure('it does not open: it was altered, or sealed for another owner');
    }
  }
}

function failure(why: string): RegistryError {
  return new RegistryError('TR_ERR_UPSTREAM_CREDENTIAL', `the stored credential cannot be used: ${why}`);
}
