/**
 * REPLICATION_SECRET_FILE (src/config.ts) and `tool-registry replication-key`
 * (src/cli/replication-key.ts): the key is written to a new mode-0600 file and never printed;
 * a key file that is missing, malformed or open to other users stops startup with one line
 * naming the setting; the key never shows in the config's JSON or inspection. Replicated mode
 * needs it (issue 29), takes further keys while rotating, and unsigned messages only when told.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config/errors.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function dir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tool-registry-key-'));
  dirs.push(d);
  return d;
}

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    env: {},
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    readStdin: async () => undefined,
  });
  return { code, stdout, stderr };
}

const REPLICATED = { PULSAR_WS_URL: 'ws://127.0.0.1:8080', REPLICATION_TOPIC: 'persistent://tg/registry/descriptors' };

function keyFile(content: Buffer | string, mode = 0o600): string {
  const path = join(dir(), 'replication.key');
  writeFileSync(path, content, { mode });
  chmodSync(path, mode);
  return path;
}

/** The one-line startup error for a key file, or undefined when it is taken. */
function problem(path: string, env: Record<string, string> = REPLICATED): string | undefined {
  try {
    loadConfig({ ...env, REPLICATION_SECRET_FILE: path });
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
}

describe('the replication key', () => {
  it('is written by `tool-registry replication-key` to a new mode-0600 file, never printed, never overwritten', async () => {
    const path = join(dir(), 'keys', 'replication.key');
    const made = await cli(['replication-key', path]);
    expect(made.code, made.stderr).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const text = readFileSync(path, 'utf8');
    expect(text).toMatch(/^[A-Za-z0-9+/]{43}=\n$/);
    expect(made.stdout).toContain(path);
    expect(made.stdout).toContain('REPLICATION_SECRET_FILE');
    expect(made.stdout).not.toContain(text.trim());
    const again = await cli(['replication-key', path]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/exists; it was not overwritten/);
    expect(readFileSync(path, 'utf8')).toBe(text);
    expect((await cli(['replication-key'])).stderr).toMatch(/one argument/);

    // What it writes is what REPLICATION_SECRET_FILE takes, as the variable or the flag.
    const config = loadConfig(REPLICATED, { REPLICATION_SECRET_FILE: path });
    const key = config.replication?.secretKey;
    expect(key?.symmetricKeySize).toBe(32);
    expect(key?.export().toString('base64')).toBe(text.trim());
    // Neither a log line of the config nor its JSON shows the key.
    for (const shown of [JSON.stringify(config), inspect(config, { depth: 10 })]) {
      expect(shown).not.toContain(text.trim());
      expect(shown).not.toContain(key?.export().toString('hex'));
    }
  });

  it('takes 64 hex digits or 32 raw bytes too', () => {
    const bytes = randomBytes(32);
    expect(
      loadConfig({ ...REPLICATED, REPLICATION_SECRET_FILE: keyFile(`${bytes.toString('hex')}\n`) }).replication?.secretKey?.export(),
    ).toEqual(bytes);
    expect(loadConfig({ ...REPLICATED, REPLICATION_SECRET_FILE: keyFile(bytes) }).replication?.secretKey?.export()).toEqual(bytes);
  });

  it('stops startup with one line naming the setting: open to others, unreadable, not a key, or without replication', () => {
    const good = `${randomBytes(32).toString('base64')}\n`;
    for (const mode of [0o644, 0o640, 0o604, 0o620]) {
      expect(problem(keyFile(good, mode)), mode.toString(8)).toMatch(
        new RegExp(`^REPLICATION_SECRET_FILE: is open to other users \\(mode ${mode.toString(8)}\\); run chmod 600 on it`),
      );
    }
    expect(problem(keyFile(good, 0o400))).toBeUndefined();
    expect(problem(join(dir(), 'missing.key'))).toMatch(/^REPLICATION_SECRET_FILE: cannot be read \(ENOENT\)/);
    for (const content of [
      randomBytes(16).toString('base64'),
      'not a key at all',
      randomBytes(31),
      `${randomBytes(32).toString('hex')}00`,
    ]) {
      const message = problem(keyFile(content));
      expect(message).toMatch(/^REPLICATION_SECRET_FILE: must hold a 32-byte key/);
      expect(message?.split('\n')).toHaveLength(1);
    }
    expect(problem(keyFile(good), {})).toMatch(/^REPLICATION_SECRET_FILE: needs REPLICATION_TOPIC/);
  });

  it('is required in replicated mode (issue 29): every message on the topic is signed with it', () => {
    expect(() => loadConfig(REPLICATED)).toThrow(
      new ConfigError(
        'REPLICATION_SECRET_FILE: is required in replicated mode (REPLICATION_TOPIC): every message on the topic is signed with the key every replica shares; `tool-registry replication-key <file>` writes one',
      ),
    );
  });

  it('takes more keys to accept while rotating (REPLICATION_ACCEPTED_SECRET_FILES), each checked like the first', () => {
    const key = keyFile(`${randomBytes(32).toString('base64')}\n`);
    const next = randomBytes(32);
    const nextFile = keyFile(next);
    const config = loadConfig({ ...REPLICATED, REPLICATION_SECRET_FILE: key, REPLICATION_ACCEPTED_SECRET_FILES: ` ${nextFile} , ${key}` });
    expect(config.replication?.acceptedKeys.map((k) => k.export().toString('hex'))).toEqual([
      next.toString('hex'),
      config.replication?.secretKey.export().toString('hex'),
    ]);
    expect(JSON.stringify(config)).not.toContain(next.toString('hex'));
    expect(loadConfig({ ...REPLICATED, REPLICATION_SECRET_FILE: key }).replication?.acceptedKeys).toEqual([]);
    const open = keyFile(next, 0o644);
    const message = (() => {
      try {
        loadConfig({ ...REPLICATED, REPLICATION_SECRET_FILE: key, REPLICATION_ACCEPTED_SECRET_FILES: `${nextFile},${open}` });
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    })();
    expect(message).toMatch(/^REPLICATION_ACCEPTED_SECRET_FILES: is open to other users \(mode 644\)/);
    expect(message?.split('\n')).toHaveLength(1);
    expect(() => loadConfig({ REPLICATION_ACCEPTED_SECRET_FILES: nextFile })).toThrow(
      /^REPLICATION_ACCEPTED_SECRET_FILES: needs REPLICATION_TOPIC/,
    );
  });

  it('applies no message without a MAC unless REPLICATION_ACCEPT_UNSIGNED says so: on, or up to a registry index', () => {
    const env = { ...REPLICATED, REPLICATION_SECRET_FILE: keyFile(randomBytes(32)) };
    const through = (value?: string) =>
      loadConfig(value === undefined ? env : { ...env, REPLICATION_ACCEPT_UNSIGNED: value }).replication?.acceptUnsignedThrough;
    expect(through()).toBe(0);
    expect(through('off')).toBe(0);
    expect(through('')).toBe(0);
    expect(through('on')).toBe(Infinity);
    expect(through('ON')).toBe(Infinity);
    expect(through('4194305')).toBe(4194305);
    for (const bad of ['maybe', '-1', '1.5', 'true', '99999999999999999']) {
      expect(() => through(bad), bad).toThrow(
        /^REPLICATION_ACCEPT_UNSIGNED: must be off, on, or the registry index of the last message that may carry no MAC \(a whole number\)/,
      );
    }
  });
});
