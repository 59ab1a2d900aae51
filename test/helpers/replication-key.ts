/**
 * Replication key files for tests (REPLICATION_SECRET_FILE, REPLICATION_ACCEPTED_SECRET_FILES):
 * replicated mode needs one, since every message on the topic is signed with it. One file per
 * name and test process (replicas given the same name share the key), 32 random bytes in
 * base64 of mode 0600, as `tool-registry replication-key` writes them; made again if a test's
 * clean-up removed it, and removed when the process exits.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

let dir: string | undefined;

/** The path of the key file called `name`, made on first use. */
export function replicationKeyFile(name = 'shared'): string {
  if (dir === undefined || !existsSync(dir)) {
    const made = mkdtempSync(join(tmpdir(), 'tool-registry-test-keys-'));
    dir = made;
    process.once('exit', () => rmSync(made, { recursive: true, force: true }));
  }
  const path = join(dir, `${name}.key`);
  if (!existsSync(path)) {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    chmodSync(path, 0o600);
  }
  return path;
}

/** The key in the file called `name`. */
export function replicationKey(name = 'shared'): KeyObject {
  return createSecretKey(Buffer.from(readFileSync(replicationKeyFile(name), 'utf8').trim(), 'base64'));
}
