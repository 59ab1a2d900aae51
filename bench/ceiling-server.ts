/**
 * The ceiling: a bare Fastify process that answers `GET /` with precomputed bytes (the exact
 * bytes the registry returned, chosen by the Authorization header, with the same headers),
 * answers 304 when If-None-Match equals the ETag, and answers `PUT /tools/:name` with the
 * registry's response bytes for a write. No auth, no catalogue, no database: what serving
 * those bytes costs on this machine with this framework.
 *
 *   node --import tsx bench/ceiling-server.ts <spec.json>
 *
 * spec.json: { port, views: [{ authorization, bodyFile, headers }], write: { status, bodyFile, headers } }
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

interface ViewSpec {
  authorization: string;
  bodyFile: string;
  headers: Record<string, string>;
}
interface Spec {
  port: number;
  views: ViewSpec[];
  write?: { status: number; bodyFile: string; headers: Record<string, string> };
}

const spec = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as Spec;
const views = new Map(spec.views.map((v) => [v.authorization, { body: readFileSync(v.bodyFile), headers: v.headers, etag: v.headers['etag'] ?? '' }]));
const write = spec.write && { ...spec.write, body: readFileSync(spec.write.bodyFile) };

const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
app.get('/', async (request, reply) => {
  const view = views.get(request.headers.authorization ?? '');
  if (!view) return reply.code(404).send();
  reply.headers(view.headers);
  if (request.headers['if-none-match'] === view.etag) return reply.code(304).send();
  return reply.send(view.body);
});
app.put('/tools/:name', async (_request, reply) => {
  if (!write) return reply.code(404).send();
  return reply.code(write.status).headers(write.headers).send(write.body);
});
app.get('/healthz', async () => ({ status: 'ok' }));

const close = () => {
  app.close().then(() => process.exit(0), () => process.exit(1));
};
process.once('SIGTERM', close);
process.once('SIGINT', close);
await app.listen({ port: spec.port, host: '127.0.0.1' });
