import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { CatalogView } from '../../catalog/catalog.js';
import { MAX_PAGE } from '../../catalog/listing.js';
import type { Config } from '../../config.js';
import { fieldErrorsFrom } from '../../model/resolve.js';
import { ScopeSchema } from '../../model/schemas.js';
import { RegistryError } from '../../model/errors.js';
import { viewKeyFor } from '../../model/visibility.js';

const MAX_WAIT_MS = 10 * 60_000;
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Consul-style durations: `30s`, `5m`, `1500ms`; a bare number is seconds. */
const WaitSchema = z
  .string()
  .regex(/^\d+(ms|s|m|h)?$/, 'must look like 30s, 5m or 1500ms')
  .transform((v) => {
    const match = /^(\d+)(ms|s|m|h)?$/.exec(v);
    return Math.min(Number(match?.[1]) * (UNITS_MS[match?.[2] ?? 's'] ?? 1000), MAX_WAIT_MS);
  });

const DiscoveryQuerySchema = z.object({
  /** Blocking query: the X-Registry-Index the caller last saw. */
  index: z.string().regex(/^\d{1,15}$/, 'must be a registry index').transform(Number).optional(),
  wait: WaitSchema.optional(),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).optional(),
  cursor: z.string().max(2048).optional(),
  q: z.string().max(500).optional(),
  scope: ScopeSchema.optional(),
  updated_since: z.iso.datetime({ offset: true }).transform((v) => new Date(v).toISOString()).optional(),
});

function isEmpty(query: unknown): boolean {
  for (const _ in query as object) return false;
  return true;
}

/** RFC 9110 section 13.1.2: a list of entity tags, or `*`; weak comparison is fine for GET. */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * `GET /`: the caller's view, served as precomputed bytes with a strong ETag. With `index`
 * (and `wait`), a blocking query; with `limit`/`cursor`, `q`, `scope` or `updated_since`, a
 * page, a search or a filter built for the request.
 */
const discoveryRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const cacheHeaders = (reply: FastifyReply, tokenView: boolean) => {
    reply.header('vary', 'Authorization');
    reply.header(
      'cache-control',
      tokenView ? 'private, no-cache' : config.anonymousMaxAgeS > 0 ? `public, max-age=${config.anonymousMaxAgeS}` : 'public, no-cache',
    );
  };

  app.get('/', async (request, reply) => {
    const key = viewKeyFor(request.caller, config.anonymousDiscovery, () => app.catalog.knownScopes().keys());
    const tokenView = request.caller.kind === 'token';
    // The plain rediscovery call (no query) skips parsing: it is the hot path.
    if (isEmpty(request.query)) return sendView(reply, app.catalog.view(key), tokenView, request.headers['if-none-match']);
    const parsed = DiscoveryQuerySchema.safeParse(request.query);
    if (!parsed.success) throw new RegistryError('TR_ERR_BAD_REQUEST', 'invalid discovery query', { fieldErrors: fieldErrorsFrom(parsed.error) });
    const query = parsed.data;

    if (query.limit !== undefined || query.cursor !== undefined || query.q !== undefined || query.scope !== undefined || query.updated_since !== undefined) {
      const listing = app.listing.list(key, { limit: query.limit, cursor: query.cursor, q: query.q, scope: query.scope, updatedSince: query.updated_since });
      cacheHeaders(reply, tokenView);
      reply.header('x-registry-index', String(listing.index));
      return { service: app.catalog.serviceName, protocol: 'tool-discovery', tools: listing.tools, nextCursor: listing.nextCursor };
    }

    let view: CatalogView;
    if (query.index !== undefined) {
      // Consul adds up to wait/16 of jitter so that many clients do not return in step.
      const waitMs = (query.wait ?? 5 * 60_000) * (1 + Math.random() / 16);
      const wait = app.waiters.wait(key, query.index, Math.min(waitMs, MAX_WAIT_MS * (1 + 1 / 16)));
      const onClose = () => wait.cancel();
      reply.raw.once('close', onClose);
      try {
        // Resolved with the view as it is when the waiter is answered: the current index.
        view = await wait.view;
      } finally {
        reply.raw.off('close', onClose);
      }
    } else {
      view = app.catalog.view(key);
    }
    return sendView(reply, view, tokenView, request.headers['if-none-match']);
  });

  function sendView(reply: FastifyReply, view: CatalogView, tokenView: boolean, ifNoneMatchHeader: string | undefined) {
    reply.header('etag', view.etag).header('x-registry-index', String(view.index));
    // Tells an agent its token hides tools, so it knows to ask for more scopes.
    if (tokenView) reply.header('x-hidden-tools', String(view.hidden));
    cacheHeaders(reply, tokenView);
    if (ifNoneMatch(ifNoneMatchHeader, view.etag)) return reply.code(304).send();
    return reply.type('application/json; charset=utf-8').send(view.body);
  }
};

export default discoveryRoutes;
