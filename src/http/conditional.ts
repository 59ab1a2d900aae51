/**
 * Conditional requests: the GETs of the discovery reads (the full view, pages and single tools)
 * and of stored records (a tool's, a tool service's), with entity-tag matching and the cache
 * policy of a view; and the If-Match / If-None-Match of the writes of a stored record, parsed,
 * documented and checked alike for tools and tool services.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { RegistryError } from '../model/errors.js';
import { checkWriteCondition, type WriteCondition } from '../model/write-condition.js';
import { documentedOnly } from './validation.js';

/** RFC 9110 section 13.1.2: a list of entity tags, or `*`; weak comparison is fine for GET. */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header === etag) return true;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}

/** A representation with its strong entity tag: `304` when If-None-Match names it, else its bytes as JSON. */
export function sendTagged(reply: FastifyReply, header: string | undefined, { body, etag }: { body: Buffer; etag: string }): void {
  reply.header('etag', etag);
  if (ifNoneMatch(header, etag)) reply.code(304).send();
  else reply.type('application/json; charset=utf-8').send(body);
}

/** The If-None-Match of a conditional GET, as the document shows it (read by the handler). */
export function readConditionHeaders(): z.ZodUnknown {
  return documentedOnly(
    z.object({
      'If-None-Match': z
        .string()
        .optional()
        .describe('Entity tags from earlier answers (comma-separated), or `*`; `304` when one matches.'),
    }),
  );
}

/** Headers that are the same on every answer they go on, built once and written as they are. */
export type HeaderBlock = Readonly<Record<string, string>>;

/** The headers of an answer that may be a 304: the 304's, and the 200's (with its Content-Type). */
export interface AnswerBlocks {
  notModified: HeaderBlock;
  ok: HeaderBlock;
}

/** The two blocks from the 304's headers: the 200's are those and its Content-Type. */
export function answerBlocks(notModified: Record<string, string>, contentType: string): AnswerBlocks {
  const frozen: HeaderBlock = Object.freeze(notModified);
  return { notModified: frozen, ok: Object.freeze({ ...frozen, 'content-type': contentType }) };
}

/**
 * Answer blocks built once per object (a view, an export of it, a tool's entry) and kind of
 * caller (anonymous or token), kept as long as the object is: a write makes new objects, so a
 * kept block never outlives what it describes, and the hot read and its 304 build no strings.
 */
export class CallerKindBlocks<K extends object> {
  readonly #kept = new WeakMap<K, [AnswerBlocks | undefined, AnswerBlocks | undefined]>();

  get(key: K, tokenView: boolean): AnswerBlocks | undefined {
    return this.#kept.get(key)?.[tokenView ? 1 : 0];
  }

  /** Keeps `blocks` for the key and kind of caller, and gives them back. */
  keep(key: K, tokenView: boolean, blocks: AnswerBlocks): AnswerBlocks {
    let kinds = this.#kept.get(key);
    if (kinds === undefined) {
      kinds = [undefined, undefined];
      this.#kept.set(key, kinds);
    }
    kinds[tokenView ? 1 : 0] = blocks;
    return blocks;
  }
}

/** The cache policy of a view's answers, for the anonymous view and for a token's. */
export interface ViewCachePolicy {
  anonymous: HeaderBlock;
  token: HeaderBlock;
}

/**
 * What a view may be cached as: a token's view is private and revalidated each time; the
 * anonymous view is public, for ANONYMOUS_MAX_AGE seconds when that is set. Answers vary by
 * the token. Built once per app: the hot reads write these blocks with no per-request strings.
 */
export function viewCachePolicy(anonymousMaxAgeS: number): ViewCachePolicy {
  return {
    anonymous: Object.freeze({
      vary: 'Authorization',
      'cache-control': anonymousMaxAgeS > 0 ? `public, max-age=${anonymousMaxAgeS}` : 'public, no-cache',
    }),
    token: Object.freeze({ vary: 'Authorization', 'cache-control': 'private, no-cache' }),
  };
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

/**
 * The If-Match and If-None-Match of a stored record's writes, as the document shows them (read
 * by the handler): `what` names the record (`tool`), `read` where its entity tag is read.
 */
export function writeConditionHeaders(what: string, read: string): z.ZodUnknown {
  return documentedOnly(
    z.object({
      'If-Match': z
        .string()
        .optional()
        .describe(
          `\`*\` (the ${what} must exist) or entity tags from ${read} (or from an earlier write's \`ETag\`): the write happens only if the ${what}'s stored record still has one of them, else \`412\`. Keeps two operators from overwriting each other's changes.`,
        ),
      'If-None-Match': z
        .string()
        .optional()
        .describe(
          `\`*\`: the write happens only if no live ${what} has this ${what === 'tool' ? 'name' : 'id'}, else \`412\` (create, never replace).`,
        ),
    }),
  );
}

/**
 * A write's precondition checked before its body is looked at (RFC 9110 section 13.2.2), against
 * the record as committed (`current`: its entity tag, undefined when there is none); the write's
 * batch checks it again where it is applied. `what` names the record for the 412's detail.
 */
export function checkConditionFirst(headers: IncomingHttpHeaders, what: string, current: () => string | undefined): void {
  const condition = writeConditionOf(headers);
  if (condition !== undefined) checkWriteCondition(what, condition, current());
}
