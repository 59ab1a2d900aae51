import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { RegistryError } from '../../model/errors.js';
import { fieldErrorsFrom } from '../../model/resolve.js';

const AuditQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  /** Opaque: the id to continue below, base64url-encoded. */
  cursor: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,16}$/)
    .transform((c, ctx) => {
      const id = Number(Buffer.from(c, 'base64url').toString('utf8'));
      if (!Number.isSafeInteger(id) || id < 1) {
        ctx.addIssue({ code: 'custom', message: 'is not a cursor this registry gave out' });
        return z.NEVER;
      }
      return id;
    })
    .optional(),
  sub: z.string().max(512).optional(),
  action: z.string().max(64).optional(),
  outcome: z.enum(['ok', 'denied', 'invalid', 'error']).optional(),
  target: z.string().max(200).optional(),
  since: z.iso.datetime().optional(),
  until: z.iso.datetime().optional(),
});

/** `GET /audit` (admin scope): newest first, keyset pagination, filters. */
const auditRoutes: FastifyPluginAsync = async (app) => {
  app.get('/audit', { config: { admin: 'reading the audit log' } }, async (request) => {
    const query = AuditQuerySchema.safeParse(request.query);
    if (!query.success) {
      throw new RegistryError('TR_ERR_BAD_REQUEST', 'invalid audit query', { fieldErrors: fieldErrorsFrom(query.error) });
    }
    const { cursor, ...filters } = query.data;
    const entries = app.auditLog.list({ ...filters, beforeId: cursor, limit: filters.limit + 1 });
    const page = entries.slice(0, filters.limit);
    const last = page.at(-1);
    return {
      entries: page,
      nextCursor: entries.length > filters.limit && last ? Buffer.from(String(last.id)).toString('base64url') : null,
    };
  });
};

export default auditRoutes;
