/**
 * The CLI as a user runs it: `node --import tsx src/cli/main.ts ...` as a child process, talking
 * to a real `serve` child on 127.0.0.1, with every process killed in afterAll.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seed } from './helpers/fixtures.js';
import {
  freePort,
  jwtPayload,
  killAll,
  linesOf,
  mintTokenWithCli,
  processTempDir,
  removeTempDirs,
  REPO_ROOT,
  runCli,
  startServer,
  stopProcess,
  type ServerProcess,
} from './helpers/process.js';

const SEED_DIR = join(REPO_ROOT, 'test', 'fixtures', 'seed');
const HTTP_TOOLS = ['calculator', 'file_reader', 'database_query', 'simulation_data', 'weather_forecast'] as const;

afterAll(() => {
  killAll();
  removeTempDirs();
});

describe('token mints a JWT the running registry accepts', { timeout: 60_000 }, () => {
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    server = await startServer();
  });

  afterAll(async () => {
    if (server) await stopProcess(server, 'SIGKILL').catch(() => undefined);
  });

  it('prints a token with the requested scope, sub and a one-hour expiry', async () => {
    const live = server as ServerProcess;
    const before = Math.floor(Date.now() / 1000);
    const result = await runCli(['token', '--scope', 'registry:write', '--sub', 'op', '--ttl', '1h'], { databasePath: live.databasePath });
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
    const admin = await fetch(`${live.url}/tool-services`, { headers: { authorization: `Bearer ${token}` } });
    expect(admin.status).toBe(200);
    // ...and a token without the admin scope is refused there.
    const reader = await mintTokenWithCli(live.databasePath, ['calculator:use'], 'reader');
    expect(jwtPayload(reader)['scope']).toBe('calculator:use');
    const refused = await fetch(`${live.url}/tool-services`, { headers: { authorization: `Bearer ${reader}` } });
    expect(refused.status).toBe(403);
  });
});

describe('data commands manage a running registry', { timeout: 60_000 }, () => {
  let server: ServerProcess | undefined;
  let url: string;
  let databasePath: string;
  let adminToken: string;

  /** Runs a data command against the server; the CLI mints its admin token from the dev secret. */
  const cli = (args: string[], input?: string) =>
    runCli([...args, '--url', url], { databasePath, ...(input !== undefined && { input }) });

  beforeAll(async () => {
    server = await startServer();
    url = server.url;
    databasePath = server.databasePath;
    adminToken = await mintTokenWithCli(databasePath, ['registry:write'], 'op');
  });

  afterAll(async () => {
    if (server) await stopProcess(server, 'SIGKILL').catch(() => undefined);
  });

  const adminGet = (path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${adminToken}` } });

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

    const discovery = (await (await fetch(`${url}/`)).json()) as { tools: { name: string }[] };
    expect(discovery.tools.map((t) => t.name)).toEqual(['tell-joke']);
  });

  it('put without the admin scope fails with one line and writes nothing', async () => {
    const reader = await mintTokenWithCli(databasePath, ['calculator:use'], 'reader');
    const result = await runCli(['put', 'tool/calculator', '--file', join(SEED_DIR, 'calculator.json'), '--url', url, '--token', reader], {
      databasePath,
    });
    expect(result.code).not.toBe(0);
    expect(linesOf(result.stderr)).toHaveLength(1);
    expect(result.stderr).toMatch(/403/);
    expect((await adminGet('/tools/calculator')).status).toBe(404);
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

    const discovery = (await (await fetch(`${url}/`)).json()) as { tools: { name: string }[] };
    expect(discovery.tools.map((t) => t.name)).not.toContain('tell-joke');
    expect(discovery.tools).toHaveLength(2 + HTTP_TOOLS.length);

    const result = await cli(['get', 'tool/tell-joke']);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/404/);
    expect(lines[0]).toContain('tell-joke');
  });
});

describe('data commands report an unreachable registry', { timeout: 60_000 }, () => {
  it('exits non-zero with one line naming the URL', async () => {
    const port = await freePort(); // closed again: nothing listens there
    const target = `http://127.0.0.1:${port}`;
    const result = await runCli(['list', 'tools', '--url', target]);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(target);
  });
});

describe('bad configuration stops the CLI with one line', { timeout: 60_000 }, () => {
  it('serve with PORT=abc exits 2 naming PORT', async () => {
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

  it('token refuses with one clear line when tokens come from an authorization server', async () => {
    const databasePath = join(processTempDir(), 'registry.db');
    const result = await runCli(['token', '--scope', 'registry:write'], { databasePath, env: { JWKS_URL: 'http://127.0.0.1:1/jwks' } });
    expect(result.code).toBe(2);
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('authorization server');
    expect(existsSync(databasePath)).toBe(false);
  });

  it('serve with ANONYMOUS_DISCOVERY=bogus exits 2 naming ANONYMOUS_DISCOVERY', async () => {
    const databasePath = join(processTempDir(), 'registry.db');
    const result = await runCli(['serve'], { databasePath, port: await freePort(), env: { ANONYMOUS_DISCOVERY: 'bogus' } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('ANONYMOUS_DISCOVERY');
    expect(existsSync(databasePath)).toBe(false);
  });

  it('an unknown command exits 2', async () => {
    const result = await runCli(['frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    const lines = linesOf(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('frobnicate');
  });
});

describe('migrate applies the schema once and refuses a newer one', { timeout: 60_000 }, () => {
  let databasePath: string;

  beforeAll(() => {
    databasePath = join(processTempDir(), 'registry.db');
  });

  it('applies migration 1 to a fresh database, then reports it up to date', async () => {
    const first = await runCli(['migrate'], { databasePath });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/applied migration\(s\) 1\b/);

    const second = await runCli(['migrate'], { databasePath });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/up to date/);
    expect(second.stdout).not.toMatch(/applied/);
  });

  it('stops migrate and serve on a database newer than the code', async () => {
    const db = new Database(databasePath);
    try {
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(999, 'from_the_future', new Date().toISOString());
    } finally {
      db.close();
    }

    const migrate = await runCli(['migrate'], { databasePath });
    expect(migrate.code).not.toBe(0);
    expect(migrate.code).not.toBeNull();
    expect(migrate.stdout).toBe('');
    const migrateLines = linesOf(migrate.stderr);
    expect(migrateLines).toHaveLength(1);
    expect(migrateLines[0]).toContain('999');

    const serve = await runCli(['serve'], { databasePath, port: await freePort() });
    expect(serve.code).not.toBe(0);
    expect(serve.code).not.toBeNull();
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
