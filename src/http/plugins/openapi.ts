import swagger from '@fastify/swagger';
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { packageVersion } from '../../package-root.js';
import { documentBase } from '../openapi/document.js';
import { transform, transformObject } from '../openapi/transform.js';

/** Where the documentation pages are served (src/http/routes/openapi.ts). */
export const DOCS_PREFIX = '/docs';

/**
 * The OpenAPI 3.1 document, made by @fastify/swagger from every route's zod schemas
 * (`app.swagger()`, once, on first use). Registered before the routes, whose schemas it
 * collects, and before rate limiting: the documentation pages' routes, which come from
 * @fastify/swagger-ui, are set here to ignore credentials and rate limits as the document's do.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    const version = packageVersion();
    app.addHook('onRoute', (route) => {
      if (route.url === DOCS_PREFIX || route.url.startsWith(`${DOCS_PREFIX}/`))
        route.config = { ...route.config, auth: false, rateLimit: false };
    });
    await app.register(swagger, { openapi: documentBase(config, version), transform, transformObject });
  },
  { name: 'openapi', dependencies: ['auth'] },
);
