import type { FastifyRequest } from 'fastify';

/**
 * When the verified token behind a request stops being accepted (ms since the epoch: its `exp`
 * plus the clock tolerance the verifier allows), or undefined for anonymous callers and tokens
 * without `exp`. Long-lived answers (change streams, blocking queries) end by then.
 */
export function tokenExpiresAt(request: FastifyRequest, clockToleranceS: number): number | undefined {
  const caller = request.caller;
  if (caller.kind !== 'token' || caller.expiresAt === undefined) return undefined;
  return caller.expiresAt + clockToleranceS * 1000;
}
