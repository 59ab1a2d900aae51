/**
 * Durability of the real process: every write the server acknowledged survives a SIGKILL, a
 * SIGTERM shuts down cleanly, and the dev secret is private. These spawn `tool-registry serve`
 * as a child process on 127.0.0.1 and a temp database.
 */
import { existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seed } from '../helpers/fixtures.js';
import {
  killAll,
  mintTokenWithCli,
  processTempDir,
  removeTempDirs,
  startServer,
  stopProcess,
  type ServerProcess,
} from '../helpers/process.js';

const SERVICES = ['joke-service', 'custom-rag'] as const;
const SEED_TOOLS = [
  'calculator',
  'file_reader',
  'database_query',
  'simulation_data',
  'weather_forecast',
  'tell-joke',
  'query-customers',
  'query-products',
] as const;
const BURST = 200;
const CONCURRENCY = 16;

interface Acknowledged {
  name: string;
  descriptor: Record<string, unknown>;
  scopes: string[];
  kind: 'http' | 'tool-service';
}

function burstTool(i: number): Record<string, unknown> {
  const scopes = i % 3 === 0 ? [] : i % 3 === 1 ? ['burst:read'] : ['burst:read', 'burst:write'];
  return {
    name: `burst_tool_${String(i).padStart(3, '0')}`,
    endpoint: `/tools/burst/${i}`,
    scopes,
    description: `Generated tool number ${i}`,
    parameters: { value: { type: 'string', description: `input for tool ${i}` } },
    returns: 'result',
  };
}

async function send(url: string, method: string, path: string, token: string, body: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Runs the jobs with at most `limit` in flight; rejects on the first failure. */
async function withConcurrency<T>(items: readonly T[], limit: number, job: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await job(item);
    }
  });
  await Promise.all(workers);
}

describe('acknowledged writes survive a SIGKILL', { timeout: 60_000 }, () => {
  let server: ServerProcess | undefined;
  let databasePath: string;
  let token: string;
  const acknowledged: Acknowledged[] = [];

  beforeAll(async () => {
    databasePath = join(processTempDir(), 'registry.db');
    // Dev mode: no JWT_SECRET, so the server writes a secret file beside the database.
    // 210 writes in a second from one caller: the write rate limit is not what this test is about.
    server = await startServer({ databasePath, env: { RATE_LIMIT_WRITE_MAX: '10000' } });
    token = await mintTokenWithCli(databasePath, ['registry:write'], 'op');
  });

  afterAll(async () => {
    if (server) await stopProcess(server, 'SIGKILL').catch(() => undefined);
    killAll();
    removeTempDirs();
  });

  it('acknowledges every registration with 201, then the process is SIGKILLed', async () => {
    const live = server as ServerProcess;
    for (const id of SERVICES) {
      const response = await send(live.url, 'PUT', `/tool-services/${id}`, token, seed(id));
      expect(response.status, await response.clone().text()).toBe(201);
    }
    await withConcurrency(SEED_TOOLS, CONCURRENCY, async (name) => {
      const descriptor = seed(name);
      const response = await send(live.url, 'POST', '/tools/register', token, descriptor);
      expect(response.status, await response.clone().text()).toBe(201);
      const body = (await response.json()) as { name: string; kind: 'http' | 'tool-service' };
      expect(body.name).toBe(name);
      acknowledged.push({ name, descriptor, scopes: (descriptor['scopes'] as string[] | undefined) ?? [], kind: body.kind });
    });
    const burst = Array.from({ length: BURST }, (_, i) => burstTool(i));
    await withConcurrency(burst, CONCURRENCY, async (descriptor) => {
      const response = await send(live.url, 'POST', '/tools/register', token, descriptor);
      expect(response.status, await response.clone().text()).toBe(201);
      const body = (await response.json()) as { name: string; kind: 'http' | 'tool-service' };
      acknowledged.push({ name: body.name, descriptor, scopes: descriptor['scopes'] as string[], kind: body.kind });
    });
    expect(acknowledged).toHaveLength(SEED_TOOLS.length + BURST);

    // No graceful shutdown: the process gets no chance to flush or close the database.
    const exit = await stopProcess(live, 'SIGKILL');
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    // The connection was never closed, so SQLite's write-ahead log is still there to recover.
    expect(existsSync(`${databasePath}-wal`)).toBe(true);
  });

  it('lists every acknowledged tool and service after a restart on the same database', async () => {
    expect(acknowledged).toHaveLength(SEED_TOOLS.length + BURST);
    server = await startServer({ databasePath });

    const discovery = await fetch(`${server.url}/`);
    expect(discovery.status).toBe(200);
    const listed = ((await discovery.json()) as { tools: { name: string; scopes: string[]; kind: string }[] }).tools;
    expect(listed.map((t) => t.name).sort()).toEqual(acknowledged.map((a) => a.name).sort());
    for (const tool of listed) {
      const ack = acknowledged.find((a) => a.name === tool.name);
      expect(tool.scopes, tool.name).toEqual(ack?.scopes);
      expect(tool.kind, tool.name).toBe(ack?.kind);
    }

    const stats = (await (await fetch(`${server.url}/stats`)).json()) as {
      total_tools: number;
      total_tool_services: number;
      tools_by_kind: Record<string, number>;
      scope_usage: Record<string, number>;
    };
    const expectedScopeUsage: Record<string, number> = {};
    for (const a of acknowledged) for (const s of new Set(a.scopes)) expectedScopeUsage[s] = (expectedScopeUsage[s] ?? 0) + 1;
    expect(stats.total_tools).toBe(SEED_TOOLS.length + BURST);
    expect(stats.total_tool_services).toBe(SERVICES.length);
    expect(stats.tools_by_kind).toEqual({ http: 5 + BURST, 'tool-service': 3, mcp: 0 });
    expect(stats.scope_usage).toEqual(expectedScopeUsage);

    // The token minted before the crash still works: the dev secret file persisted too.
    const services = await fetch(`${server.url}/tool-services`, { headers: { authorization: `Bearer ${token}` } });
    expect(services.status).toBe(200);
    const body = (await services.json()) as { toolServices: { id: string; descriptor: unknown }[] };
    expect(body.toolServices.map((s) => s.id).sort()).toEqual([...SERVICES].sort());
    for (const s of body.toolServices) expect(s.descriptor).toMatchObject(seed(s.id));

    // Stored descriptors came back intact, not just the names (the store fills in defaults
    // such as host and port, so every field that was sent must be there unchanged).
    const exported = await fetch(`${server.url}/export`, { headers: { authorization: `Bearer ${token}` } });
    expect(exported.status).toBe(200);
    const bundle = (await exported.json()) as { tools: { name: string }[] };
    const byName = new Map(bundle.tools.map((t) => [t.name, t]));
    for (const a of acknowledged) expect(byName.get(a.name), a.name).toMatchObject(a.descriptor);
  });
});

describe('SIGTERM shuts down cleanly', { timeout: 60_000 }, () => {
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopProcess(server, 'SIGKILL').catch(() => undefined);
    killAll();
    removeTempDirs();
  });

  it('exits 0 when idle and leaves an intact, checkpointed database', async () => {
    const databasePath = join(processTempDir(), 'registry.db');
    server = await startServer({ databasePath, logLevel: 'info' });
    const token = await mintTokenWithCli(databasePath, ['registry:write'], 'op');
    const response = await send(server.url, 'POST', '/tools/register', token, seed('calculator'));
    expect(response.status).toBe(201);

    const exit = await stopProcess(server, 'SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(server.stdout()).toContain('shutting down');
    expect(server.stderr()).toBe('');

    // A clean close checkpoints the write-ahead log into the database file and removes it.
    expect(existsSync(`${databasePath}-wal`)).toBe(false);
    const db = new Database(databasePath, { readonly: true, fileMustExist: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      const rows = db.prepare("SELECT name, status FROM tools WHERE status = 'active'").all();
      expect(rows).toEqual([{ name: 'calculator', status: 'active' }]);
    } finally {
      db.close();
    }
  });
});

describe('SIGTERM with a tool call that does not end', { timeout: 60_000 }, () => {
  let server: ServerProcess | undefined;
  let tool: Server | undefined;

  afterAll(async () => {
    if (server) await stopProcess(server, 'SIGKILL').catch(() => undefined);
    tool?.closeAllConnections();
    await new Promise((resolve) => tool?.close(resolve));
    killAll();
    removeTempDirs();
  });

  it('exits 1 after SHUTDOWN_TIMEOUT_MS, not after the call timeout, keeping every acknowledged write', async () => {
    let called!: () => void;
    const calling = new Promise<void>((resolve) => (called = resolve));
    // Takes the call and never answers it.
    tool = createServer(() => called());
    await new Promise<void>((resolve) => tool?.listen(0, '127.0.0.1', resolve));
    const databasePath = join(processTempDir(), 'registry.db');
    server = await startServer({ databasePath, logLevel: 'info', env: { SHUTDOWN_TIMEOUT_MS: '1000', TOOL_CALL_TIMEOUT_MS: '60000' } });
    const admin = await mintTokenWithCli(databasePath, ['registry:write'], 'op');
    const hanging = { ...seed('calculator'), name: 'hangs', scopes: [], host: '127.0.0.1', port: (tool.address() as AddressInfo).port };
    expect((await send(server.url, 'POST', '/tools/register', admin, hanging)).status).toBe(201);
    const call = send(server.url, 'POST', '/tools/hangs/invoke', admin, { expression: '1' }).catch(() => 'cut');
    await calling;

    const started = Date.now();
    const exit = await stopProcess(server, 'SIGTERM', 20_000);
    expect(exit).toEqual({ code: 1, signal: null });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(server.stdout()).toContain('requests still in flight after SHUTDOWN_TIMEOUT_MS');
    expect(await call).toBe('cut');
    const db = new Database(databasePath, { readonly: true, fileMustExist: true });
    try {
      expect(db.prepare("SELECT name FROM tools WHERE status = 'active'").all()).toEqual([{ name: 'hangs' }]);
    } finally {
      db.close();
    }
  });
});

describe('the dev-mode secret file is private', { timeout: 60_000 }, () => {
  let server: ServerProcess | undefined;

  afterAll(async () => {
    if (server) await stopProcess(server, 'SIGKILL').catch(() => undefined);
    killAll();
    removeTempDirs();
  });

  it('is created beside the database with mode 0600', async () => {
    const databasePath = join(processTempDir(), 'registry.db');
    const secretPath = join(dirname(databasePath), 'registry.secret');
    expect(existsSync(secretPath)).toBe(false);
    server = await startServer({ databasePath });
    expect(existsSync(secretPath)).toBe(true);
    expect(statSync(secretPath).mode & 0o777).toBe(0o600);
  });
});
