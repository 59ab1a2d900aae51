import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { BatchWriter } from '../../store/batch-writer.js';
import type { Config } from '../../config.js';
import type { Actor, AuditEntryInput, AuditOutcome } from '../../model/records.js';

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
    /** Refused writes and calls, written in batches. */
    auditRecorder: BatchWriter<AuditEntryInput>;
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

function outcomeOf(status: number): AuditOutcome {
  if (status === 401 || status === 403 || status === 429) return 'denied';
  return status >= 500 ? 'error' : 'invalid';
}

const DAY_MS = 86_400_000;

/**
 * Records refused writes and calls (successful writes are logged by the store, inside their
 * transaction) and bounds the log by age.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    // Refusals come in floods (a client retrying a bad token): written in batches, bounded.
    const recorder = new BatchWriter<AuditEntryInput>((batch) => app.auditStore.insertMany(batch), {
      flushIntervalMs: 250,
      maxBatch: 1000,
      maxPending: 10_000,
      onError: (err) => app.log.error({ err }, 'writing audit entries failed'),
    });
    app.decorate('auditRecorder', recorder);
    app.decorateRequest('problemCode', null);

    // Only on audited routes (a route-level hook), so reads pay nothing for it.
    const recordRefusal = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      done();
      const action = request.routeOptions.config.audit;
      if (action === undefined || reply.statusCode < 400) return;
      const params = request.params as Record<string, string> | undefined;
      recorder.push({
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

    const prune = () => {
      try {
        const removed = app.auditStore.prune(new Date(Date.now() - config.auditRetentionDays * DAY_MS).toISOString());
        if (removed > 0) app.log.info({ removed }, 'pruned audit entries past retention');
      } catch (err) {
        app.log.error({ err }, 'pruning the audit log failed');
      }
    };
    prune();
    const timer = setInterval(prune, 3_600_000).unref();
    app.addHook('onClose', async () => {
      clearInterval(timer);
      recorder.flush();
    });
  },
  { name: 'audit', dependencies: ['registry', 'auth'] },
);
