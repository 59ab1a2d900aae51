/**
 * Replicated mode (issue 14) against a real Apache Pulsar broker (test/setup/broker.ts): registry
 * replicas as real processes, each on its own database, on one persistent topic (a fresh one per
 * test). A replica SIGKILLed mid-stream and restarted; conflicting writes on two replicas at
 * once; the broker stopped and started again under write load; a new replica catching up from
 * the topic; a database written outside replication refused at startup.
 *
 * What is checked after each run: every replica answers GET / (anonymous, and with a token)
 * with the same bytes, ETag and X-Registry-Index, and every acknowledged write is there (see
 * Workload in test/helpers/replicas.ts for how a write whose answer was lost is told apart).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, inject, it, vi } from 'vitest';
import { killAll, removeTempDirs, runCli, startServer, stopProcess } from '../helpers/process.js';
import { replicationKeyFile } from '../helpers/replication-key.js';
import {
  ADMIN_SCOPE,
  Replica,
  SECRET,
  Workload,
  barrier,
  busTool,
  call,
  checkAgainstModel,
  httpTool,
  mintToken,
  replicationTopic,
  serviceDescriptor,
  sleep,
  views,
  waitForIndex,
  type Cluster,
  type View,
} from '../helpers/replicas.js';

const pulsar = inject('pulsar');
const ROOT = join(import.meta.dirname, '..', '..');

const ADMIN = mintToken([ADMIN_SCOPE], 'operator');
/** Views a token with some scopes sees (X-Hidden-Tools counts the rest). */
const VIEW_TOKENS = [mintToken(['alpha:read'], 'agent-a'), mintToken(['alpha:read', 'beta:read'], 'agent-ab')];

const cluster = (name: string): Cluster => ({ wsUrl: pulsar.wsUrl, adminUrl: pulsar.adminUrl, topic: replicationTopic(name) });

/** The replicas of the running test, stopped after it so that they leave the CPU to the next. */
const running: Replica[] = [];

async function startReplicas(c: Cluster, ids: readonly string[]): Promise<Replica[]> {
  const replicas = await Promise.all(ids.map((id) => Replica.create(c, id)));
  running.push(...replicas);
  await Promise.all(replicas.map((r) => r.start()));
  await Promise.all(replicas.map((r) => r.waitReady()));
  return replicas;
}

/** Seconds since the test began at each step, printed at its end (where the minutes go). */
function timeline(test: string) {
  const start = Date.now();
  const laps: string[] = [];
  return {
    lap: (what: string) => void laps.push(`${what} ${((Date.now() - start) / 1000).toFixed(1)} s`),
    print: () => console.warn(`[replication] ${test}: ${laps.join(', ')}`),
  };
}

/** Names per writer: `<prefix>-w<writer>-<n>`. */
const writerNames = (prefix: string, writers: number, perWriter: number) =>
  Array.from({ length: writers }, (_, w) => Array.from({ length: perWriter }, (_, n) => `${prefix}-w${w}-${n}`));

/** The same bytes and headers from every replica; returns the first view. */
function expectSameViews(seen: readonly View[], what: string): View {
  const [first, ...rest] = seen;
  if (!first) throw new Error('no views');
  expect(first.status, `${what}: ${first.replica} answered ${first.status}`).toBe(200);
  for (const v of rest) {
    expect(v.status, `${what}: ${v.replica}`).toBe(200);
    expect(v.index, `${what}: X-Registry-Index of ${v.replica} vs ${first.replica}`).toBe(first.index);
    expect(v.etag, `${what}: ETag of ${v.replica} vs ${first.replica}`).toBe(first.etag);
    expect(v.hidden, `${what}: X-Hidden-Tools of ${v.replica} vs ${first.replica}`).toBe(first.hidden);
    // Compared as strings (a diff on failure), then byte for byte.
    expect(v.body, `${what}: GET / body of ${v.replica} vs ${first.replica}`).toBe(first.body);
  }
  return first;
}

/**
 * Waits for a barrier write to reach every replica, then checks that they agree byte for byte
 * (anonymous and token views, and GET /tools/{name} for some names, anonymous and admin), and
 * that they all sit at the barrier's index. Returns the anonymous body.
 */
async function expectConverged(
  replicas: readonly Replica[],
  sampleNames: readonly string[],
  scopedTools = true,
): Promise<{ index: number; body: string }> {
  const index = await barrier(replicas[0] as Replica, ADMIN);
  await waitForIndex(replicas, index);
  const anonymous = expectSameViews(await views(replicas), 'anonymous GET /');
  expect(Number(anonymous.index), 'every replica at the barrier write, the last on the topic').toBe(index);
  for (const [i, token] of VIEW_TOKENS.entries()) {
    const seen = expectSameViews(await views(replicas, token), `GET / with token ${i}`);
    if (scopedTools) expect(seen.hidden, 'the token view hides some tools').not.toBe('0');
  }
  for (const name of sampleNames) {
    for (const token of [undefined, ADMIN]) {
      const answers = await Promise.all(replicas.map((r) => call(r.url, 'GET', `/tools/${name}`, { token })));
      const what = `GET /tools/${name} (${token ? 'admin' : 'anonymous'})`;
      expect(answers[0]?.status, what).toBe(200);
      for (const [j, a] of answers.entries()) {
        expect(a.status, `${what} on ${replicas[j]?.id}`).toBe(200);
        expect(a.headers?.get('etag'), `${what}: ETag on ${replicas[j]?.id}`).toBe(answers[0]?.headers?.get('etag'));
        expect(a.text, `${what}: body on ${replicas[j]?.id}`).toBe(answers[0]?.text);
      }
    }
  }
  return { index, body: anonymous.body };
}

/** Checks the model of the acknowledged writes against the converged GET / body. */
function expectModelHolds(workload: Workload, body: string): void {
  expect(workload.problems, 'answers that contradict the earlier acknowledged writes').toEqual([]);
  const { checked, skipped, problems } = checkAgainstModel(workload.expected, body);
  console.warn(
    `[replication] model: ${checked} names checked, ${skipped} skipped (a write without an answer after their last acknowledged one)`,
  );
  expect(problems, 'acknowledged writes missing or wrong on the replicas').toEqual([]);
  expect(checked, 'most names have a known outcome').toBeGreaterThan(workload.expected.size / 2);
}

/** Names the model says are live, for the GET /tools/{name} checks. */
function presentNames(workload: Workload, count: number): string[] {
  return [...workload.expected]
    .filter(([, e]) => e.state === 'present')
    .slice(0, count)
    .map(([name]) => name);
}

async function createService(via: Replica, id: string): Promise<void> {
  const res = await call(via.url, 'PUT', `/tool-services/${id}`, { token: ADMIN, body: serviceDescriptor(id) });
  expect(res.status, res.text).toBe(201);
}

if (pulsar.skip) {
  console.warn(`[bus] replication suite skipped: ${pulsar.skip}`);
  describe.skip(`replicated mode over a real Pulsar broker (skipped: ${pulsar.skip})`, () => {
    it('needs a broker', () => undefined);
  });
} else {
  describe('replicated mode over a real Pulsar broker', () => {
    afterEach(async () => {
      await Promise.all(running.splice(0).map((r) => r.kill().catch(() => undefined)));
    });
    afterAll(() => {
      killAll();
      removeTempDirs();
    });

    it('three replicas, one SIGKILLed mid-stream and restarted: all end byte-identical with every acknowledged write', async () => {
      const time = timeline('kill test');
      const replicas = await startReplicas(cluster('kill'), ['r1', 'r2', 'r3']);
      time.lap('3 replicas ready');
      const [r1, r2, r3] = replicas as [Replica, Replica, Replica];
      const service = `svc-${randomUUID().slice(0, 8)}`;
      await createService(r1, service);
      const live = new Set<Replica>(replicas);
      const workload = new Workload({ names: writerNames('k', 5, 10), service, token: ADMIN, targets: () => [...live] });
      workload.start();
      try {
        await workload.until(() => workload.acknowledged >= 80, '80 acknowledged writes');
        // SIGKILL r3 while writes flow, through it too.
        const beforeKill = workload.records.filter((w) => w.replica === 'r3' && w.acknowledged).length;
        live.delete(r3);
        const killed = await r3.kill();
        expect(killed.signal).toBe('SIGKILL');
        time.lap(`r3 killed after ${workload.acknowledged} writes`);
        const atKill = workload.acknowledged;
        await workload.until(() => workload.acknowledged >= atKill + 80, '80 more writes to r1 and r2');
        // Restarted on the same database and port; caught up while the others take writes.
        await r3.start();
        const { ready } = await r3.waitReady();
        expect(ready.replication).toMatchObject({ replica: 'r3', caughtUp: true, broker: 'connected' });
        time.lap(`r3 ready again after ${workload.acknowledged} writes`);
        live.add(r3);
        const atRestart = workload.records.length;
        await workload.until(
          () =>
            workload.records.slice(atRestart).filter((w) => w.replica === 'r3' && w.acknowledged).length >= 25 &&
            workload.acknowledged >= atKill + 160,
          'writes through the restarted r3',
        );
        await workload.stop();
        time.lap(`writers stopped after ${workload.acknowledged} writes`);
        const lost = workload.records.filter((w) => !w.acknowledged);
        console.warn(
          `[replication] kill test: ${workload.records.length} writes, ${workload.acknowledged} acknowledged, ${lost.length} without a decision (${lost.map((w) => `${w.op} ${w.name} via ${w.replica}: ${w.status || w.code || 'no answer'}`).join('; ')}); r3 took ${beforeKill} before the kill`,
        );
        expect(beforeKill, 'r3 took writes before it was killed').toBeGreaterThan(0);
        // Writes that lost their answer can only be those sent to r3 around the kill.
        expect(
          lost.filter((w) => w.replica !== 'r3'),
          'r1 and r2 answered every write',
        ).toEqual([]);
      } finally {
        await workload.stop();
      }
      const { body } = await expectConverged(replicas, presentNames(workload, 6));
      expectModelHolds(workload, body);
      // Message-bus tools on the service, with their invoke endpoint on the shared PUBLIC_URL.
      expect([...workload.expected.values()].some((e) => e.state === 'present' && e.kind === 'bus')).toBe(true);
      for (const r of [r1, r2, r3]) expect((await r.readiness()).replication).toMatchObject({ caughtUp: true, broker: 'connected' });
      time.lap('checked');
      time.print();
    }, 300_000);

    it('a tool service deleted on one replica while a tool is registered on it on another: decided by the topic, the same everywhere', async () => {
      const replicas = await startReplicas(cluster('conflict'), ['a', 'b', 'c']);
      const [a, b] = replicas as [Replica, Replica, Replica];
      const rounds: { service: string; tool: string; winner: 'delete' | 'register' }[] = [];
      for (let round = 0; round < 8; round++) {
        const service = `cs-${round}-${randomUUID().slice(0, 6)}`;
        const tool = `ct-${round}-${randomUUID().slice(0, 6)}`;
        // The roles alternate between a and b; c only follows the topic.
        const [deleter, registrar] = round % 2 === 0 ? [a, b] : [b, a];
        await createService(deleter, service);
        // Both sent at once, the delete held back a little more each round, so that both
        // orders come up (which one wins a round is up to the topic).
        const [del, reg] = await Promise.all([
          sleep(round < 2 ? 0 : 2 ** (round - 2)).then(() => call(deleter.url, 'DELETE', `/tool-services/${service}`, { token: ADMIN })),
          call(registrar.url, 'POST', '/tools/register', { token: ADMIN, body: busTool(tool, `round ${round}`, service, []) }),
        ]);
        const pair = `delete ${del.status} ${del.code ?? ''} / register ${reg.status} ${reg.code ?? ''}: ${del.text} ${reg.text}`;
        if (del.status === 200) {
          // The delete came first on the topic: the tool names a service that is gone.
          expect(reg.status, pair).toBeGreaterThanOrEqual(400);
          expect(reg.status, pair).toBeLessThan(500);
          rounds.push({ service, tool, winner: 'delete' });
        } else {
          // The registration came first: the service is in use.
          expect(reg.status, pair).toBe(201);
          expect(del.status, pair).toBe(409);
          expect(del.code, pair).toBe('TR_ERR_IN_USE');
          expect((del.json as { tools?: string[] }).tools, pair).toEqual([tool]);
          rounds.push({ service, tool, winner: 'register' });
        }
      }
      console.warn(
        `[replication] conflict rounds: ${rounds.filter((r) => r.winner === 'delete').length} won by the delete, ${rounds.filter((r) => r.winner === 'register').length} by the registration`,
      );
      await expectConverged(
        replicas,
        rounds.filter((r) => r.winner === 'register').map((r) => r.tool),
        false,
      );
      // Every replica decided every round the same way as the replica that answered.
      for (const round of rounds) {
        for (const r of replicas) {
          const tool = await call(r.url, 'GET', `/tools/${round.tool}`);
          const service = await call(r.url, 'GET', `/tool-services/${round.service}`, { token: ADMIN });
          expect(tool.status, `${round.tool} on ${r.id} (${round.winner} won)`).toBe(round.winner === 'register' ? 200 : 404);
          expect(service.status, `${round.service} on ${r.id} (${round.winner} won)`).toBe(round.winner === 'register' ? 200 : 404);
        }
      }
      const services = await Promise.all(replicas.map((r) => call(r.url, 'GET', '/tool-services', { token: ADMIN })));
      for (const s of services) expect(s.text, 'GET /tool-services').toBe(services[0]?.text);
    }, 180_000);

    it('the broker stopped under write load: writes 503 at once, reads and readiness go on, and it all resumes with no replica restart', async () => {
      const scriptEnv = pulsar.scriptEnv;
      if (!scriptEnv) {
        console.warn('[bus] replication broker-restart test skipped: the broker was given by PULSAR_WS_URL, not started here');
        return;
      }
      const script = (command: 'stop' | 'start', extra: Record<string, string> = {}) =>
        new Promise<{ status: number | null; output: string }>((resolve) => {
          const child = spawn('bash', [join(ROOT, 'scripts', 'pulsar.sh'), command], {
            cwd: ROOT,
            env: { ...process.env, ...scriptEnv, ...extra },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          let output = '';
          child.stdout.on('data', (d: Buffer) => (output += d.toString()));
          child.stderr.on('data', (d: Buffer) => (output += d.toString()));
          child.on('close', (status) => resolve({ status, output }));
        });
      const time = timeline('outage test');
      const replicas = await startReplicas(cluster('outage'), ['o1', 'o2', 'o3']);
      time.lap('3 replicas ready');
      const service = `svc-${randomUUID().slice(0, 8)}`;
      await createService(replicas[0] as Replica, service);
      // While the broker is down the writers retry every 250 ms, as a client would.
      const workload = new Workload({
        names: writerNames('o', 4, 10),
        service,
        token: ADMIN,
        targets: () => replicas,
        pauseAfterFailureMs: 250,
      });
      let brokerUp = true;
      workload.start();
      try {
        await workload.until(() => workload.acknowledged >= 80, '80 acknowledged writes');
        // Stopped while the writers write (asynchronously: they go on meanwhile).
        time.lap(`broker stopping after ${workload.acknowledged} writes`);
        const stopped = await script('stop');
        brokerUp = false;
        expect(stopped.status, stopped.output).toBe(0);
        time.lap('broker stopped');
        // Every replica sees the broker gone, and stays ready (it is caught up) and readable.
        for (const r of replicas) {
          const state = await vi.waitFor(
            async () => {
              const seen = await r.readiness();
              expect(seen.replication?.broker, `${r.id} /readyz with the broker down`).toBe('disconnected');
              return seen;
            },
            { timeout: 30_000, interval: 100 },
          );
          expect(state.status, `${r.id} /readyz with the broker down`).toBe(200);
          expect(state.replication, `${r.id} /readyz with the broker down`).toMatchObject({ caughtUp: true, broker: 'disconnected' });
        }
        const downSince = Date.now();
        for (const r of replicas) {
          for (let i = 0; i < 3; i++) {
            const name = `down-${r.id}-${i}`;
            const res = await call(r.url, 'PUT', `/tools/${name}`, {
              token: ADMIN,
              body: httpTool(name, 'written while the broker is down', []),
            });
            expect(res.status, `${r.id}: ${res.text}`).toBe(503);
            expect(res.code).toBe('TR_ERR_UNAVAILABLE');
            expect(res.headers?.get('content-type')).toMatch(/^application\/problem\+json/);
            expect(res.headers?.get('retry-after')).toMatch(/^\d+$/);
            expect(res.ms, `${r.id}: a write with the broker down answered in ${res.ms.toFixed(0)} ms`).toBeLessThan(2000);
            const read = await call(r.url, 'GET', '/');
            expect(read.status, `${r.id} GET / with the broker down`).toBe(200);
            expect((await r.readiness()).status).toBe(200);
          }
        }
        // The writers' own writes sent since: all refused, each at once.
        await workload.until(() => workload.records.filter((w) => w.startedAt >= downSince).length >= 20, 'writes during the outage');
        const during = workload.records.filter((w) => w.startedAt >= downSince);
        const slowest = Math.max(...during.map((w) => w.ms));
        console.warn(`[replication] broker down: ${during.length} writes by the writers, slowest answered in ${slowest.toFixed(0)} ms`);
        expect(
          during
            .filter((w) => w.status !== 503 || w.code !== 'TR_ERR_UNAVAILABLE')
            .map((w) => `${w.op} ${w.name} via ${w.replica}: ${w.status}`),
        ).toEqual([]);
        expect(slowest, 'the slowest refused write (ms)').toBeLessThan(2000);
        for (const v of await views(replicas)) expect(v.status).toBe(200);

        // Started again on the same data (the topic survives); no replica is restarted.
        time.lap('broker starting');
        const started = await script('start', { PULSAR_WIPE_DATA: '0' });
        expect(started.status, started.output).toBe(0);
        brokerUp = true;
        time.lap('broker started');
        const restartedAt = Date.now();
        await workload.until(
          () =>
            replicas.every((r) =>
              workload.records.some((w) => w.replica === r.id && w.startedAt >= restartedAt && w.status >= 200 && w.status < 300),
            ),
          'a write taken again by every replica',
          90_000,
        );
        time.lap('every replica took a write again');
        const atRecovery = workload.acknowledged;
        await workload.until(() => workload.acknowledged >= atRecovery + 60, '60 more writes after the restart');
        await workload.stop();
      } finally {
        await workload.stop();
        if (!brokerUp) {
          // Leave a broker for the next test even when this one failed.
          const again = await script('start', { PULSAR_WIPE_DATA: '0' });
          if (again.status !== 0) console.warn(`[bus] could not start the broker again: ${again.output}`);
        }
      }
      console.warn(`[replication] outage test: ${workload.records.length} writes, ${workload.acknowledged} acknowledged`);
      time.lap('writers stopped');
      const { body } = await expectConverged(replicas, presentNames(workload, 4));
      expectModelHolds(workload, body);
      for (const r of replicas) expect((await r.readiness()).replication).toMatchObject({ caughtUp: true, broker: 'connected' });
      // Refused at once means not written: none of them shows up later.
      for (const r of replicas) {
        for (let i = 0; i < 3; i++) expect((await call(r.url, 'GET', `/tools/down-${r.id}-${i}`)).status).toBe(404);
      }
      time.lap('checked');
      time.print();
    }, 480_000);

    it('a new replica on an empty database reads the topic from the start and is ready only once caught up', async () => {
      const time = timeline('catch-up test');
      const c = cluster('catchup');
      const replicas = await startReplicas(c, ['n1', 'n2', 'n3']);
      time.lap('3 replicas ready');
      const service = `svc-${randomUUID().slice(0, 8)}`;
      await createService(replicas[0] as Replica, service);
      const workload = new Workload({ names: writerNames('n', 4, 12), service, token: ADMIN, targets: () => replicas });
      workload.start();
      try {
        await workload.until(() => workload.acknowledged >= 150, '150 acknowledged writes');
      } finally {
        await workload.stop();
      }
      const index = await barrier(replicas[0] as Replica, ADMIN);
      await waitForIndex(replicas, index);

      time.lap(`${workload.acknowledged} writes applied everywhere`);
      const fourth = await Replica.create(c, 'n4');
      running.push(fourth);
      await fourth.start();
      time.lap('n4 listening');
      const { seen, ready } = await fourth.waitReady();
      time.lap('n4 ready');
      console.warn(`[replication] the new replica answered /readyz ${seen.join(',')} before it was ready`);
      // Ready means caught up: its catalogue is at the last write on the topic already.
      expect(ready.index, `n4's index when /readyz first answered 200`).toBe(index);
      expect(ready.replication).toMatchObject({ replica: 'n4', caughtUp: true, appliedIndex: index });
      const all = [...replicas, fourth];
      const { body } = await expectConverged(all, presentNames(workload, 4));
      expectModelHolds(workload, body);
      time.lap('checked');
      time.print();
    }, 180_000);

    it('refuses at startup a database holding writes made outside replication, naming the fix', async () => {
      const plain = await startServer({ startupDeadlineMs: 90_000, env: { JWT_SECRET: SECRET, RATE_LIMIT_MAX: '0' } });
      const res = await call(plain.url, 'POST', '/tools/register', {
        token: ADMIN,
        body: httpTool('made-outside', 'written without replication', []),
      });
      expect(res.status, res.text).toBe(201);
      await stopProcess(plain);
      const c = cluster('refuse');
      const refused = await runCli(['serve'], {
        databasePath: plain.databasePath,
        env: {
          PULSAR_WS_URL: c.wsUrl,
          PULSAR_ADMIN_URL: c.adminUrl,
          REPLICATION_TOPIC: c.topic,
          REPLICA_ID: 'refused',
          REPLICATION_SECRET_FILE: replicationKeyFile(),
          JWT_SECRET: SECRET,
          PORT: '0',
        },
        timeoutMs: 30_000,
      });
      // A setting's mistake, as every other DATABASE_PATH problem: exit 2.
      expect(refused.code, `${refused.stdout}\n${refused.stderr}`).toBe(2);
      const lines = refused.stderr.trim().split('\n');
      expect(lines, refused.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/DATABASE_PATH/);
      expect(lines[0]).toMatch(/export/);
    }, 60_000);
  });
}
