import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';

/** What answers on a probe-only connection. */
const PROBE_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Open connections, as the registry counts them. */
export interface ConnectionCounts {
  /** Ordinary connections open (at most MAX_CONNECTIONS). */
  readonly open: number;
  /** Connections on the probe headroom (at most PROBE_CONNECTIONS). */
  readonly probeOnly: number;
  /** Ordinary connections one client address holds (at most MAX_CONNECTIONS_PER_ADDRESS). */
  heldBy(address: string): number;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Open connections per client address and on the probe headroom. */
    connections: ConnectionCounts;
  }
}

/**
 * One client address must not take every connection. Each address holds at most its share
 * (MAX_CONNECTIONS_PER_ADDRESS) of MAX_CONNECTIONS; a connection past its share, or past
 * MAX_CONNECTIONS, lands on a small headroom (PROBE_CONNECTIONS) where only /healthz and
 * /readyz are answered (anything else: 503 and the connection closes), so that probes still get
 * through while one caller hogs its share; past the headroom a new connection is closed at once.
 * Counting happens on the server's 'connection' event, before any byte is parsed; `app.inject`
 * opens no socket, so only a listening server is affected.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const max = config.maxConnections;
    const { maxPerAddress, probeHeadroom } = config.connections;
    const byAddress = new Map<string, number>();
    const probeOnlySockets = new WeakSet<Socket>();
    let open = 0;
    let probeOnly = 0;
    // Node refuses past this before we see the socket; the headroom's own bound is below.
    app.server.maxConnections = max + probeHeadroom;

    app.server.on('connection', (socket: Socket) => {
      // Undefined only when the peer is already gone.
      const address = socket.remoteAddress;
      if (address === undefined) {
        socket.destroy();
        return;
      }
      const held = byAddress.get(address) ?? 0;
      if (open < max && held < maxPerAddress) {
        open++;
        byAddress.set(address, held + 1);
        socket.once('close', () => {
          open--;
          const left = (byAddress.get(address) ?? 1) - 1;
          if (left > 0) byAddress.set(address, left);
          else byAddress.delete(address);
        });
        return;
      }
      if (probeOnly < probeHeadroom) {
        probeOnly++;
        probeOnlySockets.add(socket);
        socket.once('close', () => probeOnly--);
        return;
      }
      socket.destroy();
    });

    // First among the onRequest hooks (registered before auth and rate limiting): a refusal
    // here costs no token check.
    app.addHook('onRequest', (request, reply, done) => {
      if (!probeOnlySockets.has(request.raw.socket)) {
        done();
        return;
      }
      // One request per probe-only connection: the headroom is for short visits.
      reply.header('connection', 'close');
      if (PROBE_ROUTES.has(request.routeOptions.url ?? '')) {
        done();
        return;
      }
      done(
        new RegistryError(
          'TR_ERR_UNAVAILABLE',
          'this client address holds its share of connections, or the registry holds as many as it takes; only health probes are answered on this one',
          {
            retryAfterS: 5,
          },
        ),
      );
    });

    app.decorate('connections', {
      get open() {
        return open;
      },
      get probeOnly() {
        return probeOnly;
      },
      heldBy: (address: string) => byAddress.get(address) ?? 0,
    } satisfies ConnectionCounts);
  },
  { name: 'connections', dependencies: ['errors'] },
);

/**
 * Node's socket timeouts from the config: `fastify` are Fastify options, `http` goes to
 * http.createServer. Node checks header and request deadlines every
 * `connectionsCheckingInterval` (30 s by default, which would let a header-less socket stay up
 * to 40 s with a 10 s timeout); a quarter of the headers timeout keeps the overshoot small.
 */
export function serverTimeouts(config: Config) {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, idleTimeoutMs } = config.connections;
  // Node refuses a headers timeout above the request timeout.
  const headersTimeout = Math.min(headersTimeoutMs, requestTimeoutMs);
  return {
    fastify: { requestTimeout: requestTimeoutMs, keepAliveTimeout: keepAliveTimeoutMs, connectionTimeout: idleTimeoutMs },
    http: {
      headersTimeout,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(headersTimeout / 4))),
    },
  };
}

/**
 * Held requests (blocking queries, change streams) end on their own terms (their wait, their
 * buffer, their token), not on IDLE_TIMEOUT_MS. The next request on the connection gets the
 * server's timeout again (Node resets it after keep-alive).
 */
export function exemptFromIdleTimeout(request: FastifyRequest): void {
  // `app.inject` gives a stand-in socket without timers.
  const socket = request.raw.socket as Partial<Socket> | undefined;
  socket?.setTimeout?.(0);
}
