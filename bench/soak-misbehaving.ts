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
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { sleep } from './lib.js';

export interface MisbehaviourCounts {
  stalledReadersOpened: number;
  /** Stalled streams the registry ended or reset. */
  stalledReadersClosed: number;
  /** Seconds from opening each stalled stream to the registry's cutting it off. */
  stalledReaderLifetimesS: number[];
  hogSocketsOpened: number;
  /** Hog sockets the registry closed (idle or header timeouts, per-address caps). */
  hogSocketsClosed: number;
  hogSocketsRefused: number;
  disconnectingCalls: number;
}

export const newCounts = (): MisbehaviourCounts => ({
  stalledReadersOpened: 0,
  stalledReadersClosed: 0,
  stalledReaderLifetimesS: [],
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

/** /proc/net/tcp's form of an IPv4 address and port: little-endian hex, then the port in hex. */
const procAddress = (address: string, port: number) =>
  `${address
    .split('.')
    .reverse()
    .map((byte) => Number(byte).toString(16).padStart(2, '0'))
    .join('')
    .toUpperCase()}:${port.toString(16).padStart(4, '0').toUpperCase()}`;

/**
 * The ports of `peer` to which the server on `server` still holds an established connection,
 * from the kernel's table (Linux). A client that never reads cannot see the registry drop its
 * stream: the registry's FIN waits behind the bytes the client never takes, and the orphaned
 * socket is later discarded without a word to the client, which stays ESTABLISHED. So whether
 * the registry still holds a stalled stream is read here, as an operator would with `ss`.
 */
function heldPeerPorts(server: { host: string; port: number }, peer: string): Set<number> {
  const local = procAddress(server.host, server.port);
  const remotePrefix = procAddress(peer, 0).slice(0, 8);
  const held = new Set<number>();
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, localAddress, remoteAddress, state] = line.trim().split(/\s+/);
    // 01: ESTABLISHED
    if (localAddress === local && state === '01' && remoteAddress?.startsWith(remotePrefix))
      held.add(Number.parseInt(remoteAddress.slice(9), 16));
  }
  return held;
}

/**
 * `count` change streams replaying the whole log that are never read: the registry's writes
 * pile up in the kernel's socket buffers (about 4 MB on loopback), then in its own. Every 2 s
 * the kernel's table says which streams the registry has dropped; such a stream is closed here
 * (as a client's read timeout or TCP keepalive would) and reopened, paused again, 5 s later.
 */
export async function stalledReaders(target: Target, localAddress: string, count: number, token: string): Promise<Socket[]> {
  const sockets = new Set<Socket>();
  const openedAt = new Map<Socket, number>();
  const cutOff = (socket: Socket) => {
    const since = openedAt.get(socket) ?? NaN;
    openedAt.delete(socket);
    if (!sockets.delete(socket) || target.stopped()) return;
    target.counts.stalledReadersClosed++;
    target.counts.stalledReaderLifetimesS.push((performance.now() - since) / 1000);
    socket.destroy();
    // Back after 5 s, as a client with a retry delay would be.
    setTimeout(() => void openOne(), 5000);
  };
  const openOne = async (): Promise<void> => {
    if (target.stopped()) return;
    const socket = await open(target, localAddress);
    if (!socket) return;
    target.counts.stalledReadersOpened++;
    openedAt.set(socket, performance.now());
    socket.write(
      `GET /changes?since=0 HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
    );
    // Never read: the kernel's receive buffer fills, then the registry's send buffer.
    socket.pause();
    sockets.add(socket);
    socket.once('close', () => cutOff(socket));
    socket.on('error', () => undefined);
  };
  for (let i = 0; i < count; i++) await openOne();
  const watch = setInterval(() => {
    if (target.stopped()) {
      clearInterval(watch);
      for (const socket of sockets) socket.destroy();
      return;
    }
    const held = heldPeerPorts(target, localAddress);
    for (const socket of sockets) {
      // Only streams whose request went out long enough ago to have been accepted.
      const since = openedAt.get(socket) ?? Infinity;
      if (performance.now() - since > 2000 && socket.localPort !== undefined && !held.has(socket.localPort)) cutOff(socket);
    }
  }, 2000);
  return [...sockets];
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
