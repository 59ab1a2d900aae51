import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** A route's `config` (its `url` and `method` included), as `request.routeOptions.config` gives it. */
type RouteConfig = FastifyRequest['routeOptions']['config'];

declare module 'fastify' {
  interface FastifyRequest {
    /** The route's config once routeConfig() has read it for this request. */
    routeConfigRead: RouteConfig | null;
  }
}

/**
 * The route's config, read once per request. Fastify 5's `request.routeOptions` is a getter
 * that builds a new object of twelve fields (and asks the router about its constraint
 * strategies) on every read, and the hooks every request runs (auth's two, the rate limit,
 * the metrics) read it six times on a plain `GET /`: about 50 ns and an allocation each
 * (issue 33). `reply.callNotFound()` moves a request to the not-found handler's route, so a
 * request already there reads it again.
 */
export function routeConfig(request: FastifyRequest): RouteConfig {
  if (request.is404) return request.routeOptions.config;
  return (request.routeConfigRead ??= request.routeOptions.config);
}

export default fp(
  async (app) => {
    app.decorateRequest('routeConfigRead', null);
  },
  { name: 'route-config' },
);
