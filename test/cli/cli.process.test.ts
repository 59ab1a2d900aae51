/**
 * The CLI as a user runs it, in-process: main(argv, io) against an app built in-process
 * (buildApp, listening on 127.0.0.1 port 0), with its stdout, stderr, stdin and environment
 * captured. Two tests spawn the real CLI where the process itself matters: a bad setting must
 * stop it before it touches anything, and a token minted by another process from the dev secret
 * file must be accepted by the server.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { HELP } from '../../src/cli/help.js';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/http/app.js';
import { seed } from '../helpers/fixtures.js';
import {
  freePort,
  jwtPayload,
  killAll,
  linesOf,
  LOOPBACK,
  processTempDir,
  removeTempDirs,
  REPO_ROOT,
  runCli,
  spawnCli,
  startServer,
  stopProcess,
} from '../helpers/process.js';

const SEED_DIR = join(REPO_ROOT, 'test', 'fixtures', 'seed');
const HTTP_TOOLS = ['calculator', 'file_reader', 'database_query', 'simulation_data', 'weather_forecast'] as const;

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  /** DATABASE_PATH; defaults to registry.db in a fresh temp folder. */
  databasePath?: string;
  /** The whole environment besides DATABASE_PATH, HOST, PORT and LOG_LEVEL: nothing leaks in from ours. */
  env?: Record<string, string>;
  /** What stdin holds; without it stdin reads as a terminal (nothing piped). */
  input?: string;
}

/** Runs `tool-registry ...args` in-process and captures what it writes. */
async function run(args: string[], options: RunOptions = {}): Promise<RunResult> {
  let stdout = '';
  let stderr = '';
  const env = {
    DATABASE_PATH: options.databasePath ?? join(processTempDir(), 'registry.db'),
    HOST: LOOPBACK,
    // Should a test's serve ever get past its error, it listens on a free port, not on 8006.
    PORT: '0',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  const code = await main(args, {
    env,
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    readStdin: async () => options.input,
  });
  return { code, stdout, stderr };
}

/** Mints a token with the `token` command, in-process, against the same database's dev secret. */
async function mintToken(databasePath: string, scopes: string[], sub: string): Promise<string> {
  const result = await run(['token', ...scopes.flatMap((s) => ['--scope', s]), '--sub', sub], { databasePath });
  if (result.code !== 0) throw new Error(`token exited ${result.code}: ${result.stderr}`);
  return result.stdout.trim();
}

interface Server {
  app: FastifyInstance;
  url: string;
  databasePath: string;
}

/** The registry in dev mode (its secret file beside the database), listening on a loopback port. */
async function startInProcess(): Promise<Server> {
  const databasePath = join(processTempDir(), 'registry.db');
  const app = await buildApp(loadConfig({}, { DATABASE_PATH: databasePath, LOG_LEVEL: 'silent' }));
  await app.listen({ port: 0, host: LOOPBACK });
  const { port } = app.server.address() as AddressInfo;
  return { app, url: `http://${LOOPBACK}:${port}`, databasePath };
}

const get = (url: string, token: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } });

afterAll(() => {
  killAll();
  removeTempDirs();
});

describe('token mints a JWT the running registry accepts', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startInProcess();
  });

  afterAll(() => server.app.close());

  it('prints a token with the requested scope, sub and a one-hour expiry', async () => {
    const before = Math.floor(Date.now() / 1000);
    const result = await run(['token', '--scope', 'registry:write', '--sub', 'op', '--ttl', '1h'], { databasePath: server.databasePath });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = linesOf(result.stdout);
    expect(lines).toHaveLength(1);
    const token = lines[0] ?? '';
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const payload = jwtPayload(token);
    expect(payload['scope']).toBe('registry:write');
    expect(payload['sub']).toBe('op');
    expect(typeof payload['exp']).toBe('number');
    expect((payload['exp'] as number) - (payload['iat'] as number)).toBe(3600);
    expect(Math.abs((payload['exp'] as number) - (before + 3600))).toBeLessThan(60);

    // Signed with the server's dev secret: the admin route takes it...
    expect((await get(`${server.url}/tool-services`, token)).status).toBe(200);
    // ...and a token without the admin scope is refused there.
    const reader = await mintToken(server.databasePath, ['calculator:use'], 'reader');
    expect(jwtPayload(reader)['scope']).toBe('calculator:use');
    expect((await get(`${server.url}/tool-services`, reader)).status).toBe(403);
  });

  it('says so on stderr when it had to create the dev secret, which no running registry knows yet', async () => {
    const databasePath = join(processTempDir(), 'elsewhere', 'registry.db');
    const first = await run(['token', '--scope', 'a:read'], { databasePath });
    expect(first.code).toBe(0);
    expect(linesOf(first.stdout)).toHaveLength(1);
    expect(first.stderr).toBe(
      `tool-registry: created a new dev secret at ${join(dirname(databasePath), 'registry.secret')}; only a registry serving DATABASE_PATH=${databasePath} accepts this token\n`,
    );
    expect((await run(['token', '--scope', 'a:read'], { databasePath })).stderr).toBe('');
  });

  it('takes --flag=value, a repeated --scope and space-separated scopes', async () => {
    const result = await run(['token', '--scope=a:read', '--scope', 'b:read c:write', '--sub=svc', '--ttl=15m'], {
      databasePath: server.databasePath,
    });
    expect(result.code, result.stderr).toBe(0);
    const payload = jwtPayload(result.stdout.trim());
    expect(payload['scope']).toBe('a:read b:read c:write');
    expect(payload['sub']).toBe('svc');
    expect((payload['exp'] as number) - (payload['iat'] as number)).toBe(900);
  });
});

describe('data commands manage a running registry', () => {
  let server: Server;
  let adminToken: string;

  /** Runs a data command against the server; the CLI mints its admin token from the dev secret. */
  const cli = (args: string[], input?: string) =>
    run([...args, '--url', server.url], { databasePath: server.databasePath, ...(input !== undefined && { input }) });

  beforeAll(async () => {
    server = await startInProcess();
    adminToken = await mintToken(server.databasePath, ['registry:write'], 'op');
  });

  afterAll(() => server.app.close());

  const adminGet = (path: string) => get(`${server.url}${path}`, adminToken);

  it('put tool-service/<id> --file creates the service', async () => {
    const result = await cli(['put', 'tool-service/joke-service', '--file', join(SEED_DIR, 'joke-service.json')]);
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout) as { id: string; status: string; descriptor: unknown };
    expect(printed.id).toBe('joke-service');
    expect(printed.status).toBe('active');

    const stored = await adminGet('/tool-services/joke-service');
    expect(stored.status).toBe(200);
    expect(((await stored.json()) as { descriptor: unknown }).descriptor).toMatchObject(seed('joke-service'));
  });

  it('put tool/<name> reads the descriptor from stdin', async () => {
    const result = await cli(['put', 'tool/tell-joke'], JSON.stringify(seed('tell-joke')));
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout) as { name: string; kind: string };
    expect(printed).toMatchObject({ name: 'tell-joke', kind: 'tool-service' });

    const discovery = (await (await fetch(`${server.url}/`)).json()) as { tools: { name: string }[] };
    expect(discovery.tools.map((t) => t.name)).toEqual(['tell-joke']);
  });

  it('put without the admin scope fails with one line and writes nothing', async () => {
    const reader = await mintToken(server.databasePath, ['calculator:use'], 'reader');
    const result = await run(
      ['put', 'tool/calculator', '--file', join(SEED_DIR, 'calculator.json'), '--url', server.url, '--token', reader],
      {
        databasePath: server.databasePath,
      },
    );
    expect(result.code).toBe(1);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(/403/);
    expect((await adminGet('/tools/calculator')).status).toBe(404);
  });

  it('without a token, a 401 says where a token comes from', async () => {
    // No --token, no REGISTRY_TOKEN, and a database path with no dev secret beside it.
    const result = await run(['list', 'tools', '--url', server.url], { databasePath: join(processTempDir(), 'elsewhere', 'registry.db') });
    expect(result.code).toBe(1);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(/^tool-registry: 401 .*\(no token was sent: pass --token or REGISTRY_TOKEN/);
  });

  it('get tool/<name> prints the stored descriptor', async () => {
    const result = await cli(['get', 'tool/tell-joke']);
    expect(result.code, result.stderr).toBe(0);
    const descriptor = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(descriptor).toMatchObject(seed('tell-joke'));
  });

  it('list tools and list tool-services print one line each', async () => {
    const tools = await cli(['list', 'tools']);
    expect(tools.code, tools.stderr).toBe(0);
    expect(linesOf(tools.stdout)).toEqual(['tell-joke\ttool-service\t']);

    const services = await cli(['list', 'tool-services']);
    expect(services.code, services.stderr).toBe(0);
    expect(linesOf(services.stdout)).toEqual(['joke-service\tnon-persistent://tg/request/joke']);
  });

  it('import <file> loads a bundle of services and tools', async () => {
    const bundlePath = join(processTempDir(), 'bundle.json');
    const bundle = {
      'tool-services': [seed('custom-rag')],
      tools: [seed('query-customers'), seed('query-products'), ...HTTP_TOOLS.map((name) => seed(name))],
    };
    writeFileSync(bundlePath, JSON.stringify(bundle));
    const result = await cli(['import', bundlePath]);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout) as { toolServices: unknown; tools: unknown };
    expect(summary.toolServices).toEqual({ created: 1, replaced: 0 });
    expect(summary.tools).toEqual({ created: 2 + HTTP_TOOLS.length, replaced: 0 });

    const list = await cli(['list', 'tool-services']);
    expect(linesOf(list.stdout)).toEqual([
      'custom-rag\tnon-persistent://tg/request/custom-rag',
      'joke-service\tnon-persistent://tg/request/joke',
    ]);
  });

  it('export prints a bundle holding everything registered', async () => {
    const result = await cli(['export']);
    expect(result.code, result.stderr).toBe(0);
    const bundle = JSON.parse(result.stdout) as { 'tool-services': { id: string }[]; tools: { name: string }[] };
    expect(bundle['tool-services'].map((s) => s.id)).toEqual(['custom-rag', 'joke-service']);
    for (const s of bundle['tool-services']) expect(s).toMatchObject(seed(s.id));
    const names = ['tell-joke', 'query-customers', 'query-products', ...HTTP_TOOLS];
    expect(bundle.tools.map((t) => t.name).sort()).toEqual([...names].sort());
    for (const t of bundle.tools) expect(t).toMatchObject(seed(t.name));
  });

  it('delete tool/<name> removes it, and get then fails with one line', async () => {
    const deleted = await cli(['delete', 'tool/tell-joke']);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe('deleted tool/tell-joke\n');

    const discovery = (await (await fetch(`${server.url}/`)).json()) as { tools: { name: string }[] };
    expect(discovery.tools.map((t) => t.name)).not.toContain('tell-joke');
    expect(discovery.tools).toHaveLength(2 + HTTP_TOOLS.length);

    const result = await cli(['get', 'tool/tell-joke']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/404/);
    expect(lines[0]).toContain('tell-joke');
  });
});

describe('data commands report an unreachable registry', () => {
  it('exits non-zero with one line naming the URL', async () => {
    const port = await freePort(); // closed again: nothing listens there
    const target = `http://127.0.0.1:${port}`;
    const result = await run(['list', 'tools', '--url', target]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(target);
  });
});

describe('bad configuration or usage stops the CLI with one line', () => {
  it('token refuses with one clear line when tokens come from an authorization server', async () => {
    const databasePath = join(processTempDir(), 'registry.db');
    const result = await run(['token', '--scope', 'registry:write'], { databasePath, env: { JWKS_URL: 'http://127.0.0.1:1/jwks' } });
    expect(result.code).toBe(2);
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('authorization server');
    expect(existsSync(databasePath)).toBe(false);
  });

  it('a file that cannot be read is a usage error, as one that is not JSON is', async () => {
    const missing = join(processTempDir(), 'missing.json');
    const env = { REGISTRY_TOKEN: 'x', REGISTRY_URL: 'http://127.0.0.1:1' };
    expect(await run(['import', missing], { env })).toEqual({
      code: 2,
      stdout: '',
      stderr: `tool-registry: cannot read ${missing}: no such file\n`,
    });
    expect(await run(['put', 'tool/x', '--file', processTempDir()], { env })).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('it is a folder'),
    });
  });

  it('serve with ANONYMOUS_DISCOVERY=bogus exits 2 naming ANONYMOUS_DISCOVERY', async () => {
    const databasePath = join(processTempDir(), 'registry.db');
    const result = await run(['serve'], { databasePath, env: { PORT: '0', ANONYMOUS_DISCOVERY: 'bogus' } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('ANONYMOUS_DISCOVERY');
    expect(existsSync(databasePath)).toBe(false);
  });

  it('a flag wins over its variable, in both --flag value and --flag=value forms', async () => {
    const result = await run(['migrate', '--anonymous-discovery', 'bogus'], { env: { ANONYMOUS_DISCOVERY: 'full' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('tool-registry: ANONYMOUS_DISCOVERY: must be one of full, public, none (got "bogus")\n');

    const port = await run(['migrate', '--port=70000'], { env: { PORT: '8006' } });
    expect(port.code).toBe(2);
    expect(port.stderr).toBe('tool-registry: PORT: must be at most 65535 (got "70000")\n');
  });

  it('never echoes a secret', async () => {
    const result = await run(['migrate', '--jwt-secret', 'too-short-to-sign-with']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('tool-registry: JWT_SECRET: must be at least 32 characters (256 bits) for HS256\n');
  });

  it('a database path that cannot be a database, or a port in use, exits 2 with one line naming the setting', async () => {
    const dir = processTempDir();
    writeFileSync(join(dir, 'a-file'), '');
    writeFileSync(join(dir, 'text.db'), 'this is a text file, not a SQLite database; '.repeat(20));
    for (const [path, reason] of [
      [join(dir, 'a-file', 'registry.db'), 'a part of its folder path is a file, not a folder'],
      [join(dir, 'text.db'), 'the file is not a SQLite database'],
    ] as const) {
      const result = await run(['serve'], { databasePath: path });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`tool-registry: DATABASE_PATH: cannot open the database at ${path}: ${reason}\n`);
    }
    const busy = await buildApp(loadConfig({ DATABASE_PATH: ':memory:' }));
    await busy.listen({ host: LOOPBACK, port: 0 });
    try {
      const port = String((busy.server.address() as AddressInfo).port);
      const result = await run(['serve'], { env: { PORT: port } });
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(`tool-registry: PORT: ${port} is already in use on ${LOOPBACK}\n`);
    } finally {
      await busy.close();
    }
  });

  it('an unknown command, flag or argument, or a flag without its value, exits 2 with one line', async () => {
    const cases: [string[], string][] = [
      [['frobnicate'], 'unknown command "frobnicate" (see tool-registry --help)'],
      [['serve', '--frobnicate'], 'unknown option --frobnicate for serve (see tool-registry --help)'],
      [['list', '--frobnicate=1'], 'unknown option --frobnicate for list (see tool-registry --help)'],
      [['migrate', 'now'], 'unknown argument now for migrate (see tool-registry --help)'],
      [['token', '--scope'], '--scope needs a value'],
      [['--port'], '--port needs a value'],
      [['list', 'tools', 'extra'], 'unexpected argument extra for list'],
      [['export', '--url', 'notaurl'], '--url: "notaurl" is not an http(s) URL'],
      [['list', '--url=ftp://127.0.0.1/'], '--url: "ftp://127.0.0.1/" is not an http(s) URL'],
    ];
    for (const [args, message] of cases) {
      const result = await run(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(`tool-registry: ${message}\n`);
    }
  });

  it('--version prints the package version', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V', 'version'])
      expect(await run([flag])).toEqual({ code: 0, stdout: `tool-registry ${version}\n`, stderr: '' });
  });

  it('--help prints the usage and every setting', async () => {
    const result = await run(['list', '--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(HELP);
    expect(result.stdout).toContain('--public-url');
  });
});

describe('migrate applies the schema once and refuses a newer one', () => {
  let databasePath: string;

  beforeAll(() => {
    databasePath = join(processTempDir(), 'registry.db');
  });

  it('applies migration 1 to a fresh database, then reports it up to date', async () => {
    const first = await run(['migrate'], { databasePath });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/applied migration\(s\) 1\b/);

    const second = await run(['migrate', '--database-path', databasePath], { databasePath: join(processTempDir(), 'elsewhere.db') });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/up to date/);
    expect(second.stdout).not.toMatch(/applied/);
  });

  it('stops migrate and serve on a database newer than the code', async () => {
    const db = new Database(databasePath);
    try {
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
        999,
        'from_the_future',
        new Date().toISOString(),
      );
    } finally {
      db.close();
    }

    const migrate = await run(['migrate'], { databasePath });
    expect(migrate.code).toBe(1);
    expect(migrate.stdout).toBe('');
    const migrateLines = linesOf(migrate.stderr);
    expect(migrateLines).toHaveLength(1);
    expect(migrateLines[0]).toContain('999');

    // The app refuses while it is built, before it listens or takes signals.
    const serve = await run(['serve'], { databasePath, env: { PORT: '0' } });
    expect(serve.code).toBe(1);
    const serveLines = linesOf(serve.stderr);
    expect(serveLines).toHaveLength(1);
    expect(serveLines[0]).toContain('999');

    // Refusing must not have touched the recorded schema.
    const check = new Database(databasePath, { readonly: true });
    try {
      expect(check.prepare('SELECT MAX(version) AS v FROM schema_migrations').get()).toEqual({ v: 999 });
    } finally {
      check.close();
    }
  });
});

// The two places where the process itself matters; concurrent, as each spends ~1 s starting tsx.
describe.concurrent('the real process (child processes)', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startInProcess();
  });

  afterAll(() => server.app.close());

  it('a token minted by another process from the dev secret file is accepted', async ({ expect }) => {
    const result = await runCli(['token', '--scope', 'registry:write', '--sub', 'op'], { databasePath: server.databasePath });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    const lines = linesOf(result.stdout);
    expect(lines).toHaveLength(1);
    const token = lines[0] ?? '';
    expect(jwtPayload(token)['scope']).toBe('registry:write');
    expect(jwtPayload(token)['sub']).toBe('op');
    expect((await get(`${server.url}/tool-services`, token)).status).toBe(200);
  });

  it('serve with PORT=abc exits 2 naming PORT, before creating the database', async ({ expect }) => {
    const databasePath = join(processTempDir(), 'registry.db');
    const result = await runCli(['serve'], { databasePath, env: { PORT: 'abc' } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\bPORT\b/);
    expect(lines[0]).toContain('abc');
    expect(existsSync(databasePath)).toBe(false);
  });

  it('serve writes the port it bound to PORT_FILE, and stops with one line naming PORT_FILE when it cannot', async ({ expect }) => {
    const dir = processTempDir();
    const server = await startServer({ env: { PORT_FILE: join(dir, 'bound-port') } });
    try {
      expect(readFileSync(join(dir, 'bound-port'), 'utf8')).toBe(`${server.port}\n`);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      await stopProcess(server);
    }
    const refused = await runCli(['serve'], { port: 0, env: { PORT_FILE: join(dir, 'no-such-folder', 'port') } });
    expect(refused.code).toBe(1);
    const lines = linesOf(refused.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tool-registry: PORT_FILE: cannot write .*no-such-folder/);
  });

  it('serve with PORT=0 and no PUBLIC_URL listens on a free port and gives out URLs naming it', async ({ expect }) => {
    const proc = spawnCli(['serve'], { port: 0, logLevel: 'info' });
    try {
      const deadline = Date.now() + 30_000;
      while (!proc.stdout().includes('tool-registry ready') && !proc.done && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const ready = linesOf(proc.stdout())
        .map((line) => JSON.parse(line) as { msg: string; publicUrl?: string })
        .find((entry) => entry.msg === 'tool-registry ready');
      const publicUrl = new URL(ready?.publicUrl ?? 'http://unset');
      expect(publicUrl.port).toMatch(/^[1-9][0-9]*$/);
      const document = (await (await fetch(new URL('/openapi.json', publicUrl))).json()) as { servers: { url: string }[] };
      expect(document.servers[0]?.url).toBe(publicUrl.href.replace(/\/$/, ''));
    } finally {
      await stopProcess(proc);
    }
  });
});
