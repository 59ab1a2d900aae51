/**
 * Builds the app the server runs (buildApp, src/http/app.ts) on a real SQLite file in a temp
 * folder, with an HS256 secret so tests can mint tokens; restart reopens it on the same file.
 * Most tests use app.inject; those that need a socket (streams, the bus) call app.listen.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSigner } from 'fast-jwt';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOptions } from '../../src/http/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import type { SettingName } from '../../src/config/settings.js';

export const TEST_SECRET = 'test-secret-that-is-long-enough-for-hs256-0123456789';

export interface TestApp {
  app: FastifyInstance;
  config: Config;
  dir: string;
  /** Every log line (at debug level) when built with `keepLogs`, to look for secrets; else empty. */
  logs: string[];
  /** Mints an HS256 at+jwt with the given scopes (space-joined into `scope`). */
  token(scopes: string[], claims?: Record<string, unknown>): string;
  /** Closes the app, reopens it on the same database file, and returns the new app. */
  restart(): Promise<FastifyInstance>;
  close(): Promise<void>;
}

function tempDir(prefix = 'tool-registry-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function createTestApp(
  settings: Partial<Record<SettingName, string>> = {},
  options: { keepLogs?: boolean; tracing?: BuildOptions['tracing']; resolve?: BuildOptions['resolve'] } = {},
): Promise<TestApp> {
  const dir = tempDir();
  const config = loadConfig(
    {},
    {
      DATABASE_PATH: join(dir, 'registry.db'),
      JWT_SECRET: TEST_SECRET,
      LOG_LEVEL: 'silent',
      MCP_UPSTREAM_WRITE_INTERVAL_MS: '0',
      ...settings,
    },
  );
  const logs: string[] = [];
  const build = () =>
    buildApp(config, {
      ...(options.keepLogs && { logger: { level: 'debug', stream: { write: (line: string) => void logs.push(line) } } }),
      ...(options.tracing && { tracing: options.tracing }),
      ...(options.resolve && { resolve: options.resolve }),
    });
  const handle: TestApp = {
    app: await build(),
    config,
    dir,
    logs,
    token(scopes, claims = {}) {
      const sign = createSigner({ key: TEST_SECRET, expiresIn: 3_600_000, header: { alg: 'HS256', typ: 'at+jwt' } });
      return sign({ sub: 'test-agent', scope: scopes.join(' '), ...claims });
    },
    async restart() {
      await handle.app.close();
      handle.app = await build();
      return handle.app;
    },
    async close() {
      await handle.app.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return handle;
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
