import rateLimit from '@fastify/rate-limit';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';

/** Per caller: the token's issuer and subject, or the client address when anonymous. */
function callerKey(request: FastifyRequest): string {
  const caller = request.caller;
  if (caller.kind === 'token' && caller.sub !== undefined) return `sub:${caller.iss ?? ''}:${caller.sub}`;
  return `ip:${request.ip}`;
}

/**
 * Rate limits through @fastify/rate-limit, per caller on every route, stricter for writes.
 * Over the limit: 429 with Retry-After and the IETF RateLimit-* headers.
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
    const isWrite = (request: FastifyRequest) => request.routeOptions.config.admin !== undefined && request.method !== 'GET' && request.method !== 'HEAD';
    await app.register(rateLimit, {
      global: true,
      max: (request) => (isWrite(request) && writeMax > 0 ? writeMax : max),
      timeWindow: windowS * 1000,
      keyGenerator: (request) => (isWrite(request) ? `${callerKey(request)}:writes` : callerKey(request)),
      enableDraftSpec: true,
      cache: 100_000,
      errorResponseBuilder: (_request, context) =>
        Object.assign(new RegistryError('TR_ERR_TOO_MANY_REQUESTS', `rate limit of ${context.max} requests per ${windowS} s exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`), {
          statusCode: 429,
        }),
    });
  },
  { name: 'rate-limit', dependencies: ['auth'] },
);
