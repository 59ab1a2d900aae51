/**
 * The bridged-call benchmark's tool services, in a process of their own: two instances of the
 * same echo service that answer at once, one on topic `bench-echo` (called through the
 * registry) and one on `bench-direct` (called directly on the bus by the benchmark), so the
 * registry's response subscription sees no traffic during the direct runs.
 *
 *   node --import tsx bench/tool-service.ts <ws-url>
 */
import { runToolService } from '../src/toolkit/tool-service.js';

const url = process.argv[2] ?? 'ws://127.0.0.1:8080';
const onError = (err: unknown) => process.stderr.write(`tool service error: ${String(err)}\n`);
const services = ['bench-echo', 'bench-direct'].map((id) => runToolService({ url, id, topic: id, handler: () => 'ok', onError }));
await Promise.all(services.map((s) => s.ready));
process.stdout.write('ready\n');

const close = () => {
  Promise.all(services.map((s) => s.close())).then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGTERM', close);
process.once('SIGINT', close);
