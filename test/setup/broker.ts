/**
 * Global setup of the `bus` vitest project (vitest.config.ts): a real Pulsar broker (and the
 * reference Python service's virtualenv) for test/bus/broker.test.ts. Vitest runs it only when
 * that file is selected, so unit runs never wait for it. Uses PULSAR_WS_URL/PULSAR_ADMIN_URL/
 * PULSAR_BROKER_URL when set; otherwise starts a broker with scripts/pulsar.sh when Java and
 * Maven are present; otherwise the bus suite is skipped with a printed reason, except under
 * CI=true, where that is a failure.
 */
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

export interface PulsarContext {
  /** Why the real-broker suite cannot run; undefined when it can. */
  skip: string | undefined;
  wsUrl: string;
  adminUrl: string;
  brokerUrl: string;
  /** The venv python with trustgraph-base, or undefined with the reason in pythonSkip. */
  python: string | undefined;
  pythonSkip: string | undefined;
  /** Environment for scripts/pulsar.sh to stop and start this same broker (restart tests). */
  scriptEnv: Record<string, string> | undefined;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pulsar: PulsarContext;
  }
}

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPT = join(ROOT, 'scripts', 'pulsar.sh');

function has(command: string, args: string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore' }).status === 0;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv): { ok: boolean; stdout: string; stderr: string } {
  const result = spawnSync(command, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 600_000, maxBuffer: 64 * 1024 * 1024 });
  return { ok: result.status === 0, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

function pythonEnv(): { python: string | undefined; pythonSkip: string | undefined } {
  if (!has('python3', ['--version'])) return { python: undefined, pythonSkip: 'python3 is not installed' };
  const result = run('bash', [join(ROOT, 'scripts', 'python-env.sh')], process.env);
  if (!result.ok)
    return { python: undefined, pythonSkip: `scripts/python-env.sh failed: ${result.stderr.trim().split('\n').slice(-3).join(' | ')}` };
  return { python: join(ROOT, '.venv', 'bin', 'python'), pythonSkip: undefined };
}

export default async function setup(project: TestProject): Promise<(() => void) | undefined> {
  const ci = process.env['CI'] === 'true';
  const given = process.env['PULSAR_WS_URL'];
  const base = { wsUrl: '', adminUrl: '', brokerUrl: '', python: undefined, pythonSkip: 'no broker', scriptEnv: undefined };
  if (given) {
    const adminUrl = process.env['PULSAR_ADMIN_URL'] ?? given.replace(/^ws/, 'http');
    project.provide('pulsar', {
      ...base,
      ...pythonEnv(),
      skip: undefined,
      wsUrl: given,
      adminUrl,
      brokerUrl: process.env['PULSAR_BROKER_URL'] ?? `pulsar://${new URL(adminUrl).hostname}:6650`,
    });
    return undefined;
  }
  const missing = [
    ['java', ['-version']],
    ['mvn', ['-v']],
  ]
    .filter(([c, a]) => !has(c as string, a as string[]))
    .map(([c]) => c);
  if (missing.length > 0 || process.env['TOOL_REGISTRY_NO_BROKER'] === '1') {
    const reason =
      missing.length > 0 ? `${missing.join(' and ')} not found, so no Pulsar broker can be started` : 'TOOL_REGISTRY_NO_BROKER=1';
    if (ci) throw new Error(`the real-broker bus suite must run under CI=true, but ${reason}`);
    console.warn(`\n[bus] skipping the real-broker suite: ${reason} (set PULSAR_WS_URL to use a running broker)\n`);
    project.provide('pulsar', { ...base, skip: reason });
    return undefined;
  }
  const scriptEnv = {
    PULSAR_WEB_PORT: String(await freePort()),
    PULSAR_BROKER_PORT: String(await freePort()),
    PULSAR_STATE_DIR: join(ROOT, '.cache', `pulsar-test-${process.pid}`),
    // 8 MiB frames (Pulsar's default is 1 MiB), so that test/bus/wire.broker.test.ts can carry a
    // 3 MB call (issue 15); the registry's own setting keeps its 1 MiB default in every other
    // test, so the default limit is still what they meet. In scriptEnv, so restarts keep it.
    PULSAR_MAX_TEXT_FRAME_SIZE: String(8 * 1024 * 1024),
  };
  const env = { ...process.env, ...scriptEnv };
  const started = Date.now();
  const result = run('bash', [SCRIPT, 'start'], env);
  if (!result.ok) {
    const reason = `scripts/pulsar.sh start failed: ${result.stderr.trim().split('\n').slice(-5).join(' | ')}`;
    run('bash', [SCRIPT, 'stop'], env);
    if (ci) throw new Error(reason);
    console.warn(`\n[bus] skipping the real-broker suite: ${reason}\n`);
    project.provide('pulsar', { ...base, skip: reason });
    return undefined;
  }
  const lines = Object.fromEntries(
    result.stdout
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => l.trim().split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  console.warn(`[bus] Pulsar broker ready at ${lines['PULSAR_WS_URL']} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const python = pythonEnv();
  if (python.pythonSkip && ci) {
    run('bash', [SCRIPT, 'stop'], env);
    throw new Error(`the Python interop test must run under CI=true, but ${python.pythonSkip}`);
  }
  project.provide('pulsar', {
    skip: undefined,
    wsUrl: lines['PULSAR_WS_URL'] ?? '',
    adminUrl: lines['PULSAR_ADMIN_URL'] ?? '',
    brokerUrl: lines['PULSAR_BROKER_URL'] ?? '',
    ...python,
    scriptEnv,
  });
  return () => {
    run('bash', [SCRIPT, 'stop'], env);
  };
}
