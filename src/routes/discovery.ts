import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import { viewKeyFor } from './view-policy.js';

/** `GET /`: the caller's view, served as precomputed bytes with a strong ETag. */
const discoveryRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  app.get('/', async (request, reply) => {
    const view = app.catalog.view(viewKeyFor(request.caller, config.anonymousDiscovery));
    reply.header('etag', view.etag).header('x-registry-index', String(view.index));
    if (request.caller.kind === 'token') {
      // Tells an agent its token hides tools, so it knows to ask for more scopes.
      reply.header('x-hidden-tools', String(view.hidden));
      reply.header('cache-control', 'private, no-cache').header('vary', 'Authorization');
    } else {
      reply.header('cache-control', 'no-cache').header('vary', 'Authorization');
    }
    if (ifNoneMatch(request.headers['if-none-match'], view.etag)) return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(view.body);
  });
};

/** RFC 9110 section 13.1.2: a list of entity tags, or `*`; weak comparison is fine for GET. */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

export default discoveryRoutes;
