import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import { callerKey } from '../caller-key.js';
import { routeConfig } from './route-config.js';

/** One caller's window: requests counted since it started. */
interface Window {
  count: number;
  startedMs: number;
}

/** Callers' windows kept at most (the least recently seen go first), as @fastify/rate-limit's store was sized. */
const MAX_CALLERS = 100_000;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set false on routes no caller's budget counts (health checks, the documents). */
    rateLimit?: boolean;
  }
  interface FastifyRequest {
    /** Counted against its caller's budget already (a request routed again to the not-found handler is not counted twice). */
    rateLimited: boolean;
  }
}

/**
 * Rate limits per caller on every route (but those with `config.rateLimit: false`: health,
 * the documents), stricter for writes, and for unknown paths too. Over the limit: 429 with
 * Retry-After and the IETF draft's RateLimit-Limit/Remaining/Reset headers, which every
 * answer under the limit carries as well.
 *
 * The semantics of @fastify/rate-limit's local store, which served until issue 33 (a fixed
 * window per caller from its first request, reset once the window has passed; 100,000 callers
 * at most, least recently seen dropped first), in one synchronous onRequest hook: the
 * plugin's chain of awaits (key, max, the store's callback wrapped in a promise, the hook's
 * own promise) cost every request several microtask rounds and their garbage, about 2 us of a
 * lookup's 25 us of CPU in the profile of `npm run bench -- --only=wrk --wrk-profile`.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const { max, writeMax, windowS } = config.rateLimit;
    if (max === 0) {
      app.log.warn('rate limiting is off (RATE_LIMIT_MAX=0)');
      return;
    }
    const windowMs = windowS * 1000;
    const windows = new LRUCache<string, Window>({ max: MAX_CALLERS });
    // Writes share one stricter budget per caller, counted apart from reads so that reads never
    // use it up: a key of their own and a max of their own, in the one store.
    const reads = { max, limit: String(max), suffix: '' };
    const writes = writeMax > 0 ? { max: writeMax, limit: String(writeMax), suffix: ':writes' } : { ...reads, suffix: ':writes' };
    const isWrite = (request: FastifyRequest) =>
      request.method !== 'GET' && request.method !== 'HEAD' && routeConfig(request).admin !== undefined;

    app.decorateRequest('rateLimited', false);
    // Registered after auth's hook, so the caller is known; a callback-style hook, answered at once.
    app.addHook('onRequest', (request, reply, done) => {
      if (request.rateLimited || routeConfig(request).rateLimit === false) {
        done();
        return;
      }
      request.rateLimited = true;
      const budget = isWrite(request) ? writes : reads;
      const key = budget.suffix === '' ? callerKey(request) : `${callerKey(request)}${budget.suffix}`;
      const now = Date.now();
      let window = windows.get(key);
      if (window === undefined || window.startedMs + windowMs <= now) {
        window = { count: 0, startedMs: now };
        windows.set(key, window);
      }
      window.count++;
      const resetS = Math.ceil((windowMs - (now - window.startedMs)) / 1000);
      reply.header('ratelimit-limit', budget.limit);
      if (window.count <= budget.max) {
        reply.header('ratelimit-remaining', String(budget.max - window.count));
        reply.header('ratelimit-reset', String(resetS));
        done();
        return;
      }
      reply.header('ratelimit-remaining', '0');
      reply.header('ratelimit-reset', String(resetS));
      reply.header('retry-after', String(resetS));
      done(
        Object.assign(
          new RegistryError(
            'TR_ERR_TOO_MANY_REQUESTS',
            `rate limit of ${budget.max} requests per ${windowS} s exceeded; retry in ${resetS} s`,
          ),
          { statusCode: 429 },
        ),
      );
    });
  },
  { name: 'rate-limit', dependencies: ['auth', 'route-config'] },
);
