/**
 * 10,000 blocking waiters on one registry process: the server's resident memory with them
 * held, and the time from one write to the last waiter answered. The waiters are held by a
 * separate client process (bench/waiter-client.ts), as a load generator would be.
 *
 *   node --import tsx bench/waiters.ts [--waiters=10000]
 *
 * Also run by `npm run bench` (bench/run.ts) unless --no-waiters is given.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminToken, bundle, httpTool, JWT_SECRET, token } from './data.js';
import { freePort, rssMiB, sleep, spawnNode, waitHttpOk } from './lib.js';

export interface WaitersResult {
  waiters: number;
  rssIdleMiB: number;
  rssHeldMiB: number;
  /** Server memory per held waiter (socket, request and waiter entry). */
  bytesPerWaiter: number;
  /** From the write's acknowledgement to the last waiter's answer. */
  writeToLastAnswerMs: number;
  answered: number;
}

export async function runWaitersBench(count = 10_000): Promise<WaitersResult> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-waiters-'));
  const port = await freePort();
  const server = spawnNode('src/cli/main.ts', ['serve'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_PATH: join(dir, 'registry.db'),
    JWT_SECRET,
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'warn',
    MAX_WAITERS: String(count + 1000),
    MAX_CONNECTIONS: String(count + 1000),
    // One client process holds every waiter: lift the per-caller and per-address shares.
    MAX_WAITERS_PER_CALLER: String(count + 1000),
    MAX_CONNECTIONS_PER_ADDRESS: String(count + 1000),
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitHttpOk(`${base}/healthz`, server, Date.now());
    const admin = { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' };
    const seeded = await fetch(`${base}/import`, { method: 'POST', headers: admin, body: bundle(1000) });
    if (!seeded.ok) throw new Error(`seeding failed: ${seeded.status}`);
    // The waiters' token holds a scope no tool needs yet: their view is small, so this measures
    // waking waiters, not moving bytes (10,000 copies of the 1,000-tool view are 6.6 GB, which
    // loopback on two shared cores moves in about 11 s).
    const waiterAuth = { authorization: `Bearer ${token('bench-waiter', ['bench:watched'])}` };
    const index = Number((await fetch(`${base}/`, { headers: waiterAuth })).headers.get('x-registry-index'));
    await sleep(500);
    const rssIdleMiB = rssMiB(server.pid);

    const client = spawnNode(
      'bench/waiter-client.ts',
      [String(port), String(index), String(count), token('bench-waiter', ['bench:watched'])],
      {},
    );
    const reported = new Promise<{ answered: number; failed: number; lastAnswerAt: number }>((resolve, reject) => {
      let out = '';
      client.proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve(JSON.parse(line) as { answered: number; failed: number; lastAnswerAt: number });
      });
      client.proc.once('exit', () => reject(new Error(`the waiter client exited: ${client.output()}`)));
    });
    // Wait until the server holds them all: /readyz reports the waiters it holds.
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const ready = (await (await fetch(`${base}/readyz`)).json()) as { waiters?: number };
      if ((ready.waiters ?? 0) >= count) break;
      await sleep(250);
    }
    const rssHeldMiB = rssMiB(server.pid);
    const write = await fetch(`${base}/tools/register`, {
      method: 'POST',
      headers: admin,
      body: JSON.stringify({ ...httpTool(1_000_001, 'woken'), scopes: ['bench:watched'] }),
    });
    const writtenAt = performance.timeOrigin + performance.now();
    if (!write.ok) throw new Error(`the write failed: ${write.status}`);
    const { answered, lastAnswerAt } = await Promise.race([
      reported,
      sleep(60_000).then(() => ({ answered: 0, failed: count, lastAnswerAt: 0 })),
    ]);
    await client.stop();
    return {
      waiters: count,
      rssIdleMiB,
      rssHeldMiB,
      bytesPerWaiter: Math.round(((rssHeldMiB - rssIdleMiB) * 1024 * 1024) / count),
      writeToLastAnswerMs: Math.max(0, Math.round(lastAnswerAt - writtenAt)),
      answered,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const count = Number(process.argv.find((a) => a.startsWith('--waiters='))?.slice(10) ?? 10_000);
  runWaitersBench(count).then(
    (r) => {
      console.log(JSON.stringify(r, null, 2));
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
