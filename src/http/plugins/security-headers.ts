import fp from 'fastify-plugin';
import type { Config } from '../../config.js';

/**
 * The headers every answer carries: `X-Content-Type-Options: nosniff`, so that no body is run
 * as another type than it says; and on what a browser renders as a document (HTML, SVG: the
 * documentation pages at /docs) a Content-Security-Policy that allows only this origin's own
 * scripts, styles and requests. Swagger UI needs nothing more: its pages load their scripts and
 * styles from /docs/static, fetch the document from /docs/json and show a `data:` logo, and it
 * sets styles only through the DOM, which `style-src` does not govern.
 */
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
    app.addHook('onRequest', (_request, reply, done) => {
      // On the raw response, so that streams written after reply.hijack() carry it too.
      reply.raw.setHeader('x-content-type-options', 'nosniff');
      done();
    });
    app.addHook('onSend', (_request, reply, payload, done) => {
      const type = reply.getHeader('content-type');
      if (typeof type === 'string' && /^\s*(?:text\/html|image\/svg\+xml|application\/xhtml\+xml)/i.test(type)) reply.header('content-security-policy', csp);
      done(null, payload);
    });
  },
  { name: 'security-headers' },
);
