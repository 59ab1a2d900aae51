import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import type { Actor, AuditOutcome } from '../../model/records.js';
import { AuditLog } from '../../registry/audit-log.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The audit action of a route whose writes and refusals are logged, e.g. `tool.put`. */
    audit?: string;
    /**
     * Issue 34: the audit action of this route's requests made from the operator's console (they
     * carry `X-Registry-Console`), answered or refused; e.g. `console.invoke`.
     */
    auditConsole?: string;
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

/**
 * Issue 34: the header the operator's console sends on the calls it makes (`Try it`), so that
 * they are audited as the console's (`console.invoke`). A label the caller chooses, not a proof:
 * the entry's subject is still the token's.
 */
const CONSOLE_HEADER = 'x-registry-console';

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

// eslint-disable-next-line no-control-regex -- the characters to escape
const UNPRINTABLE = /[\x00-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/g;
const MAX_TARGET = 200;

/**
 * The name or id a write tried, for the audit entry of its refusal: the route's `:name` or
 * `:id`, else the body's `name` (POST /tools/register) or `id`, when the body was read and is an
 * object with a string there. A refusal before the body is read (401 or 403 on POST
 * /tools/register, 415) has none to give: unauthorised callers never make the server read one.
 * It is whatever the caller sent, so control and bidirectional formatting characters are
 * escaped and it is cut at 200 characters.
 */
function triedTarget(request: FastifyRequest): string | null {
  const params = request.params as Record<string, unknown> | undefined;
  const body = request.body;
  const fromBody = (key: string): unknown =>
    typeof body === 'object' && body !== null && !Array.isArray(body) && Object.hasOwn(body, key)
      ? (body as Record<string, unknown>)[key]
      : undefined;
  const tried = [params?.['name'], params?.['id'], fromBody('name'), fromBody('id')].find(
    (v): v is string => typeof v === 'string' && v !== '',
  );
  if (tried === undefined) return null;
  const escaped = tried.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return escaped.length > MAX_TARGET ? `${escaped.slice(0, MAX_TARGET)}...` : escaped;
}

function outcomeOf(status: number): AuditOutcome {
  if (status === 401 || status === 403 || status === 429) return 'denied';
  return status >= 500 ? 'error' : 'invalid';
}

/**
 * Audits a tool call that failed where the audit hook cannot see it: inside an answer that has
 * already started (a stream, an AG-UI run) or inside a 200 (an MCP `tools/call` result).
 */
export function recordFailedCall(request: FastifyRequest, tool: string, code: string, status: number): void {
  request.server.auditLog.recordRefusal({
    ...actorOf(request),
    at: new Date().toISOString(),
    action: 'tool.invoke',
    target: tool,
    outcome: outcomeOf(status),
    status,
    detail: code,
  });
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
      const { audit, auditConsole } = request.routeOptions.config;
      const fromConsole = auditConsole !== undefined && request.headers[CONSOLE_HEADER] !== undefined;
      const action = fromConsole ? auditConsole : audit;
      if (action === undefined) return;
      if (reply.statusCode < 400) {
        // Answered calls are not audited (they are counted in /stats), except the console's.
        if (fromConsole)
          auditLog.recordRefusal({
            ...actorOf(request),
            at: new Date().toISOString(),
            action,
            target: triedTarget(request),
            outcome: 'ok',
            status: reply.statusCode,
            detail: null,
          });
        return;
      }
      auditLog.recordRefusal({
        ...actorOf(request),
        at: new Date().toISOString(),
        action,
        target: triedTarget(request),
        outcome: outcomeOf(reply.statusCode),
        status: reply.statusCode,
        detail: request.problemCode,
      });
    };
    app.addHook('onRoute', (route) => {
      if (route.config?.audit === undefined && route.config?.auditConsole === undefined) return;
      const existing = route.onResponse;
      route.onResponse = [...(Array.isArray(existing) ? existing : existing ? [existing] : []), recordRefusal] as typeof route.onResponse;
    });
    app.addHook('onClose', async () => auditLog.close());
  },
  { name: 'audit', dependencies: ['registry', 'auth'] },
);
