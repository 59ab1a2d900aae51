/**
 * openSocket (src/pulsar/socket.ts): a reader or consumer may be sent frames right after the
 * upgrade, in the same network read as its answer. None may be lost between the socket opening
 * and the caller adding its 'message' listener after its `await`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { openSocket } from '../../src/pulsar/socket.js';

const FRAMES = 200;
let server: ReturnType<typeof createServer>;
let url: string;

beforeAll(async () => {
  server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    // Cork the socket: the upgrade's answer and every frame leave in one write.
    socket.cork();
    wss.handleUpgrade(request, socket, head, (ws) => {
      for (let i = 0; i < FRAMES; i++) ws.send(JSON.stringify({ messageId: String(i) }));
      process.nextTick(() => socket.uncork());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws/v2/reader/x`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('openSocket', () => {
  it('loses no frame sent with the upgrade answer, before the caller listens', async () => {
    for (let round = 0; round < 5; round++) {
      const ws = await openSocket(url, undefined, 2000);
      const seen: string[] = [];
      const all = new Promise<void>((resolve) =>
        ws.on('message', (data) => {
          seen.push((JSON.parse(String(data)) as { messageId: string }).messageId);
          if (seen.length === FRAMES) resolve();
        }),
      );
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, 2000))]);
      ws.terminate();
      expect(seen).toEqual(Array.from({ length: FRAMES }, (_, i) => String(i)));
    }
  });

  it('resumes the socket by itself once the caller has had its turn', async () => {
    const ws = await openSocket(url, undefined, 2000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(ws.isPaused).toBe(false);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.terminate();
  });
});
