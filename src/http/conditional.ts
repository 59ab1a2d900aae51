/**
 * Conditional GETs and caching headers shared by the discovery reads (the full view, pages and
 * single tools): entity-tag matching and the cache policy of a view.
 */
import type { FastifyReply } from 'fastify';

/** RFC 9110 section 13.1.2: a list of entity tags, or `*`; weak comparison is fine for GET. */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/**
 * What a view may be cached as: a token's view is private and revalidated each time; the
 * anonymous view is public, for ANONYMOUS_MAX_AGE seconds when that is set. Answers vary by
 * the token.
 */
export function viewCacheHeaders(reply: FastifyReply, tokenView: boolean, anonymousMaxAgeS: number): void {
  reply.header('vary', 'Authorization');
  reply.header('cache-control', tokenView ? 'private, no-cache' : anonymousMaxAgeS > 0 ? `public, max-age=${anonymousMaxAgeS}` : 'public, no-cache');
}
