/**
 * The client side of the waiters benchmark, in a process of its own so that it does not share
 * the registry's event loop accounting with the benchmark driver:
 *
 *   node --import tsx bench/waiter-client.ts <port> <index> <count> <token>
 *
 * Holds `count` blocking queries open, and prints one JSON line when all have been answered:
 * {"answered", "lastAnswerAt"} with lastAnswerAt in milliseconds since the epoch (sub-ms).
 */
import { Agent, request } from 'node:http';

const [portText, indexText, countText, token] = process.argv.slice(2);
const port = Number(portText);
const count = Number(countText);
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
let answered = 0;
let failed = 0;
let lastAnswerAt = 0;

const finish = () => {
  process.stdout.write(`${JSON.stringify({ answered, failed, lastAnswerAt })}\n`);
  process.exit(0);
};

for (let i = 0; i < count; i++) {
  const req = request(
    { host: '127.0.0.1', port, path: `/?index=${indexText}&wait=5m`, agent, headers: { authorization: `Bearer ${token}` } },
    (res) => {
      res.resume();
      res.on('end', () => {
        answered++;
        lastAnswerAt = performance.timeOrigin + performance.now();
        if (answered + failed === count) finish();
      });
    },
  );
  req.on('error', () => {
    failed++;
    if (answered + failed === count) finish();
  });
  req.end();
}
setTimeout(finish, 300_000).unref();
