/**
 * One persistent topic behind Pulsar's WebSocket producer and reader endpoints, in process, for
 * fast tests of the Replicator (src/replication/) without a broker: a producer's message is
 * acknowledged with a real MessageIdData id (ledger 7, entry n) and kept with its properties and
 * its publish time (when it was taken, as a broker stamps it); a reader gets every message after
 * the id it names (or from the start), in order. What the real broker does beyond
 * that is covered by test/bus/replication*.broker.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket, { WebSocketServer } from 'ws';

export interface TopicEntry {
  messageId: string;
  key: string;
  /** The payload as the producer sent it (UTF-8 text of the base64). */
  text: string;
  properties: Record<string, string>;
  /** When the topic took it (ISO 8601), as readers are told. */
  publishTime: string;
}

/** MessageIdData as protobuf: ledgerId (field 1), entryId (field 2), both varints. */
function messageIdOf(ledgerId: number, entryId: number): string {
  const varint = (value: number): number[] => {
    const out: number[] = [];
    let v = value;
    do {
      const byte = v & 0x7f;
      v = Math.floor(v / 128);
      out.push(v > 0 ? byte | 0x80 : byte);
    } while (v > 0);
    return out;
  };
  return Buffer.from([0x08, ...varint(ledgerId), 0x10, ...varint(entryId)]).toString('base64');
}

export class FakeTopic {
  readonly entries: TopicEntry[] = [];
  /** Payloads (as JSON text) over this many bytes are refused as too large, as a broker's maxMessageSize. */
  maxMessageBytes = Infinity;
  /** The topic's clock against the process's (publish times): -600_000 is a broker ten minutes behind the writers. */
  clockOffsetMs = 0;
  readonly #server: Server;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #readers = new Set<{ ws: WebSocket; next: number }>();
  port = 0;

  constructor() {
    this.#server = createServer((_req, res) => res.writeHead(404).end());
    this.#server.on('upgrade', (req, socket, head) => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const kind = /^\/ws\/v2\/(producer|reader)\//.exec(url.pathname)?.[1];
      if (kind === undefined) {
        socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
        return;
      }
      this.#wss.handleUpgrade(req, socket, head, (ws) =>
        kind === 'producer' ? this.#producer(ws) : this.#reader(ws, url.searchParams.get('messageId') ?? 'earliest'),
      );
    });
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const ws of this.#wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Appends a message as another writer would (a foreign or hand-made one); `publishTime` defaults to the topic's now. */
  append(
    text: string,
    key = 'test',
    properties: Record<string, string> = {},
    publishTime = new Date(Date.now() + this.clockOffsetMs).toISOString(),
  ): string {
    const messageId = messageIdOf(7, this.entries.length);
    this.entries.push({ messageId, key, text, properties, publishTime });
    for (const reader of this.#readers) this.#deliver(reader);
    return messageId;
  }

  /** Every message's payload parsed. */
  events(): Record<string, unknown>[] {
    return this.entries.map((e) => JSON.parse(e.text) as Record<string, unknown>);
  }

  #producer(ws: WebSocket): void {
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { payload: string; key: string; context: string; properties?: Record<string, string> };
      const text = Buffer.from(frame.payload, 'base64').toString('utf8');
      if (Buffer.byteLength(text) > this.maxMessageBytes) {
        ws.send(JSON.stringify({ result: 'send-error:3', errorMsg: 'Message size is bigger than the maximum', context: frame.context }));
        return;
      }
      const messageId = this.append(text, frame.key, frame.properties ?? {});
      ws.send(JSON.stringify({ result: 'ok', messageId, context: frame.context }));
    });
  }

  #reader(ws: WebSocket, from: string): void {
    const start = from === 'earliest' ? 0 : this.entries.findIndex((e) => e.messageId === from) + 1;
    const reader = { ws, next: start };
    this.#readers.add(reader);
    ws.on('close', () => this.#readers.delete(reader));
    ws.on('message', () => undefined);
    // As a broker does: messages come after the reader is set up, not with the upgrade's answer.
    setTimeout(() => this.#deliver(reader), 20);
  }

  #deliver(reader: { ws: WebSocket; next: number }): void {
    while (reader.next < this.entries.length && reader.ws.readyState === WebSocket.OPEN) {
      const entry = this.entries[reader.next++] as TopicEntry;
      reader.ws.send(
        JSON.stringify({
          messageId: entry.messageId,
          payload: Buffer.from(entry.text).toString('base64'),
          properties: entry.properties,
          publishTime: entry.publishTime,
          key: entry.key,
        }),
      );
    }
  }
}
