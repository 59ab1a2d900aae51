/**
 * The soak's misbehaving clients, each from a loopback address of its own (127.0.0.2 and up;
 * Linux routes all of 127/8 to lo), so that per-address limits see them as the separate
 * callers they would be in the field:
 *
 * - stalled readers: open `GET /changes?since=0` and never read a byte;
 * - connection hogs: open many sockets and send nothing, or half a request line (slowloris),
 *   reopening whatever the registry closes;
 * - disconnecting callers: call a slow tool and hang up after a few milliseconds.
 *
 * What the registry does to them is counted (sockets it closed, streams it cut off), not
 * judged: the soak judges the registry by what the well-behaved clients see.
 */
import { connect, type Socket } from 'node:net';
import { sleep } from './lib.js';

export interface MisbehaviourCounts {
  stalledReadersOpened: number;
  /** Stalled streams the registry ended or reset. */
  stalledReadersClosed: number;
  hogSocketsOpened: number;
  /** Hog sockets the registry closed (idle or header timeouts, per-address caps). */
  hogSocketsClosed: number;
  hogSocketsRefused: number;
  disconnectingCalls: number;
}

export const newCounts = (): MisbehaviourCounts => ({
  stalledReadersOpened: 0,
  stalledReadersClosed: 0,
  hogSocketsOpened: 0,
  hogSocketsClosed: 0,
  hogSocketsRefused: 0,
  disconnectingCalls: 0,
});

interface Target {
  host: string;
  port: number;
  stopped: () => boolean;
  counts: MisbehaviourCounts;
}

function open(target: Target, localAddress: string): Promise<Socket | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: target.host, port: target.port, localAddress });
    socket.once('connect', () => resolve(socket));
    socket.once('error', () => resolve(null));
  });
}

/**
 * `count` change streams replaying the whole log that are never read: the registry's writes
 * pile up in its socket buffers. Reopened (paused again) 5 s after the registry cuts one off.
 */
export async function stalledReaders(target: Target, localAddress: string, count: number, token: string): Promise<Socket[]> {
  const sockets: Socket[] = [];
  const openOne = async (): Promise<void> => {
    const socket = await open(target, localAddress);
    if (!socket) return;
    target.counts.stalledReadersOpened++;
    socket.write(`GET /changes?since=0 HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`);
    // Never read: the kernel's receive buffer fills, then the registry's send buffer.
    socket.pause();
    sockets.push(socket);
    socket.once('close', () => {
      if (target.stopped()) return;
      target.counts.stalledReadersClosed++;
      // Back after 5 s, as a client with a retry delay would be.
      if (!target.stopped()) setTimeout(() => void openOne(), 5000);
    });
    socket.on('error', () => undefined);
  };
  for (let i = 0; i < count; i++) await openOne();
  return sockets;
}

/**
 * `idle` sockets that never send anything and `slow` sockets that send a request line one
 * header byte at a time, every few seconds. Closed sockets are reopened after a second.
 */
export async function connectionHogs(target: Target, localAddress: string, idle: number, slow: number): Promise<Socket[]> {
  const sockets = new Set<Socket>();
  const openOne = async (slowloris: boolean): Promise<void> => {
    if (target.stopped()) return;
    const socket = await open(target, localAddress);
    if (!socket) {
      target.counts.hogSocketsRefused++;
      if (!target.stopped()) setTimeout(() => void openOne(slowloris), 1000);
      return;
    }
    target.counts.hogSocketsOpened++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.resume();
    let drip: NodeJS.Timeout | undefined;
    if (slowloris) {
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n');
      drip = setInterval(() => socket.write('X'), 3000);
    }
    socket.once('close', () => {
      clearInterval(drip);
      sockets.delete(socket);
      if (target.stopped()) return;
      target.counts.hogSocketsClosed++;
      if (!target.stopped()) setTimeout(() => void openOne(slowloris), 1000);
    });
  };
  for (let i = 0; i < idle; i++) await openOne(false);
  for (let i = 0; i < slow; i++) await openOne(true);
  return [...sockets];
}

/** Calls a tool that answers after 5 s, and hangs up after 20-70 ms, again and again. */
export async function disconnectingCallers(target: Target, base: string, tool: string, token: string, concurrency: number): Promise<void> {
  const one = async () => {
    while (!target.stopped()) {
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 20 + Math.random() * 50);
      target.counts.disconnectingCalls++;
      try {
        const res = await fetch(`${base}/tools/${tool}/invoke`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ sleepMs: 5000 }),
          signal: controller.signal,
        });
        await res.arrayBuffer();
      } catch {
        // the point
      } finally {
        clearTimeout(timer);
      }
      await sleep(10);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
}
