/**
 * The direct path for bridged calls: the benchmark itself publishes the envelope on the request
 * topic and waits for the response with the same `id`, through the registry's own
 * PulsarWsClient (one producer, one response subscription), with a fixed number of calls in
 * flight. This is what a call costs on the bus without HTTP and the registry in front of it.
 */
import { randomUUID } from 'node:crypto';
import { PulsarWsClient } from '../src/bridge/pulsar-ws.js';
import { Latencies, type RunResult } from './lib.js';

export interface DirectBus {
  run(durationS: number, concurrency: number): Promise<RunResult>;
  close(): void;
}

export function directBus(url: string, topic: string): DirectBus {
  const client = new PulsarWsClient({ url, connectTimeoutMs: 10_000, subscriptionPrefix: 'bench-direct' });
  const requestQueue = `non-persistent://tg/request/${topic}`;
  const responseQueue = `non-persistent://tg/response/${topic}`;
  const body = { user: 'bench-agent', config: '{}', arguments: JSON.stringify({ text: 'hi' }) };

  const one = async () => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error('timeout')), 30_000);
    try {
      await client.call({ id: randomUUID(), requestQueue, responseQueue, body }, controller.signal);
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    async run(durationS, concurrency) {
      const latencies = new Latencies();
      let errors = 0;
      const started = performance.now();
      const deadline = started + durationS * 1000;
      const worker = async () => {
        while (performance.now() < deadline) {
          const t0 = performance.now();
          try {
            await one();
            latencies.add(performance.now() - t0);
          } catch {
            errors++;
          }
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
      const elapsedS = (performance.now() - started) / 1000;
      const { p50, p99 } = latencies.percentiles();
      return { rps: latencies.count / elapsedS, p50, p99, errors, total: latencies.count + errors, statuses: {} };
    },
    close: () => client.close(),
  };
}
