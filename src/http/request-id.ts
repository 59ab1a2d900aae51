/**
 * Request ids: a client's `X-Request-Id` is kept when it is a bounded, well-formed token, so a
 * caller can follow its request through the logs and the audit log; anything else (too long,
 * other characters, repeated headers) is replaced by a fresh UUID rather than echoed or stored.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Up to 64 characters of letters, digits and `._:-`: UUIDs, ULIDs, trace ids, `svc:1234`. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}
