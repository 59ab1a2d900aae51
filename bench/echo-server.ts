/**
 * The MCP benchmark's HTTP tool (bench/mcp.ts), in a process of its own: answers every POST at
 * once with its own JSON body (the call's arguments), as `application/json`.
 *
 *   node --import tsx bench/echo-server.ts <port>
 *
 * Prints `ready` on stdout once it listens on 127.0.0.1:<port>.
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 0 ? Buffer.from('{}') : Buffer.concat(chunks);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));

const close = () => server.close(() => process.exit(0));
process.once('SIGTERM', close);
process.once('SIGINT', close);
