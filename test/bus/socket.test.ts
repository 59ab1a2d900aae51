/**
 * The one reconnecting socket under every producer and consumer (src/pulsar/, issue 32), against
 * the in-process fake broker: reconnection after a drop, a failed opening step counted as a
 * failed attempt, giving up after maxRetries, and on-demand sockets that stay closed until asked.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Consumer } from '../../src/pulsar/consumer.js';
import { Producer } from '../../src/pulsar/producer.js';
import { ReconnectingSocket, type RetryInfo } from '../../src/pulsar/socket.js';
import { consumerUrl, producerUrl, publishFrame, type ReceivedMessage } from '../../src/pulsar/wire.js';
import { FakePulsar } from '../helpers/fake-pulsar.js';

const fake = new FakePulsar();
beforeAll(() => fake.start());
afterAll(() => fake.stop());

const TOPIC = 'non-persistent://tg/request/socket-test';
const fast = { connectTimeoutMs: 2000, backoff: { minMs: 10, maxMs: 20 } };

async function until(check: () => boolean, what: string): Promise<void> {
  await vi.waitFor(
    () => {
      if (!check()) throw new Error(`timed out waiting for ${what}`);
    },
    { interval: 10, timeout: 5000 },
  );
}

describe('ReconnectingSocket', () => {
  it('reconnects after the broker drops it, and says so once per drop', async () => {
    const events: string[] = [];
    const retries: RetryInfo[] = [];
    const received: ReceivedMessage[] = [];
    const consumer = new Consumer(
      { ...fast, url: consumerUrl(fake.url, TOPIC, 'drop-test', { subscriptionType: 'Exclusive' }) },
      (message) => void received.push(message),
      { open: () => events.push('open'), drop: () => events.push('drop'), retry: (info) => void retries.push(info) },
    );
    const producer = new Producer({ ...fast, url: producerUrl(fake.url, TOPIC) });
    try {
      await consumer.socket.ready();
      fake.dropConnections();
      await until(() => events.length === 3, 'the reconnection');
      expect(events).toEqual(['open', 'drop', 'open']);
      expect(retries).toMatchObject([{ dropped: true, attempt: 0 }]);
      await producer.socket.ready();
      const context = producer.nextContext();
      const ack = await producer.send(publishFrame('héllo', { id: 'm-1' }, context), context);
      expect(ack.ok).toBe(true);
      await until(() => received.length === 1, 'the message');
      expect(received[0]?.text).toBe('héllo');
      expect(received[0]?.properties.get('id')).toBe('m-1');
    } finally {
      consumer.socket.close();
      producer.close();
    }
    expect(consumer.socket.state).toBe('closed');
    await expect(consumer.socket.ready()).rejects.toThrow('closed');
  });

  it('counts a failed opening step as a failed attempt, and opens once it succeeds', async () => {
    let calls = 0;
    const retries: RetryInfo[] = [];
    const socket = new ReconnectingSocket(
      {
        ...fast,
        url: producerUrl(fake.url, TOPIC),
        whenOpen: async () => {
          if (++calls === 1) throw new Error('the subscription did not open');
        },
      },
      { retry: (info) => void retries.push(info) },
    );
    try {
      socket.start();
      await until(() => socket.open, 'the socket to open');
      expect(calls).toBe(2);
      expect(retries).toMatchObject([{ dropped: false, attempt: 1, reason: 'the subscription did not open' }]);
    } finally {
      socket.close();
    }
  });

  it('gives up after maxRetries failed attempts in a row, and closes', async () => {
    const retries: RetryInfo[] = [];
    let gaveUp: number | undefined;
    const socket = new ReconnectingSocket(
      { ...fast, url: 'ws://127.0.0.1:1/ws/v2/producer/non-persistent/tg/x/y', maxRetries: 2 },
      { retry: (info) => void retries.push(info), giveUp: (_err, attempts) => (gaveUp = attempts) },
    );
    socket.start();
    await until(() => gaveUp !== undefined, 'giving up');
    expect(gaveUp).toBe(3);
    expect(retries.map((r) => r.attempt)).toEqual([1, 2]);
    expect(retries[0]?.reason).toContain('cannot reach the broker');
    expect(socket.state).toBe('closed');
  });

  it('leaves an on-demand socket closed after a drop until it is asked for again', async () => {
    const producer = new Producer({ ...fast, url: producerUrl(fake.url, TOPIC), reconnect: 'on-demand' });
    try {
      await producer.socket.ready();
      fake.dropConnections();
      await until(() => producer.socket.state === 'reconnecting', 'the drop');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(producer.socket.open).toBe(false);
      const context = producer.nextContext();
      await expect(producer.send(publishFrame('x', {}, context), context)).rejects.toThrow('not connected');
      await producer.socket.ready();
      expect(producer.socket.open).toBe(true);
    } finally {
      producer.close();
    }
  });
});
