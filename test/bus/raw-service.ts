/**
 * A tool service written against Pulsar's WebSocket API by hand, for the bytes the package's
 * toolkit and the reference base class never send: payloads that are not UTF-8, errors given as
 * plain strings. Works against the in-process fake and a real broker alike.
 */
import WebSocket from 'ws';
import { topicPath } from '../../src/pulsar/wire.js';

export interface RawService {
  close(): void;
}

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/**
 * Listens on non-persistent://tg/request/{topic} (Shared subscription "{topic}-request") and
 * answers every request with the payload bytes `answer` gives, on the response topic, with the
 * request's `id` property.
 */
export async function rawService(wsUrl: string, topic: string, answer: (request: Buffer) => Buffer): Promise<RawService> {
  const producer = await open(`${wsUrl}/ws/v2/producer/${topicPath(`non-persistent://tg/response/${topic}`)}`);
  const consumer = await open(
    `${wsUrl}/ws/v2/consumer/${topicPath(`non-persistent://tg/request/${topic}`)}/${encodeURIComponent(`${topic}-request`)}?subscriptionType=Shared`,
  );
  let context = 0;
  consumer.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as { messageId: string; payload: string; properties: Record<string, string> };
    consumer.send(JSON.stringify({ messageId: frame.messageId }));
    const payload = answer(Buffer.from(frame.payload, 'base64')).toString('base64');
    producer.send(JSON.stringify({ payload, properties: { id: frame.properties['id'] ?? 'unknown' }, context: String(++context) }));
  });
  return {
    close() {
      producer.close();
      consumer.close();
    },
  };
}

/** A response message's bytes: JSON text with `raw` spliced in, unencoded, where `@@` stands. */
export function responseBytes(template: string, raw: Buffer): Buffer {
  const [before = '', after = ''] = template.split('@@');
  return Buffer.concat([Buffer.from(before), raw, Buffer.from(after)]);
}
