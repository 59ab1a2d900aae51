import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import type { Actor, AuditOutcome } from '../../model/records.js';
import { AuditLog } from '../../registry/audit-log.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The audit action of a route whose writes and refusals are logged, e.g. `tool.put`. */
    audit?: string;
  }
  interface FastifyRequest {
    /** The error code the request was refused with, for the audit log. */
    problemCode: string | null;
  }
  interface FastifyInstance {
    /** The audit log: refusals recorded here, reads for GET /audit. */
    auditLog: AuditLog;
  }
}

/** Who is making the request, for the audit log. */
export function actorOf(request: FastifyRequest): Actor {
  const caller = request.caller;
  return {
    sub: caller.kind === 'token' ? (caller.sub ?? null) : null,
    iss: caller.kind === 'token' ? (caller.iss ?? null) : null,
    client: request.ip,
    requestId: request.id,
  };
}

export function outcomeOf(status: number): AuditOutcome {
  if (status === 401 || status === 403 || status === 429) return 'denied';
  return status >= 500 ? 'error' : 'invalid';
}

/**
 * Records refused writes and calls on audited routes (successful writes are logged by the
 * store, inside their transaction); the log itself is src/registry/audit-log.ts.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const auditLog = new AuditLog(app.auditStore, {
      retentionDays: config.auditRetentionDays,
      onError: (err, what) => app.log.error({ err }, what),
      onPruned: (removed) => app.log.info({ removed }, 'pruned audit entries past retention'),
      visibleThrough: () => app.store.visibleThrough,
    });
    app.decorate('auditLog', auditLog);
    app.decorateRequest('problemCode', null);

    // Only on audited routes (a route-level hook), so reads pay nothing for it.
    const recordRefusal = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      done();
      const action = request.routeOptions.config.audit;
      if (action === undefined || reply.statusCode < 400) return;
      const params = request.params as Record<string, string> | undefined;
      auditLog.recordRefusal({
        ...actorOf(request),
        at: new Date().toISOString(),
        action,
        target: params?.['name'] ?? params?.['id'] ?? null,
        outcome: outcomeOf(reply.statusCode),
        status: reply.statusCode,
        detail: request.problemCode,
      });
    };
    app.addHook('onRoute', (route) => {
      if (route.config?.audit === undefined) return;
      const existing = route.onResponse;
      route.onResponse = [...(Array.isArray(existing) ? existing : existing ? [existing] : []), recordRefusal] as typeof route.onResponse;
    });
    app.addHook('onClose', async () => auditLog.close());
  },
  { name: 'audit', dependencies: ['registry', 'auth'] },
);
