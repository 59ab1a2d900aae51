/**
 * Against a real Apache Pulsar broker (started by test/setup/broker.ts): the bridge contract,
 * the reference Python tool service answering a call made through the registry, and a broker
 * restart in the middle of a run. One file, so the restart cannot disturb another file's calls.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { runToolService } from '../../src/toolkit/tool-service.js';
import { bearer, createTestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { defineBridgeContract } from './contract.js';

const pulsar = inject('pulsar');
const ROOT = join(import.meta.dirname, '..', '..');

if (pulsar.skip) {
  console.warn(`[bus] real-broker suite skipped: ${pulsar.skip}`);
  describe.skip(`call bridge over a real Pulsar broker (skipped: ${pulsar.skip})`, () => {
    it('needs a broker', () => undefined);
  });
} else {
  defineBridgeContract('a real Pulsar broker', () => ({ wsUrl: pulsar.wsUrl }));

  describe('the reference Python tool service (trustgraph-base DynamicToolService)', () => {
    const children: ChildProcess[] = [];
    afterAll(() => {
      for (const child of children) child.kill('SIGKILL');
    });

    it.skipIf(pulsar.python === undefined)(
      `answers tell-joke called through the registry${pulsar.pythonSkip ? ` (skipped: ${pulsar.pythonSkip})` : ''}`,
      async () => {
        const topic = `joke-py-${randomUUID().slice(0, 8)}`;
        const child = spawn(
          pulsar.python ?? 'python3',
          [
            join(ROOT, 'test', 'interop', 'joke_service.py'),
            '-p',
            pulsar.brokerUrl,
            '--pulsar-admin-url',
            pulsar.adminUrl,
            '--id',
            topic,
            '--topic',
            topic,
            '--no-metrics',
            '--no-loki-enabled',
          ],
          { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
        );
        children.push(child);
        let stderr = '';
        child.stderr?.on('data', (d: Buffer) => {
          stderr = (stderr + d.toString()).slice(-4000);
        });
        const t = await createTestApp({ PULSAR_WS_URL: pulsar.wsUrl, RATE_LIMIT_MAX: '0' });
        try {
          const admin = bearer(t.token(['registry:write']));
          expect(
            (
              await t.app.inject({
                method: 'PUT',
                url: `/tool-services/${topic}`,
                headers: admin,
                payload: { id: topic, topic, 'config-params': [{ name: 'style', required: false }] },
              })
            ).statusCode,
          ).toBe(201);
          // The service's test hook `fail` is an argument the tool declares, so that the registry's
          // argument check lets it through to the service.
          const joke = seed('tell-joke') as { arguments: unknown[] };
          const fail = { name: 'fail', type: 'string', description: 'Makes the test service raise this text', required: false };
          expect(
            (
              await t.app.inject({
                method: 'POST',
                url: '/tools/register',
                headers: admin,
                payload: { ...joke, arguments: [...joke.arguments, fail], service: topic, timeoutMs: 2000 },
              })
            ).statusCode,
          ).toBe(201);
          // Non-persistent requests sent before the service has subscribed are dropped, so retry
          // until the service is up (it starts in a few seconds).
          const deadline = Date.now() + 90_000;
          let res = await t.app.inject({
            method: 'POST',
            url: '/tools/tell-joke/invoke',
            headers: bearer(t.token([], { sub: 'alice' })),
            payload: { topic: 'programming' },
          });
          while (res.statusCode === 504 && Date.now() < deadline && child.exitCode === null) {
            res = await t.app.inject({
              method: 'POST',
              url: '/tools/tell-joke/invoke',
              headers: bearer(t.token([], { sub: 'alice' })),
              payload: { topic: 'programming' },
            });
          }
          expect(res.statusCode, `${res.body}\n--- python stderr ---\n${stderr}`).toBe(200);
          expect(res.json().result).toBe(
            "Hey alice! Here's a pun for you: Why do programmers prefer dark mode? Because light attracts bugs!",
          );
          const failing = await t.app.inject({
            method: 'POST',
            url: '/tools/tell-joke/invoke',
            headers: bearer(t.token([])),
            payload: { topic: 'errors', fail: 'boom' },
          });
          expect(failing.statusCode).toBe(502);
          expect(failing.json().serviceError).toEqual({ type: 'tool-service-error', message: 'boom' });
        } finally {
          child.kill('SIGTERM');
          await t.close();
        }
      },
      150_000,
    );
  });

  describe('a broker restart during a run', () => {
    it('fails calls fast with 503 while the broker is down, keeps discovery up, and recovers with no registry restart', async () => {
      const scriptEnv = pulsar.scriptEnv;
      if (!scriptEnv) {
        console.warn('[bus] broker restart test skipped: the broker was given by PULSAR_WS_URL, not started here');
        return;
      }
      const env = { ...process.env, ...scriptEnv };
      const script = (cmd: string) =>
        spawnSync('bash', [join(ROOT, 'scripts', 'pulsar.sh'), cmd], { cwd: ROOT, env, encoding: 'utf8', timeout: 300_000 });
      const t = await createTestApp({ PULSAR_WS_URL: pulsar.wsUrl, RATE_LIMIT_MAX: '0', BUS_CONNECT_TIMEOUT_MS: '2000' });
      const topic = `restart-${randomUUID().slice(0, 8)}`;
      let service = runToolService({ url: pulsar.wsUrl, id: topic, topic, handler: () => 'before' });
      try {
        await service.ready;
        const admin = bearer(t.token(['registry:write']));
        await t.app.inject({ method: 'PUT', url: `/tool-services/${topic}`, headers: admin, payload: { id: topic, topic } });
        const { style: _s, ...tool } = seed('tell-joke');
        await t.app.inject({
          method: 'POST',
          url: '/tools/register',
          headers: admin,
          payload: { ...tool, name: topic, service: topic, timeoutMs: 5000 },
        });
        const token = bearer(t.token([]));
        const call = () => t.app.inject({ method: 'POST', url: `/tools/${topic}/invoke`, headers: token, payload: { topic: 'x' } });
        expect((await call()).json().result).toBe('before');

        expect(script('stop').status).toBe(0);
        await service.close();
        const started = Date.now();
        const down = await call();
        expect(down.statusCode, down.body).toBe(503);
        expect(Date.now() - started).toBeLessThan(4000);
        expect((await t.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
        expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json().checks.bridge).toBe('disconnected');

        const restart = script('start');
        expect(restart.status, restart.stderr).toBe(0);
        service = runToolService({ url: pulsar.wsUrl, id: topic, topic, handler: () => 'after' });
        await service.ready;
        const again = await vi.waitFor(
          async () => {
            const answer = await call();
            expect(answer.statusCode, answer.body).toBe(200);
            return answer;
          },
          { timeout: 60_000, interval: 500 },
        );
        expect(again.json().result).toBe('after');
      } finally {
        await service.close();
        await t.close();
      }
    }, 300_000);
  });
}
