/**
 * Replicated mode's two former limits, against a real Apache Pulsar broker (test/setup/broker.ts),
 * with replicas as real processes (test/helpers/replicas.ts):
 *
 * - an import far bigger than one message (5,000 tools, several MB, against the default 1 MiB
 *   WebSocket frame) goes through one replica in parts and shows byte-identical on all three at
 *   the import's X-Registry-Index, even with one replica SIGKILLed while it holds staged parts;
 * - an MCP server registered with a credential through one replica is usable through another
 *   (the credential travelled sealed with REPLICATION_SECRET_FILE's key), and a replica with
 *   another key applies none of it (it cannot authenticate the messages: issue 29).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { killAll, processTempDir, removeTempDirs } from '../helpers/process.js';
import { startMcpUpstream, type McpUpstream } from '../helpers/mcp-upstream.js';
import { replicationKeyFile } from '../helpers/replication-key.js';
import {
  ADMIN_SCOPE,
  Replica,
  call,
  httpTool,
  mintToken,
  replicationTopic,
  sleep,
  views,
  waitForIndex,
  type Cluster,
  type View,
} from '../helpers/replicas.js';

const pulsar = inject('pulsar');
const ADMIN = mintToken([ADMIN_SCOPE], 'operator');
const cluster = (name: string): Cluster => ({ wsUrl: pulsar.wsUrl, adminUrl: pulsar.adminUrl, topic: replicationTopic(name) });

const running: Replica[] = [];
async function startReplicas(c: Cluster, ids: readonly string[], env: Record<string, string> = {}): Promise<Replica[]> {
  const replicas = await Promise.all(ids.map((id) => Replica.create(c, id, env)));
  running.push(...replicas);
  await Promise.all(replicas.map((r) => r.start()));
  await Promise.all(replicas.map((r) => r.waitReady()));
  return replicas;
}

/** A bundle of `count` HTTP tools of about 1 KB each. */
function bigBundle(prefix: string, count: number): { 'tool-services': never[]; tools: Record<string, unknown>[] } {
  const filler = 'Describes the tool at length, so that the import is several megabytes: "quoted", back\\slashed, ünïcödé and 🧰. '.repeat(
    7,
  );
  return {
    'tool-services': [],
    tools: Array.from({ length: count }, (_, i) =>
      httpTool(`${prefix}-${String(i).padStart(5, '0')}`, `${i}: ${filler}`, i % 3 === 0 ? ['alpha:read'] : []),
    ),
  };
}

/** The same GET / bytes, ETag and X-Registry-Index from every replica, at `index`. */
function expectIdentical(seen: readonly View[], index: number): View {
  const [first, ...rest] = seen;
  expect(first?.status).toBe(200);
  expect(Number(first?.index), `${first?.replica} X-Registry-Index`).toBe(index);
  for (const v of rest) {
    expect(v.index, `X-Registry-Index of ${v.replica}`).toBe(first?.index);
    expect(v.etag, `ETag of ${v.replica}`).toBe(first?.etag);
    expect(v.body === first?.body, `GET / body of ${v.replica} is byte-identical`).toBe(true);
  }
  return first as View;
}

/** Rows in a replica's staging table, read beside the running process (WAL: a reader does not block it). */
function stagedParts(databasePath: string): number {
  let db: Database.Database | undefined;
  try {
    db = new Database(databasePath, { readonly: true, fileMustExist: true });
    return db.prepare('SELECT count(*) AS n FROM replication_import_parts').pluck().get() as number;
  } catch {
    return 0;
  } finally {
    db?.close();
  }
}

if (pulsar.skip) {
  console.warn(`[bus] replication import and credential suite skipped: ${pulsar.skip}`);
  describe.skip(`replicated imports and credentials over a real Pulsar broker (skipped: ${pulsar.skip})`, () => {
    it('needs a broker', () => undefined);
  });
} else {
  describe('replicated imports and credentials over a real Pulsar broker', () => {
    afterEach(async () => {
      await Promise.all(running.splice(0).map((r) => r.kill().catch(() => undefined)));
    });
    afterAll(() => {
      killAll();
      removeTempDirs();
    });

    it('an import of 5,000 tools through one replica goes in parts and shows byte-identical on all three', async () => {
      const replicas = await startReplicas(cluster('import'), ['i1', 'i2', 'i3']);
      const input = bigBundle('big', 5000);
      const bytes = Buffer.byteLength(JSON.stringify(input));
      expect(bytes, 'several MB: many times the default 1 MiB frame').toBeGreaterThan(4 * 1024 * 1024);
      const started = Date.now();
      const res = await call((replicas[0] as Replica).url, 'POST', '/import', { token: ADMIN, body: input, timeoutMs: 180_000 });
      console.warn(`[replication] import of ${bytes} bytes answered ${res.status} in ${Date.now() - started} ms`);
      expect(res.status, res.text).toBe(200);
      expect(res.json).toMatchObject({ toolServices: { created: 0, replaced: 0 }, tools: { created: 5000, replaced: 0 } });
      const index = Number(res.headers?.get('x-registry-index'));
      expect((res.json as { index: number }).index).toBe(index);
      // Read-your-writes where it was taken: its GET / is at the import already.
      expect(Number((await views([replicas[0] as Replica]))[0]?.index)).toBe(index);
      await waitForIndex(replicas, index, 120_000);
      const view = expectIdentical(await views(replicas), index);
      expect((JSON.parse(view.body) as { tools: unknown[] }).tools).toHaveLength(5000);
      // A token view too (scopes hide a third of them), and nothing left staged.
      expectIdentical(await views(replicas, mintToken(['beta:read'], 'agent')), index);
      for (const r of replicas) expect(stagedParts(r.databasePath), `${r.id} staged parts`).toBe(0);
    }, 300_000);

    it('a replica SIGKILLed while it holds staged parts of an import converges after a restart, nothing missing', async () => {
      const replicas = await startReplicas(cluster('import-kill'), ['k1', 'k2', 'k3']);
      const [k1, , k3] = replicas as [Replica, Replica, Replica];
      let caught = 0;
      let last = { index: 0, prefix: '' };
      // The window (parts staged, the last not applied yet) is a fraction of a second: tried a few times.
      for (let attempt = 0; attempt < 4 && caught === 0; attempt++) {
        const prefix = `kill${attempt}-${randomUUID().slice(0, 4)}`;
        const importing = call(k1.url, 'POST', '/import', { token: ADMIN, body: bigBundle(prefix, 8000), timeoutMs: 180_000 });
        let staged = 0;
        while (staged === 0) {
          staged = stagedParts(k3.databasePath);
          if (staged > 0 || (await Promise.race([importing.then(() => true), sleep(2).then(() => false)]))) break;
        }
        if (staged > 0) {
          const killed = await k3.kill();
          expect(killed.signal).toBe('SIGKILL');
          caught = staged;
        }
        const res = await importing;
        expect(res.status, res.text).toBe(200);
        last = { index: Number(res.headers?.get('x-registry-index')), prefix };
        if (caught > 0) console.warn(`[replication] k3 SIGKILLed with ${staged} part(s) of ${prefix} staged (attempt ${attempt + 1})`);
      }
      expect(caught, 'k3 was killed while it held staged parts').toBeGreaterThan(0);
      await k3.start();
      await k3.waitReady();
      await waitForIndex(replicas, last.index, 120_000);
      const view = expectIdentical(await views(replicas), last.index);
      const names = new Set((JSON.parse(view.body) as { tools: { name: string }[] }).tools.map((t) => t.name));
      const missing = Array.from({ length: 8000 }, (_, i) => `${last.prefix}-${String(i).padStart(5, '0')}`).filter((n) => !names.has(n));
      expect(missing, 'tools of the import missing after the restart').toEqual([]);
      for (const r of replicas) expect(stagedParts(r.databasePath), `${r.id} staged parts`).toBe(0);
    }, 480_000);

    it('an MCP server with a credential registered through one replica is usable through another; a replica with another key applies none of it', async () => {
      const keyPath = join(processTempDir('tool-registry-key-'), 'replication.key');
      expect(
        await main(['replication-key', keyPath], {
          env: {},
          stdout: () => undefined,
          stderr: () => undefined,
          readStdin: async () => undefined,
        }),
      ).toBe(0);
      const bearer = `upstream-${randomUUID()}`;
      const upstream: McpUpstream = await startMcpUpstream({
        bearer,
        tools: [
          {
            tool: { name: 'search', description: 'Searches.', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } },
            handler: (args) => ({ content: [{ type: 'text' as const, text: `found: ${String(args['query'])}` }] }),
          },
        ],
      });
      try {
        const c = cluster('credential');
        const replicas = await startReplicas(c, ['m1', 'm2', 'm3'], { REPLICATION_SECRET_FILE: keyPath });
        const [m1, m2] = replicas as [Replica, Replica, Replica];
        const put = await call(m1.url, 'PUT', '/mcp-servers/gh', {
          token: ADMIN,
          body: { url: upstream.url, policy: 'auto', credential: { bearer }, prefix: 'gh_' },
        });
        expect(put.status, put.text).toBe(201);
        expect(put.text).not.toContain(bearer);
        // m2 lists the server's tools with its own connection, which needs the credential.
        await vi.waitFor(
          async () => {
            const tool = await call(m2.url, 'GET', '/tools/gh_search');
            expect(tool.status, tool.text).toBe(200);
          },
          { timeout: 60_000, interval: 200 },
        );
        const server = await call(m2.url, 'GET', '/mcp-servers/gh', { token: ADMIN });
        expect(server.json).toMatchObject({ descriptor: { credential: { set: true } } });
        const before = upstream.calls.length;
        const invoked = await call(m2.url, 'POST', '/tools/gh_search/invoke', { token: ADMIN, body: { query: 'replicas' } });
        expect(invoked.status, invoked.text).toBe(200);
        expect(invoked.json).toMatchObject({ tool: 'gh_search', result: 'found: replicas' });
        expect(upstream.calls.length).toBe(before + 1);
        // Every request the upstream got carried the credential: none went without it.
        expect(new Set(upstream.authorizations)).toEqual(new Set([`Bearer ${bearer}`]));

        // A fourth replica with another key cannot authenticate the others' messages: it refuses
        // them all, the server with its sealed credential included, and says so.
        const stranger = await Replica.create(c, 'm4', { REPLICATION_SECRET_FILE: replicationKeyFile('stranger') });
        running.push(stranger);
        await stranger.start();
        const { ready } = await stranger.waitReady();
        expect(ready.replication?.refused.count, "the others' markers and writes are refused").toBeGreaterThanOrEqual(4);
        expect(ready.replication?.refused.last?.reason).toBe('unknown-key');
        expect((await call(stranger.url, 'GET', '/mcp-servers/gh', { token: ADMIN })).status, 'the server is not applied').toBe(404);
        expect(stranger.logs(200)).toMatch(/replication: refused a message, not applied: the message is signed with key id/);
        expect(stranger.logs(500)).not.toContain(bearer);
        for (const r of replicas) expect(r.logs(2000)).not.toContain(bearer);
      } finally {
        await upstream.stop();
      }
    }, 300_000);
  });
}
