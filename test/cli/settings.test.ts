/**
 * Issue 28, the settings: a misspelt setting (`JWT_SECERT`, `DATABSE_PATH`) is named in a
 * one-line warning with the setting it probably meant, instead of being silently ignored (a
 * misspelt secret quietly meant dev mode); and an address that cannot be listened on names the
 * setting that gave it, the metrics listener's included. Through main(argv, io), in-process.
 */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { misspeltSettings } from '../../src/cli/misspelt-settings.js';
import { SETTING_NAMES } from '../../src/config/settings.js';
import { linesOf, LOOPBACK, processTempDir, removeTempDirs } from '../helpers/process.js';

afterAll(() => removeTempDirs());

async function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    env: { DATABASE_PATH: join(processTempDir(), 'registry.db'), HOST: LOOPBACK, PORT: '0', LOG_LEVEL: 'silent', ...env },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    readStdin: async () => undefined,
  });
  return { code, stdout, stderr };
}

describe('issue 28: misspelt settings', () => {
  it('names a variable one or two edits from a setting, with the setting it probably meant', () => {
    const env = {
      JWT_SECERT: 'x', // two letters swapped
      DATABSE_PATH: 'x', // one left out
      LOGLEVEL: 'x',
      ANONYMOUS_DISCOVERYY: 'x',
      PUBLIC_URI: 'x',
      HSOT: 'x',
      PORTT: 'x',
    };
    expect(misspeltSettings(env)).toEqual([
      { variable: 'ANONYMOUS_DISCOVERYY', meant: 'ANONYMOUS_DISCOVERY' },
      { variable: 'DATABSE_PATH', meant: 'DATABASE_PATH' },
      { variable: 'HSOT', meant: 'HOST' },
      { variable: 'JWT_SECERT', meant: 'JWT_SECRET' },
      { variable: 'LOGLEVEL', meant: 'LOG_LEVEL' },
      { variable: 'PORTT', meant: 'PORT' },
      { variable: 'PUBLIC_URI', meant: 'PUBLIC_URL' },
    ]);
  });

  it('leaves alone the settings themselves, the CLI variables, other shapes and names further off', () => {
    const env = Object.fromEntries(
      [
        ...SETTING_NAMES,
        'REGISTRY_URL',
        'REGISTRY_TOKEN',
        // An ordinary environment: HOME is two edits from HOST, which allows one.
        'HOME',
        'PATH',
        'HOSTNAME',
        'TERM',
        'USER',
        'PWD',
        'NODE_ENV',
        'NODE_OPTIONS',
        'DATABASE_URL',
        'OTEL_EXPORTER_OTLP_ENDPOINT',
        // Lower case or other shapes are not ours; three edits are too many.
        'jwt_secert',
        'Jwt_Secert',
        'JWT__SECRET_',
        'JWT_SCRTX',
      ].map((name) => [name, 'x']),
    );
    expect(misspeltSettings(env)).toEqual([]);
  });

  it('stays cheap on a large environment', () => {
    const env = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`SOME_VARIABLE_${i}_OF_A_LARGE_ENVIRONMENT`, 'x']));
    const started = performance.now();
    expect(misspeltSettings(env)).toEqual([]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('every command that reads settings warns in one line each, first, and goes on (a misspelt secret is dev mode still)', async () => {
    const migrate = await run(['migrate'], { JWT_SECERT: 'a-shared-secret-that-is-long-enough-0123456789', DATABSE_PATH: '/elsewhere.db' });
    expect(migrate.code, migrate.stderr).toBe(0);
    expect(linesOf(migrate.stderr)).toEqual([
      'tool-registry: warning: DATABSE_PATH is not a setting and is ignored; did you mean DATABASE_PATH?',
      'tool-registry: warning: JWT_SECERT is not a setting and is ignored; did you mean JWT_SECRET?',
    ]);
    const token = await run(['token', '--scope', 'registry:write'], { JWT_SECERT: 'x' });
    expect(token.code, token.stderr).toBe(0);
    expect(linesOf(token.stderr)[0]).toBe('tool-registry: warning: JWT_SECERT is not a setting and is ignored; did you mean JWT_SECRET?');
    // Nothing to say about a clean environment.
    expect((await run(['migrate'], {})).stderr).toBe('');
  });
});

describe('issue 28: an address that cannot be listened on names its setting', () => {
  let busy: Server | undefined;
  afterAll(() => busy?.close());

  it('HOST not of this machine, with PORT=0 (the port is picked before the server starts)', async () => {
    // 192.0.2.0/24 is TEST-NET-1: no machine has it.
    const result = await run(['serve'], { HOST: '192.0.2.1' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('tool-registry: HOST: 192.0.2.1 is not an address of this machine\n');
  });

  it('a METRICS_PORT in use is METRICS_PORT, not PORT', async () => {
    busy = createServer();
    const port = await new Promise<number>((resolve) =>
      busy?.listen(0, LOOPBACK, () => resolve((busy?.address() as { port: number }).port)),
    );
    const result = await run(['serve'], { METRICS_PORT: String(port) });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`tool-registry: METRICS_PORT: ${port} is already in use on ${LOOPBACK}\n`);
  });
});
