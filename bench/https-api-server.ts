/**
 * The OpenAPI bench's REST API (bench/openapi.ts), in a process of its own: HTTPS with the key and
 * certificate files given, answering `GET /items/{id}` with a small JSON object when the request
 * carries the API key, 401 otherwise.
 *
 *   node --import tsx bench/https-api-server.ts <port> <key.pem> <cert.pem> <api key>
 *
 * Prints `ready` on stdout once it listens on 127.0.0.1:<port>.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const [port, keyFile, certFile, apiKey] = process.argv.slice(2);
const server = createServer({ key: readFileSync(String(keyFile)), cert: readFileSync(String(certFile)) }, (req, res) => {
  const match = /^\/items\/([^/?]+)/.exec(req.url ?? '');
  if (req.headers['x-api-key'] !== apiKey) return void res.writeHead(401).end();
  if (req.method !== 'GET' || !match) return void res.writeHead(404).end();
  const body = Buffer.from(JSON.stringify({ id: match[1], name: 'bench item', price: 42 }));
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));

const close = () => server.close(() => process.exit(0));
process.once('SIGTERM', close);
process.once('SIGINT', close);
