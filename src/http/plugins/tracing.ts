import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** The OpenTelemetry SDK the process started (src/telemetry.ts), or a test's own provider. */
export interface TracingHandle {
  /** Flushes the spans not yet exported and stops the SDK; called when the app closes. */
  shutdown(): Promise<void>;
}

/**
 * A server span per request, continuing the caller's trace from its W3C `traceparent` header,
 * and active while the hooks and the handler run, so that the spans of the services (a call
 * through the bridge, its HTTP or bus call) are its children. Registered first, so that every
 * other hook runs inside the span. Without a handle (no SDK configured) it adds no hook at all:
 * requests then cost nothing beyond the API's no-ops in the services.
 */
export default fp<{ tracing: TracingHandle | undefined }>(
  async (app, { tracing }) => {
    if (!tracing) return;
    const tracer = trace.getTracer('tool-registry');
    /** Each request's context holding its span, until the span ends. */
    const contexts = new WeakMap<FastifyRequest, Context>();
    const end = (request: FastifyRequest, status: number) => {
      const span = trace.getSpan(contexts.get(request) ?? ROOT_CONTEXT);
      if (!span || !contexts.delete(request)) return;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };

    app.addHook('onRequest', (request, reply, done) => {
      const parent = propagation.extract(ROOT_CONTEXT, request.headers);
      const route = request.routeOptions.url;
      const span: Span = tracer.startSpan(
        route === undefined ? request.method : `${request.method} ${route}`,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': request.method,
            // The path only: a query may carry a token (access_token).
            'url.path': request.url.split('?')[0] ?? '',
            'client.address': request.ip,
            ...(route !== undefined && { 'http.route': route }),
          },
        },
        parent,
      );
      const active = trace.setSpan(parent, span);
      contexts.set(request, active);
      // Answers that take over the response (streams) and callers that hang up end it here.
      reply.raw.once('close', () => end(request, reply.raw.statusCode));
      // The later hooks, the body's parsing and the handler run inside it (AsyncLocalStorage
      // carries it across their callbacks, a 500 kB body read off a socket included).
      context.with(active, done);
    });
    app.addHook('onResponse', (request, reply, done) => {
      end(request, reply.statusCode);
      done();
    });
    app.addHook('onClose', async () => tracing.shutdown());
  },
  { name: 'tracing' },
);
