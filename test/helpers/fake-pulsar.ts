/**
 * An in-process fake of Pulsar's WebSocket API for fast unit tests of the bridge's
 * correlation and reconnection logic. It follows the reference facts
 * (shared/reference/pulsar-websocket.md): producer and consumer URLs, publish acks matched by
 * `context`, consumer frames with base64 payloads, non-persistent delivery only to
 * subscriptions that exist, Exclusive and Shared subscriptions, refusals as HTTP statuses on
 * the upgrade. The real broker runs the same contract suite in CI.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import WebSocket, { WebSocketServer } from 'ws';

interface Subscription {
  type: 'Exclusive' | 'Shared';
  consumers: WebSocket[];
  next: number;
}

export interface PublishedMessage {
  topic: string;
  payload: string;
  properties: Record<string, string>;
}

export interface FakePulsarOptions {
  /**
   * Stage a broker's webSocketMaxTextFrameSize: a larger text frame closes the socket (1009), as
   * Jetty does; the admin API's runtime configuration then reports it (with maxMessageSize).
   */
  maxTextFrameBytes?: number;
  maxMessageBytes?: number;
}

export class FakePulsar {
  #server: Server | null = null;
  readonly #options: FakePulsarOptions;
  #wss: WebSocketServer;
  readonly #topics = new Map<string, Map<string, Subscription>>();
  readonly #sockets = new Set<WebSocket>();
  /** Every message published, in order. */
  readonly published: PublishedMessage[] = [];
  /** Set false to stage a broker that takes publishes but never acknowledges them. */
  ackPublishes = true;
  port = 0;

  constructor(options: FakePulsarOptions = {}) {
    this.#options = options;
    this.#wss = new WebSocketServer({
      noServer: true,
      ...(options.maxTextFrameBytes !== undefined && { maxPayload: options.maxTextFrameBytes }),
    });
  }

  get url(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  async start(port = 0): Promise<void> {
    const server = createServer((req, res) => {
      const { maxTextFrameBytes, maxMessageBytes = 5 * 1024 * 1024 } = this.#options;
      if (req.url === '/admin/v2/brokers/configuration/runtime' && maxTextFrameBytes !== undefined) {
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ webSocketMaxTextFrameSize: String(maxTextFrameBytes), maxMessageSize: String(maxMessageBytes) }));
        return;
      }
      res.writeHead(404).end();
    });
    server.on('upgrade', (req, socket, head) => this.#upgrade(req.url ?? '', socket, head, req));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    this.#server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Stops listening and drops every connection, as a broker going down does. */
  async stop(): Promise<void> {
    this.dropConnections();
    const server = this.#server;
    this.#server = null;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Drops every open connection but keeps listening. */
  dropConnections(): void {
    for (const ws of this.#sockets) ws.terminate();
    this.#sockets.clear();
    this.#topics.clear();
  }

  #upgrade(path: string, socket: Duplex, head: Buffer, req: Parameters<WebSocketServer['handleUpgrade']>[0]): void {
    const url = new URL(path, 'http://fake');
    const match = /^\/ws\/v2\/(producer|consumer)\/(persistent|non-persistent)\/([^/]+)\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/.exec(
      url.pathname,
    );
    const refuse = (status: number) => {
      socket.write(`HTTP/1.1 ${status} Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      socket.destroy();
    };
    if (!match) return refuse(400);
    const [, kind, domain, tenant, namespace, local, sub] = match as unknown as string[];
    const topic = `${domain}://${tenant}/${namespace}/${decodeURIComponent(local ?? '')}`;
    if (kind === 'consumer') {
      if (sub === undefined) return refuse(400);
      const type = url.searchParams.get('subscriptionType') === 'Shared' ? 'Shared' : 'Exclusive';
      const subs = this.#topics.get(topic) ?? new Map<string, Subscription>();
      this.#topics.set(topic, subs);
      const name = decodeURIComponent(sub);
      const existing = subs.get(name);
      if (existing && (existing.type === 'Exclusive' || type === 'Exclusive') && existing.consumers.length > 0) return refuse(409);
      this.#wss.handleUpgrade(req, socket, head, (ws) => {
        this.#track(ws);
        const subscription = existing ?? { type, consumers: [], next: 0 };
        subscription.consumers.push(ws);
        subs.set(name, subscription);
        ws.on('close', () => {
          subscription.consumers = subscription.consumers.filter((c) => c !== ws);
        });
      });
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      this.#track(ws);
      ws.on('message', (data) => {
        let frame: { payload?: unknown; properties?: Record<string, string>; context?: unknown };
        try {
          frame = JSON.parse(data.toString()) as typeof frame;
        } catch {
          ws.send(JSON.stringify({ result: 'send-error:3', errorMsg: 'bad JSON', context: null }));
          return;
        }
        const messageId = Buffer.from(randomUUID()).toString('base64');
        if (!this.ackPublishes) return;
        ws.send(JSON.stringify({ result: 'ok', messageId, context: frame.context }));
        const payload = String(frame.payload ?? '');
        const properties = frame.properties ?? {};
        this.published.push({ topic, payload, properties });
        this.#deliver(topic, { messageId, payload, properties, publishTime: new Date().toISOString(), redeliveryCount: 0 });
      });
    });
  }

  #deliver(topic: string, frame: Record<string, unknown>): void {
    // Non-persistent: only subscriptions that exist now get the message.
    for (const subscription of this.#topics.get(topic)?.values() ?? []) {
      const consumers = subscription.consumers.filter((c) => c.readyState === WebSocket.OPEN);
      if (consumers.length === 0) continue;
      const target = consumers[subscription.next++ % consumers.length];
      target?.send(JSON.stringify(frame));
    }
  }

  #track(ws: WebSocket): void {
    this.#sockets.add(ws);
    ws.on('close', () => this.#sockets.delete(ws));
  }
}
