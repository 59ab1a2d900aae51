/**
 * `tool-registry announcer-key` (issue 29): the private JWK it writes (mode 0600, never over a
 * file) signs announcements that the binding it prints verifies, through the config's own
 * reading of ANNOUNCER_KEYS_FILE; the private key is never printed.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { verifySignature } from '../../src/announce/verify.js';
import { main } from '../../src/cli/main.js';
import { trustedKeys, signAnnouncement } from '../helpers/announcer-keys.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, {
    env: {},
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    readStdin: async () => undefined,
  });
  return { code, out, err };
}

describe('tool-registry announcer-key', () => {
  it('writes a private key the printed binding verifies, and prints no private part', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'announcer-key-'));
    dirs.push(dir);
    const path = join(dir, 'weather.jwk');
    const { code, out } = await run([
      'announcer-key',
      path,
      '--subject',
      'weather-bot',
      '--kid',
      'weather-bot-1',
      '--queue',
      'non-persistent://tg/*/weather',
      '--scope',
      'weather:read',
    ]);
    expect(code).toBe(0);
    if (process.platform !== 'win32') expect(statSync(path).mode & 0o777).toBe(0o600);
    const privateJwk = JSON.parse(readFileSync(path, 'utf8')) as { d: string; kid: string; kty: string; crv: string };
    expect(privateJwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', kid: 'weather-bot-1' });
    expect(out).not.toContain(privateJwk.d);
    const binding = JSON.parse(out.slice(out.indexOf('{'))) as Parameters<typeof trustedKeys>[0][number];
    expect(binding).toMatchObject({ subject: 'weather-bot', queues: ['non-persistent://tg/*/weather'], scopes: ['weather:read'] });
    const service = { id: 'weather', topic: 'weather' };
    const jws = await signAnnouncement({ privateJwk, kid: privateJwk.kid }, { sub: 'weather-bot', seq: 1, service });
    const verified = await verifySignature(jws, trustedKeys([binding]));
    expect(verified.ok, JSON.stringify(verified)).toBe(true);
  });

  it('never overwrites a file, and needs a subject', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'announcer-key-'));
    dirs.push(dir);
    const path = join(dir, 'taken.jwk');
    writeFileSync(path, 'keep me');
    const taken = await run(['announcer-key', path, '--subject', 'weather-bot']);
    expect(taken.code).not.toBe(0);
    expect(taken.err).toMatch(/exists; it was not overwritten/);
    expect(readFileSync(path, 'utf8')).toBe('keep me');
    const nameless = await run(['announcer-key', join(dir, 'new.jwk')]);
    expect(nameless.err).toMatch(/needs --subject/);
    const spaced = await run(['announcer-key', join(dir, 'new.jwk'), '--subject', 'two words']);
    expect(spaced.err).toMatch(/--subject: must be an OAuth scope token/);
  });
});
