/**
 * Issue 33's multi-process prototype: N registry processes (`serve`, unchanged) sharing one
 * port through node:cluster (Node 20 has no `reusePort`), each holding its own read model
 * built from the same SQLite file. The primary only accepts connections and hands them out
 * round-robin; a keep-alive connection then stays with its worker, so the primary costs nothing
 * per request. Writes are not part of the prototype: each worker would write through its own
 * connection and the others would not see the change (see BENCHMARKS.md, "Every core").
 *
 *   WORKERS=2 PORT=... DATABASE_PATH=... node --import tsx bench/registry-workers.ts
 *
 * Prints `ready` on stdout once every worker listens.
 */
import cluster from 'node:cluster';

const workers = Number(process.env['WORKERS'] ?? '2');
cluster.setupPrimary({ exec: 'src/cli/main.ts', args: ['serve'] });
let listening = 0;
let stopping = false;
for (let i = 0; i < workers; i++) cluster.fork();
cluster.on('listening', () => {
  if (++listening === workers) process.stdout.write('ready\n');
});
cluster.on('exit', (worker, code, signal) => {
  if (!stopping) process.stderr.write(`registry worker ${worker.process.pid} exited (${code ?? signal})\n`);
});
const stop = () => {
  stopping = true;
  for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  setTimeout(() => process.exit(0), 2000).unref();
  cluster.on('exit', () => {
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
  });
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
