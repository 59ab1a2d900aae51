/**
 * Process-level helpers: spawn the real CLI (`node --import tsx src/cli/main.ts ...`) from the
 * repository root, on a loopback port and a temp database, and make sure every child dies.
 *
 * Every child spawned here is tracked; call killAll() in afterAll (it is also run on exit of the
 * test worker as a last resort), so a failing test never leaves a server behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { vi } from 'vitest';
import { SETTINGS } from '../../src/config/settings.js';

export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
export const LOOPBACK = '127.0.0.1';

/** How long a spawned server gets to answer /healthz (tsx startup is about a second). */
const STARTUP_DEADLINE_MS = 20_000;

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnedProcess {
  child: ChildProcess;
  pid: number;
  /** Everything the child wrote to stdout so far. */
  stdout(): string;
  /** Everything the child wrote to stderr so far. */
  stderr(): string;
  /** Resolves once the child has exited and its output streams are closed. */
  exited: Promise<ExitInfo>;
  /** Whether the child has exited. */
  readonly done: boolean;
}

export interface ServerProcess extends SpawnedProcess {
  port: number;
  /** `http://127.0.0.1:<port>` */
  url: string;
  databasePath: string;
}

/** Environment overrides; `undefined` removes the variable from the child's environment. */
export type EnvOverrides = Record<string, string | undefined>;

export interface SpawnOptions {
  /** DATABASE_PATH for the child; defaults to registry.db in a fresh temp folder. */
  databasePath?: string;
  /** PORT for the child; omitted unless given. */
  port?: number;
  /** LOG_LEVEL for the child (default warn). */
  logLevel?: string;
  env?: EnvOverrides;
  /** Written to the child's stdin, which is then closed; without it stdin is /dev/null. */
  input?: string;
}

const live = new Set<ChildProcess>();

/** SIGKILLs every child still running (synchronous, so it also works in an exit handler). */
export function killAll(): void {
  for (const child of live) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  live.clear();
}

process.once('exit', killAll);

const tempDirs: string[] = [];

/** A fresh temp folder, removed by removeTempDirs(). */
export function processTempDir(prefix = 'tool-registry-proc-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A port that was free on the loopback interface a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ port: 0, host: LOOPBACK }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the listening port'));
        return;
      }
      server.close((err) => (err ? reject(err) : resolvePort(address.port)));
    });
  });
}

/** The child's environment: this process's, minus every registry setting, plus ours. */
function childEnv(options: SpawnOptions, databasePath: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(SETTINGS)) delete env[name];
  delete env['REGISTRY_URL'];
  delete env['REGISTRY_TOKEN'];
  env['DATABASE_PATH'] = databasePath;
  env['HOST'] = LOOPBACK;
  env['LOG_LEVEL'] = options.logLevel ?? 'warn';
  if (options.port !== undefined) env['PORT'] = String(options.port);
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Spawns `node --import tsx src/cli/main.ts ...args` from the repository root. */
export function spawnCli(args: readonly string[], options: SpawnOptions = {}): SpawnedProcess {
  const databasePath = options.databasePath ?? join(processTempDir(), 'registry.db');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    env: childEnv(options, databasePath),
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error('could not spawn the CLI');
  live.add(child);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  if (options.input !== undefined && child.stdin) {
    child.stdin.on('error', () => {}); // the child may exit before reading it all
    child.stdin.end(options.input);
  }
  let done = false;
  const exited = new Promise<ExitInfo>((resolveExit, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      done = true;
      live.delete(child);
      resolveExit({ code, signal });
    });
  });
  return {
    child,
    pid: child.pid,
    stdout: () => out,
    stderr: () => err,
    exited,
    get done() {
      return done;
    },
  };
}

export interface CliResult extends ExitInfo {
  stdout: string;
  stderr: string;
}

/** Runs a CLI command to completion; kills it and throws if it takes longer than timeoutMs. */
export async function runCli(args: readonly string[], options: SpawnOptions & { timeoutMs?: number } = {}): Promise<CliResult> {
  const proc = spawnCli(args, options);
  const timeoutMs = options.timeoutMs ?? 20_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout('timeout'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([proc.exited, timeout]);
    if (outcome === 'timeout') {
      throw new Error(`tool-registry ${args.join(' ')} did not exit within ${timeoutMs} ms; stderr: ${proc.stderr()}`);
    }
    return { ...outcome, stdout: proc.stdout(), stderr: proc.stderr() };
  } finally {
    clearTimeout(timer);
    if (!proc.done) await stopProcess(proc, 'SIGKILL');
  }
}

/** The port the child wrote to PORT_FILE once listening; fails early if the child exits. */
async function boundPort(proc: SpawnedProcess, portFile: string, deadlineMs = STARTUP_DEADLINE_MS): Promise<number> {
  const port = await vi.waitFor(
    () => {
      if (proc.done) return undefined;
      if (!existsSync(portFile)) throw new Error(`no ${portFile} yet`);
      return Number(readFileSync(portFile, 'utf8'));
    },
    { timeout: deadlineMs, interval: 50 },
  );
  if (port === undefined) throw new Error(`the server exited before listening; stderr: ${proc.stderr()}`);
  return port;
}

/** Polls GET /healthz until it answers 200; fails early if the child exits. */
async function waitForHealthy(proc: SpawnedProcess, url: string, deadlineMs = STARTUP_DEADLINE_MS): Promise<void> {
  const outcome = await vi
    .waitFor(
      async () => {
        if (proc.done) return 'exited';
        const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) });
        if (response.status !== 200) throw new Error(`/healthz answered ${response.status}`);
        return 'healthy';
      },
      { timeout: deadlineMs, interval: 100 },
    )
    .catch(() => 'late' as const);
  if (outcome === 'exited') {
    const { code, signal } = await proc.exited;
    throw new Error(`the server exited (code ${code}, signal ${signal}) before answering /healthz; stderr: ${proc.stderr()}`);
  }
  if (outcome === 'late') throw new Error(`the server did not answer /healthz within ${deadlineMs} ms; stderr: ${proc.stderr()}`);
}

/**
 * Starts `serve` on a free loopback port and waits until /healthz answers (within
 * `startupDeadlineMs`, default 20 s; more for several servers started at once on a busy machine).
 */
export async function startServer(options: Omit<SpawnOptions, 'input'> & { startupDeadlineMs?: number } = {}): Promise<ServerProcess> {
  const { startupDeadlineMs, ...spawnOptions } = options;
  const databasePath = spawnOptions.databasePath ?? join(processTempDir(), 'registry.db');
  // Without a port of the test's choosing the server takes a free one (PORT=0) and says which in
  // PORT_FILE: no port is probed here and released for another process to take first.
  const portFile = spawnOptions.env?.['PORT_FILE'] ?? join(processTempDir(), 'port');
  const proc = spawnCli(['serve'], {
    ...spawnOptions,
    port: spawnOptions.port ?? 0,
    databasePath,
    env: { ...spawnOptions.env, PORT_FILE: portFile },
  });
  try {
    const port = spawnOptions.port ?? (await boundPort(proc, portFile, startupDeadlineMs));
    const url = `http://${LOOPBACK}:${port}`;
    await waitForHealthy(proc, url, startupDeadlineMs);
    return Object.assign(proc, { port, url, databasePath });
  } catch (err) {
    await stopProcess(proc, 'SIGKILL');
    throw err;
  }
}

/**
 * Sends a signal to the child by pid and awaits its exit. If it has not exited after
 * timeoutMs, it is SIGKILLed and an error is thrown.
 */
export async function stopProcess(proc: SpawnedProcess, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<ExitInfo> {
  if (proc.done) return proc.exited;
  try {
    process.kill(proc.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout('timeout'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([proc.exited, timeout]);
    if (outcome !== 'timeout') return outcome;
    process.kill(proc.pid, 'SIGKILL');
    await proc.exited;
    throw new Error(`process ${proc.pid} did not exit within ${timeoutMs} ms of ${signal}; killed it`);
  } finally {
    clearTimeout(timer);
  }
}

/** Mints a token with the CLI's `token` command against the same database (dev secret). */
export async function mintTokenWithCli(
  databasePath: string,
  scopes: readonly string[],
  sub = 'op',
  env: EnvOverrides = {},
): Promise<string> {
  const result = await runCli(['token', ...scopes.flatMap((s) => ['--scope', s]), '--sub', sub], { databasePath, env });
  if (result.code !== 0) throw new Error(`token exited ${result.code}: ${result.stderr}`);
  return result.stdout.trim();
}

/** Decodes a JWT's payload without verifying it. */
export function jwtPayload(token: string): Record<string, unknown> {
  const [, payload] = token.split('.');
  if (payload === undefined) throw new Error('not a JWT');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** The lines of a text, without the trailing newline. */
export function linesOf(text: string): string[] {
  const trimmed = text.replace(/\n$/, '');
  return trimmed === '' ? [] : trimmed.split('\n');
}
