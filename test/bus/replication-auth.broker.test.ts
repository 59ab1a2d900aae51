/**
 * Issue 29, replication messages authenticated, against a real Apache Pulsar broker
 * (test/setup/broker.ts): three replicas sharing one key, and messages produced straight onto
 * their topic through Pulsar's WebSocket API, as an intruder with produce rights would: one
 * signed with a key no replica holds, one with no MAC, one whose MAC was made for other content,
 * and one signed with the replicas' own key but stamped a year ahead. Every replica refuses each
 * (nothing applied, /readyz, /metrics and /audit say so), a normal write after them applies on
 * all three, their views stay byte-identical, and a fourth replica reading the topic from the
 * start decides the same way. It also proves the broker's publish time is what the stamp bound
 * reads: every normal write is checked against it.
 */
import { createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import WebSocket from 'ws';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { topicPath } from '../../src/pulsar/wire.js';
import { ReplicationKeys } from '../../src/replication/message-auth.js';
import { killAll, removeTempDirs } from '../helpers/process.js';
import { replicationKey } from '../helpers/replication-key.js';
import {
  ADMIN_SCOPE,
  Replica,
  barrier,
  call,
  httpTool,
  mintToken,
  replicationTopic,
  views,
  waitForIndex,
  type Cluster,
  type View,
} from '../helpers/replicas.js';

const pulsar = inject('pulsar');
const ADMIN = mintToken([ADMIN_SCOPE], 'operator');
const YEAR_MS = 365 * 86_400_000;

const running: Replica[] = [];
async function startReplicas(c: Cluster, ids: readonly string[]): Promise<Replica[]> {
  const replicas = await Promise.all(ids.map((id) => Replica.create(c, id)));
  running.push(...replicas);
  await Promise.all(replicas.map((r) => r.start()));
  await Promise.all(replicas.map((r) => r.waitReady()));
  return replicas;
}

/** A producer on the topic, as any client with produce rights has: resolves each send with its message id. */
async function rawProducer(
  c: Cluster,
): Promise<{ send(text: string, properties: Record<string, string>): Promise<string>; close(): void }> {
  const ws = new WebSocket(`${c.wsUrl}/ws/v2/producer/${topicPath(c.topic)}`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const acks = new Map<string, (frame: { result: string; messageId?: string; errorMsg?: string }) => void>();
  ws.on('message', (data) => {
    const frame = JSON.parse(String(data)) as { result: string; messageId?: string; errorMsg?: string; context: string };
    acks.get(frame.context)?.(frame);
  });
  let context = 0;
  return {
    send(text, properties) {
      const id = String(++context);
      return new Promise((resolve, reject) => {
        acks.set(id, (frame) =>
          frame.result === 'ok' && frame.messageId
            ? resolve(frame.messageId)
            : reject(new Error(`${frame.result}: ${frame.errorMsg ?? ''}`)),
        );
        ws.send(JSON.stringify({ payload: Buffer.from(text).toString('base64'), properties, context: id }));
      });
    },
    close: () => ws.close(),
  };
}

/** A tool.put as a replica writes it (src/model/replication.ts). */
const put = (name: string, at = new Date().toISOString()) =>
  JSON.stringify({
    v: 1,
    op: 'tool.put',
    write: `intruder-${name}`,
    origin: 'intruder',
    at,
    target: name,
    body: httpTool(name, `written by an intruder: ${name}`, []),
  });
const sign = (key: KeyObject, topic: string, text: string) => new ReplicationKeys(key).sign(topic, Buffer.from(text));

function expectIdentical(seen: readonly View[]): void {
  const [first, ...rest] = seen;
  expect(first?.status).toBe(200);
  for (const v of rest) {
    expect(v.index, `X-Registry-Index of ${v.replica}`).toBe(first?.index);
    expect(v.etag, `ETag of ${v.replica}`).toBe(first?.etag);
    expect(v.body === first?.body, `GET / body of ${v.replica} is byte-identical`).toBe(true);
  }
}

if (pulsar.skip) {
  console.warn(`[bus] replication authentication suite skipped: ${pulsar.skip}`);
  describe.skip(`replication messages authenticated over a real Pulsar broker (skipped: ${pulsar.skip})`, () => {
    it('needs a broker', () => undefined);
  });
} else {
  describe('replication messages authenticated over a real Pulsar broker (issue 29)', () => {
    afterEach(async () => {
      await Promise.all(running.splice(0).map((r) => r.kill().catch(() => undefined)));
    });
    afterAll(() => {
      killAll();
      removeTempDirs();
    });

    it('a message forged without the key, unsigned, altered, or stamped a year ahead is refused on every replica; the write after them applies', async () => {
      const c: Cluster = { wsUrl: pulsar.wsUrl, adminUrl: pulsar.adminUrl, topic: replicationTopic('auth') };
      const replicas = await startReplicas(c, ['r1', 'r2', 'r3']);
      const [r1] = replicas as [Replica, Replica, Replica];
      const shared = replicationKey();
      const intruder = await rawProducer(c);
      try {
        await intruder.send(put('forged'), sign(createSecretKey(randomBytes(32)), c.topic, put('forged')));
        await intruder.send(put('unsigned'), {});
        await intruder.send(put('altered'), sign(shared, c.topic, put('original')));
        const ahead = put('ahead', new Date(Date.now() + YEAR_MS).toISOString());
        await intruder.send(ahead, sign(shared, c.topic, ahead));
      } finally {
        intruder.close();
      }
      // A normal write after them, through a replica: it applies everywhere.
      const index = await barrier(r1, ADMIN);
      await waitForIndex(replicas, index);
      const seen = await views(replicas);
      expectIdentical(seen);
      expect(Number(seen[0]?.index)).toBe(index);

      const check = async (r: Replica) => {
        for (const name of ['forged', 'unsigned', 'altered', 'original', 'ahead'])
          expect((await call(r.url, 'GET', `/tools/${name}`)).status, `${r.id}: ${name}`).toBe(404);
        const ready = await r.readiness();
        expect(ready.status, `${r.id} /readyz`).toBe(200);
        expect(ready.replication?.refused, `${r.id} refused`).toMatchObject({ count: 4, last: { reason: 'stamp-ahead' } });
        const metrics = await call(r.url, 'GET', '/metrics', { token: ADMIN });
        for (const reason of ['unknown-key', 'unsigned', 'bad-mac', 'stamp-ahead'])
          expect(metrics.text, `${r.id} metrics`).toContain(`tool_registry_replication_refused_total{reason="${reason}"} 1`);
        const audit = await call(r.url, 'GET', '/audit?action=replication.refused', { token: ADMIN });
        const reasons = (audit.json as { entries: { detail: string }[] }).entries.map((e) => e.detail.split(':')[0]);
        expect(reasons, `${r.id} audit`).toEqual(['stamp-ahead', 'bad-mac', 'unsigned', 'unknown-key']);
        // The year-ahead stamp moved no clock: the write after it is stamped now.
        const listed = (await call(r.url, 'GET', '/')).json as { tools: { name: string; updatedAt: string }[] };
        expect(listed.tools.map((t) => t.name)).toEqual([expect.stringMatching(/^barrier-/)]);
        for (const t of listed.tools) expect(Date.parse(t.updatedAt), `${r.id}: ${t.name} stamped`).toBeLessThan(Date.now() + 60_000);
      };
      for (const r of replicas) await check(r);

      // A replica started later reads it all from the start and decides the same way.
      const late = await Replica.create(c, 'r4');
      running.push(late);
      await late.start();
      await late.waitReady();
      const all = [...replicas, late];
      await waitForIndex(all, index);
      expectIdentical(await views(all));
      await check(late);
    }, 300_000);
  });
}
