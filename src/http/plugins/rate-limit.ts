import rateLimit from '@fastify/rate-limit';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import { callerKey } from '../caller-key.js';

/**
 * Rate limits through @fastify/rate-limit, per caller on every route, stricter for writes.
 * Over the limit: 429 with Retry-After and the IETF RateLimit-* headers. Requests for unknown
 * paths count against the same budget: the plugin only hooks routes, so a hook of ours runs its
 * check for the not-found handler (which src/http/plugins/errors.ts sets).
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const { max, writeMax, windowS } = config.rateLimit;
    if (max === 0) {
      app.log.warn('rate limiting is off (RATE_LIMIT_MAX=0)');
      return;
    }
    // Writes share one stricter budget per caller, counted apart from reads so that reads never
    // use it up: a key of their own and a max of their own, in the one store.
    const isWrite = (request: FastifyRequest) =>
      request.routeOptions.config.admin !== undefined && request.method !== 'GET' && request.method !== 'HEAD';
    await app.register(rateLimit, {
      global: true,
      max: (request) => (isWrite(request) && writeMax > 0 ? writeMax : max),
      timeWindow: windowS * 1000,
      keyGenerator: (request) => (isWrite(request) ? `${callerKey(request)}:writes` : callerKey(request)),
      enableDraftSpec: true,
      cache: 100_000,
      errorResponseBuilder: (_request, context) =>
        Object.assign(
          new RegistryError(
            'TR_ERR_TOO_MANY_REQUESTS',
            `rate limit of ${context.max} requests per ${windowS} s exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`,
          ),
          {
            statusCode: 429,
          },
        ),
    });
    const limitUnknownPath = app.rateLimit();
    app.addHook('onRequest', (request, reply, done) => {
      if (!request.is404) {
        done();
        return;
      }
      limitUnknownPath.call(app, request, reply).then(() => done(), done);
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
