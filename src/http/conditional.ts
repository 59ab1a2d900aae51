/**
 * Conditional GETs and caching headers shared by the discovery reads (the full view, pages and
 * single tools): entity-tag matching and the cache policy of a view.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { RegistryError } from '../model/errors.js';
import type { WriteCondition } from '../model/write-condition.js';

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
  reply.header(
    'cache-control',
    tokenView ? 'private, no-cache' : anonymousMaxAgeS > 0 ? `public, max-age=${anonymousMaxAgeS}` : 'public, no-cache',
  );
}

const ENTITY_TAG = /(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"/g;

/** `*`, or the entity tags of an If-Match or If-None-Match header; a 400 for anything else. */
function entityTags(name: string, header: string | undefined): '*' | string[] | undefined {
  if (header === undefined) return undefined;
  if (header.trim() === '*') return '*';
  const tags = header.match(ENTITY_TAG) ?? [];
  if (tags.length === 0 || tags.length > 32 || header.replace(ENTITY_TAG, '').replace(/[\s,]/g, '') !== '') {
    throw new RegistryError('TR_ERR_BAD_REQUEST', `${name} must be * or up to 32 entity tags in double quotes, comma-separated`);
  }
  return tags;
}

/** A write's If-Match and If-None-Match (RFC 9110 section 13.1), for the registry to check in its batch. */
export function writeConditionOf(headers: IncomingHttpHeaders): WriteCondition | undefined {
  const ifMatch = entityTags('If-Match', headers['if-match']);
  const ifNoneMatch = entityTags('If-None-Match', headers['if-none-match']);
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  return { ...(ifMatch !== undefined && { ifMatch }), ...(ifNoneMatch !== undefined && { ifNoneMatch }) };
}
