import type { FastifyRequest } from 'fastify';

/**
 * Whose share of a per-caller budget (rate limit, held blocking queries and streams) a request
 * uses: the token's issuer and subject, or the client address when anonymous or without a
 * subject. NUL separates the parts: issuers are URLs and subjects may contain colons.
 */
export function callerKey(request: FastifyRequest): string {
  const caller = request.caller;
  if (caller.kind === 'token' && caller.sub !== undefined) return `sub\u0000${caller.iss ?? ''}\u0000${caller.sub}`;
  return `ip\u0000${request.ip}`;
}
