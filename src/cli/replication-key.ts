/**
 * `tool-registry replication-key <file>`: a new key for REPLICATION_SECRET_FILE, 32 random bytes
 * as base64 in a new file of mode 0600 (as the dev secret is written, src/auth/keys.ts). Never
 * overwrites a file: replacing the key of running replicas would stop each one at the next
 * credential sealed with the other key. The key itself is never printed.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseCommandArgs } from './args.js';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

export function runReplicationKey(args: readonly string[], io: CliIo): number {
  const { positionals } = parseCommandArgs('replication-key', args, {}, true);
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0) throw new UsageError('replication-key takes one argument: the file to write the key to');
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new UsageError(`${path} exists; it was not overwritten (remove it first to make a new key)`);
    throw err;
  }
  // The umask may have narrowed the mode further, never widened it; make it exact.
  chmodSync(path, 0o600);
  io.stdout(`wrote a new replication key to ${path} (mode 0600): give every replica a copy of it as REPLICATION_SECRET_FILE\n`);
  return 0;
}
