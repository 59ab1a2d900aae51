/**
 * Issue 33: the two per-request cuts of the second pass, each timed in a loop on a real Fastify
 * request and reply (inside one handler, so neither sockets nor the machine's other load come
 * in between), the way before against the way after, alternating, median of the rounds:
 *
 * - the headers of a token view's 304: five `reply.header` calls with the strings built per
 *   request (before) against one `reply.headers(block)` of a block looked up in a WeakMap (after);
 * - the route's config read six times per request: `request.routeOptions.config` (before) against
 *   `routeConfig(request)` (after, src/http/plugins/route-config.ts).
 *
 *   node --import tsx bench/hot-path-micro.ts [iterations per round=200000] [rounds=9]
 */
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import routeConfigPlugin, { routeConfig } from '../src/http/plugins/route-config.js';
import { viewCachePolicy } from '../src/http/conditional.js';
import { median } from './lib.js';
import { f1, table } from './report.js';

const iterations = Number(process.argv[2] ?? '200000');
const rounds = Number(process.argv[3] ?? '9');

const view = { etag: '"6RxqRrTBs2f-1WsOmU2RbdRkIYUDWXPf"', index: 1234, hidden: 17 };
const policy = viewCachePolicy(0);

function headersBefore(reply: FastifyReply, tokenView: boolean, anonymousMaxAgeS: number): void {
  reply.header('etag', view.etag).header('x-registry-index', String(view.index));
  if (tokenView) reply.header('x-hidden-tools', String(view.hidden));
  reply.header('vary', 'Authorization');
  reply.header(
    'cache-control',
    tokenView ? 'private, no-cache' : anonymousMaxAgeS > 0 ? `public, max-age=${anonymousMaxAgeS}` : 'public, no-cache',
  );
}

const blocks = new WeakMap<object, [Record<string, string> | undefined, Record<string, string> | undefined]>();
function headersAfter(reply: FastifyReply, tokenView: boolean): void {
  let kinds = blocks.get(view);
  if (kinds === undefined) {
    kinds = [undefined, undefined];
    blocks.set(view, kinds);
  }
  const slot = tokenView ? 1 : 0;
  let block = kinds[slot];
  if (block === undefined) {
    block = Object.freeze({
      etag: view.etag,
      'x-registry-index': String(view.index),
      ...(tokenView && { 'x-hidden-tools': String(view.hidden) }),
      ...(tokenView ? policy.token : policy.anonymous),
    });
    kinds[slot] = block;
  }
  reply.headers(block);
}

function configBefore(request: FastifyRequest): number {
  let n = 0;
  // auth's onRequest (2), auth's preParsing, the rate limit (2), the metrics: six reads.
  if (request.routeOptions.config.auth !== false) n++;
  if (request.routeOptions.config.auth === false) n++;
  if (request.routeOptions.config.admin !== undefined) n++;
  if (request.routeOptions.config.rateLimit === false) n++;
  if (request.routeOptions.config.admin !== undefined) n++;
  if (request.routeOptions.url !== undefined) n++;
  return n;
}

function configAfter(request: FastifyRequest): number {
  let n = 0;
  if (routeConfig(request).auth !== false) n++;
  if (routeConfig(request).auth === false) n++;
  if (routeConfig(request).admin !== undefined) n++;
  if (routeConfig(request).rateLimit === false) n++;
  if (routeConfig(request).admin !== undefined) n++;
  if (routeConfig(request).url !== undefined) n++;
  return n;
}

/** Nanoseconds per call of `fn`, median of the rounds, the two ways alternating. */
function time(before: () => unknown, after: () => unknown): [number, number] {
  const runs: [number[], number[]] = [[], []];
  const once = (fn: () => unknown) => {
    const started = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) fn();
    return Number(process.hrtime.bigint() - started) / iterations;
  };
  once(before);
  once(after);
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      runs[0].push(once(before));
      runs[1].push(once(after));
    } else {
      runs[1].push(once(after));
      runs[0].push(once(before));
    }
  }
  return [median(runs[0]), median(runs[1])];
}

const app = Fastify();
await app.register(routeConfigPlugin);
const rows: string[][] = [];
app.get('/', (request, reply) => {
  const [hb, ha] = time(
    () => headersBefore(reply, true, 0),
    () => headersAfter(reply, true),
  );
  rows.push(["a token view's 304 headers (5)", f1(hb), f1(ha), f1(ha - hb)]);
  const [cb, ca] = time(
    () => configBefore(request),
    () => configAfter(request),
  );
  rows.push(["the route's config, six reads", f1(cb), f1(ca), f1(ca - cb)]);
  reply.send('ok');
});
await app.inject('/');
await app.close();
const t = table(['per request', 'before ns', 'after ns', 'after - before ns'], rows);
process.stdout.write(`${iterations} calls a round, median of ${rounds} rounds, ${process.version}\n${t.text}\n\n${t.markdown}\n`);
