/**
 * What an operator lets each announcer announce (issue 29): ANNOUNCER_KEYS_FILE, a JSON file of
 * `{"announcers": [AnnouncerBinding, ...]}`. Each binding ties the public keys that verify an
 * announcer's signatures to one subject, and says which queues its services may use and which
 * scopes its tools may require. Nothing else is announced: an announcement over anything more is
 * refused whole, and audited.
 */
import { z } from 'zod';
import { ScopeSchema } from './schemas.js';

/** A public JWK (RFC 7517) with its `kid`; a private one (with `d`) is refused: the registry only verifies. */
export const AnnouncerJwkSchema = z
  .looseObject({
    /** OKP (Ed25519), EC (P-256, P-384, P-521) or RSA. */
    kty: z.enum(['OKP', 'EC', 'RSA']),
    /** The id the announcement's JWS header names; unique across the file. */
    kid: z.string().min(1).max(200),
    /** EdDSA, ES256, ES384, ES512, RS256 or PS256; default: the key type's (EdDSA, ES256/384/512 by curve, RS256). */
    alg: z.enum(['EdDSA', 'ES256', 'ES384', 'ES512', 'RS256', 'PS256']).optional(),
  })
  .refine((jwk) => !Object.hasOwn(jwk, 'd'), { message: 'is a private key: give the registry only the public part (no "d")' });
export type AnnouncerJwk = z.infer<typeof AnnouncerJwkSchema>;

/**
 * A queue pattern: a full topic name in which `*` stands for any run of characters without `/`,
 * e.g. `non-persistent://tg/*\/weather` (request and response queue of one service) or
 * `non-persistent://tg/request/weather-*`.
 */
const QueuePatternSchema = z
  .string()
  .max(1024)
  .regex(/^(persistent|non-persistent):\/\/[^\s]+$/, 'must be a topic name (or pattern) such as non-persistent://tg/request/weather');

export const AnnouncerBindingSchema = z.strictObject({
  /** The announcer: its announcements' `sub`, and the owner (`announcer:<subject>`) of what it registers. */
  subject: ScopeSchema,
  /** The public keys its announcements are signed with (more than one while rotating). */
  keys: z.array(AnnouncerJwkSchema).min(1).max(16),
  /** The queues its services may name (request and response queue alike): exact names or patterns. */
  queues: z.array(QueuePatternSchema).min(1).max(256),
  /** The scopes its tools may require; a tool requiring any other is refused. */
  scopes: z.array(ScopeSchema).max(256).default([]),
  /** Whether its tools may require no scope at all, which lets every caller see and call them. */
  unscopedTools: z.boolean().default(false),
  /**
   * Whether two of its own services may use the same queues (one worker behind two service
   * ids). Queues of another owner's service (an operator's or another announcer's) are refused
   * whatever this says.
   */
  shareQueues: z.boolean().default(false),
});
export type AnnouncerBinding = z.infer<typeof AnnouncerBindingSchema>;

export const AnnouncerBindingsFileSchema = z
  .strictObject({ announcers: z.array(AnnouncerBindingSchema).max(10_000) })
  .superRefine((file, ctx) => {
    const subjects = new Set<string>();
    const kids = new Set<string>();
    file.announcers.forEach((binding, i) => {
      if (subjects.has(binding.subject))
        ctx.addIssue({ code: 'custom', path: ['announcers', i, 'subject'], message: `subject "${binding.subject}" is bound twice` });
      subjects.add(binding.subject);
      binding.keys.forEach((key, j) => {
        if (kids.has(key.kid))
          ctx.addIssue({ code: 'custom', path: ['announcers', i, 'keys', j, 'kid'], message: `kid "${key.kid}" is used twice` });
        kids.add(key.kid);
      });
    });
  });

/** `*` matches any run of characters but `/`; everything else itself. */
export function queuePatternMatcher(pattern: string): (queue: string) => boolean {
  if (!pattern.includes('*')) return (queue) => queue === pattern;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  const regex = new RegExp(`^${source}$`);
  return (queue) => regex.test(queue);
}
