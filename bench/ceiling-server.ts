/**
 * The ceiling: a bare Fastify process that answers with precomputed bytes the registry
 * returned, with the same headers. No auth, no catalogue, no database: what serving those
 * bytes costs on this machine with this framework.
 *
 *   node --import tsx bench/ceiling-server.ts <spec.json>
 *
 * spec.json (every part optional but port):
 *   port
 *   views:    [{ authorization, bodyFile, headers }]   GET / chosen by the Authorization header
 *   exact:    { bodiesFile, entries: [{ url, status, headers, offset, length }] }
 *             GET / and GET /tools/:name chosen by the request URL as sent (path and query);
 *             a slice of bodiesFile each
 *   write:    { status, bodyFile, headers }            PUT /tools/:name (the JSON body is parsed)
 *   register: { status, bodyFile, headers }            POST /tools/register (the body is parsed)
 *   mcp:      { status, bodyFile, headers }            POST /mcp (the body is parsed), e.g. a tools/list answer
 *   mcpPages: { headers, pages: [{ cursor, bodyFile }] }
 *             POST /mcp chosen by the body's params.cursor (null: none), e.g. every page of a tools/list walk
 *   workers:  N > 1 runs N processes sharing the port (node:cluster)
 *
 * Either way, `GET /` and the exact answers give 304 when If-None-Match equals their ETag.
 * Prints `ready` on stdout once every process listens.
 */
import cluster from 'node:cluster';
import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply } from 'fastify';

interface Answer {
  status: number;
  bodyFile: string;
  headers: Record<string, string>;
}
interface ViewSpec {
  authorization: string;
  bodyFile: string;
  headers: Record<string, string>;
}
interface ExactEntry {
  url: string;
  status: number;
  headers: Record<string, string>;
  offset: number;
  length: number;
}
export interface CeilingSpec {
  port: number;
  views?: ViewSpec[];
  exact?: { bodiesFile: string; entries: ExactEntry[] };
  write?: Answer;
  register?: Answer;
  mcp?: Answer;
  mcpPages?: { headers: Record<string, string>; pages: { cursor: string | null; bodyFile: string }[] };
  workers?: number;
}

interface Prepared {
  body: Buffer;
  headers: Record<string, string>;
  status: number;
  etag: string | undefined;
}

const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as CeilingSpec;
const workers = spec.workers ?? 1;

if (workers > 1 && cluster.isPrimary) {
  let listening = 0;
  let stopping = false;
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('listening', () => {
    if (++listening === workers) process.stdout.write('ready\n');
  });
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) process.stderr.write(`ceiling worker ${worker.process.pid} exited (${code ?? signal})\n`);
  });
  const stop = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), 200).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} else {
  await serve();
  // Under cluster the primary reports readiness for all.
  if (workers <= 1) process.stdout.write('ready\n');
}

async function serve(): Promise<void> {
  const prepare = (a: Answer): Prepared => ({
    body: readFileSync(a.bodyFile),
    headers: a.headers,
    status: a.status,
    etag: a.headers['etag'],
  });
  const views = new Map((spec.views ?? []).map((v) => [v.authorization, prepare({ ...v, status: 200 })]));
  const exact = new Map<string, Prepared>();
  if (spec.exact) {
    const bodies = readFileSync(spec.exact.bodiesFile);
    for (const e of spec.exact.entries) {
      exact.set(e.url, {
        body: bodies.subarray(e.offset, e.offset + e.length),
        headers: e.headers,
        status: e.status,
        etag: e.headers['etag'],
      });
    }
  }
  const write = spec.write && prepare(spec.write);
  const register = spec.register && prepare(spec.register);
  const mcp = spec.mcp && prepare(spec.mcp);
  const mcpPages = new Map(
    (spec.mcpPages?.pages ?? []).map((p) => [
      p.cursor,
      prepare({ status: 200, bodyFile: p.bodyFile, headers: spec.mcpPages?.headers ?? {} }),
    ]),
  );

  const send = (reply: FastifyReply, answer: Prepared, ifNoneMatch: string | undefined) => {
    reply.headers(answer.headers);
    if (answer.etag !== undefined && ifNoneMatch === answer.etag) return reply.code(304).send();
    return reply.code(answer.status).send(answer.body);
  };

  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
  app.get('/', async (request, reply) => {
    const answer = exact.get(request.url) ?? views.get(request.headers.authorization ?? '');
    if (!answer) return reply.code(404).send();
    return send(reply, answer, request.headers['if-none-match']);
  });
  app.get('/tools/:name', async (request, reply) => {
    const answer = exact.get(request.url);
    if (!answer) return reply.code(404).send();
    return send(reply, answer, request.headers['if-none-match']);
  });
  app.put('/tools/:name', async (_request, reply) => {
    if (!write) return reply.code(404).send();
    return reply.code(write.status).headers(write.headers).send(write.body);
  });
  app.post('/tools/register', async (_request, reply) => {
    if (!register) return reply.code(404).send();
    return reply.code(register.status).headers(register.headers).send(register.body);
  });
  app.post('/mcp', async (request, reply) => {
    const cursor = (request.body as { params?: { cursor?: unknown } } | null)?.params?.cursor;
    const answer = mcpPages.size > 0 ? mcpPages.get(typeof cursor === 'string' ? cursor : null) : mcp;
    if (!answer) return reply.code(404).send();
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  });
  app.get('/healthz', async () => ({ status: 'ok' }));

  const close = () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', close);
  process.once('SIGINT', close);
  await app.listen({ port: spec.port, host: '127.0.0.1' });
}
