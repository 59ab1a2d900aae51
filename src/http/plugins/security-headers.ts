import type { FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import { requestLineProblem } from '../framework-errors.js';

/**
 * The headers every answer carries: `X-Content-Type-Options: nosniff`, so that no body is run
 * as another type than it says; and on what a browser renders as a document (HTML, SVG: the
 * documentation pages at /docs) a Content-Security-Policy that allows only this origin's own
 * scripts, styles and requests. Swagger UI needs nothing more: its pages load their scripts and
 * styles from /docs/static, fetch the document from /docs/json and show a `data:` logo, and it
 * sets styles only through the DOM, which `style-src` does not govern.
 */
/**
 * Where the registry serves HTML: Swagger UI (src/http/routes/openapi.ts) and the dashboard
 * (src/http/routes/dashboard.ts), whose scripts and styles are files under /dashboard/assets,
 * which reads only this origin's JSON and event stream, and which also sets styles only
 * through the DOM (uPlot).
 */
const HTML_PREFIXES = ['/docs', '/dashboard'];

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const origins = new Set(["'self'", config.publicUrl.origin]);
    const csp = [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "font-src 'self' data:",
      // "Try it out" sends requests to the document's server, PUBLIC_URL.
      `connect-src ${[...origins].join(' ')}`,
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
      "object-src 'none'",
    ].join('; ');
    // One hook for every answer's own headers (each global hook costs the hot 304 path about a
    // microsecond), in Fastify's header object: raw.setHeader made Node merge two header sets
    // per answer. Streams written after reply.hijack() set them in their own writeHead
    // (SSE_HEADERS in src/http/sse.ts).
    //
    // Once the server is closing, a request that still arrives on an open connection is
    // refused here in the problem shape (Fastify's own return503OnClosing answers in another
    // shape), and the connection is closed after the answer. So is a request without Host or
    // with a query string that does not decode (framework-errors.ts), in this one hook too.
    let closing = false;
    app.addHook('preClose', (done) => {
      closing = true;
      done();
    });
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-request-id', request.id);
      reply.header('x-content-type-options', 'nosniff');
      if (!closing) return done(requestLineProblem(request));
      reply.header('connection', 'close');
      done(new RegistryError('TR_ERR_UNAVAILABLE', 'the registry is shutting down; retry shortly', { retryAfterS: 5 }));
    });
    // Only the documentation and dashboard routes serve HTML, so only they pay for the content-type check.
    const addCsp = (_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
      const type = reply.getHeader('content-type');
      if (typeof type === 'string' && /^\s*(?:text\/html|image\/svg\+xml|application\/xhtml\+xml)/i.test(type))
        reply.header('content-security-policy', csp);
      done(null, payload);
    };
    app.addHook('onRoute', (route) => {
      if (!HTML_PREFIXES.some((prefix) => route.url.startsWith(prefix))) return;
      const existing = route.onSend;
      route.onSend = [...(Array.isArray(existing) ? existing : existing ? [existing] : []), addCsp] as typeof route.onSend;
    });
  },
  { name: 'security-headers' },
);
