/**
 * `tool-registry announcer-key <file> --subject NAME [--kid ID] [--queue Q]... [--scope S]...`
 * (issue 29): a new Ed25519 key pair for an announcer. The private JWK (with its kid) goes to a
 * new file of mode 0600, for the tool service to sign with; the binding for the registry's
 * ANNOUNCER_KEYS_FILE, holding the public JWK only, is printed. Never overwrites a file: the
 * services signing with the old key would be refused once the binding changes. The private key
 * is never printed.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AnnouncerBindingSchema } from '../model/announcer-bindings.js';
import { parseCommandArgs } from './args.js';
import type { CliIo } from './io.js';
import { UsageError } from './usage-error.js';

export function runAnnouncerKey(args: readonly string[], io: CliIo): number {
  const { positionals, options } = parseCommandArgs(
    'announcer-key',
    args,
    {
      subject: { type: 'string' },
      kid: { type: 'string' },
      queue: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
    },
    true,
  );
  const [file, ...extra] = positionals;
  if (file === undefined || extra.length > 0)
    throw new UsageError('announcer-key takes one argument: the file to write the private key to');
  const subject = options.get('subject')?.at(-1);
  if (subject === undefined) throw new UsageError('announcer-key needs --subject: the announcer its key is bound to');
  const kid = options.get('kid')?.at(-1) ?? `${subject}-${randomBytes(4).toString('hex')}`;
  const queues = [...(options.get('queue') ?? [])];
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const binding = { subject, keys: [{ ...publicKey.export({ format: 'jwk' }), kid }], queues, scopes: [...(options.get('scope') ?? [])] };
  // Checked before anything is written: a binding the registry would refuse helps nobody.
  const checked = AnnouncerBindingSchema.safeParse(queues.length === 0 ? { ...binding, queues: ['non-persistent://x/y/z'] } : binding);
  if (!checked.success) {
    const problems = checked.error.issues.map(
      (issue) => `${issue.path.map(String).join('.') === 'subject' ? '--subject' : issue.path.map(String).join('.')}: ${issue.message}`,
    );
    throw new UsageError(`announcer-key: ${problems.join('; ')}`);
  }
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    writeFileSync(path, `${JSON.stringify({ ...privateKey.export({ format: 'jwk' }), kid })}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new UsageError(`${path} exists; it was not overwritten (remove it first to make a new key)`);
    throw err;
  }
  // The umask may have narrowed the mode further, never widened it; make it exact.
  chmodSync(path, 0o600);
  io.stdout(
    `wrote the private key of announcer ${subject} (kid ${kid}) to ${path} (mode 0600): the tool service signs with it.\n` +
      `Add this binding to ANNOUNCER_KEYS_FILE's "announcers"${queues.length === 0 ? ', with the queues its services may use (--queue)' : ''}:\n` +
      `${JSON.stringify(binding, null, 2)}\n`,
  );
  return 0;
}
