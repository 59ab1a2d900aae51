/**
 * The METRICS_PORT listener: a bare node:http server that answers `GET /metrics` (and HEAD) to
 * anyone who reaches it, and nothing else, for Prometheus on a private network. None of the
 * app's hooks run here (no tokens, no rate limits, no request metrics of its own); its limits
 * are its own and small, since only scrapers come.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ERRORS, type ErrorCode } from '../../model/errors.js';
import { PROBLEM_CONTENT_TYPE_HEADER, problemBody } from '../plugins/errors.js';

export interface MetricsSource {
  readonly contentType: string;
  text(): Promise<string>;
}

/** Scrapers, not clients: a handful of connections, and short timeouts for the idle ones. */
const MAX_CONNECTIONS = 64;
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;

function refuse(res: ServerResponse, code: ErrorCode, detail: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(problemBody(code, detail));
  res
    .writeHead(ERRORS[code].status, { ...headers, 'content-type': PROBLEM_CONTENT_TYPE_HEADER, 'content-length': Buffer.byteLength(body) })
    .end(body);
}

function answer(source: MetricsSource, req: IncomingMessage, res: ServerResponse, onError: (err: unknown) => void): void {
  const path = (req.url ?? '').split('?')[0];
  if (path !== '/metrics') return refuse(res, 'TR_ERR_ROUTE_NOT_FOUND', 'this port serves only GET /metrics');
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return refuse(res, 'TR_ERR_METHOD_NOT_ALLOWED', '/metrics answers GET and HEAD only', { allow: 'GET, HEAD' });
  source.text().then(
    (text) => {
      res.writeHead(200, { 'content-type': source.contentType, 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : text);
    },
    (err: unknown) => {
      onError(err);
      refuse(res, 'TR_ERR_INTERNAL', 'an internal error occurred; it has been logged');
    },
  );
}

/** Listens on `port` (0: a free one) at `host`; resolves once listening, rejects when it cannot. */
export async function listenForScrapes(
  source: MetricsSource,
  port: number,
  host: string,
  onError: (err: unknown) => void,
): Promise<Server> {
  const server = createServer((req, res) => answer(source, req, res, onError));
  server.maxConnections = MAX_CONNECTIONS;
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

export function addressOf(server: Server): { address: string; port: number } {
  const { address, port } = server.address() as AddressInfo;
  return { address, port };
}

/** Stops listening and drops the connections scrapers keep alive. */
export function closeListener(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
