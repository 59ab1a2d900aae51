import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { OpenApiDocumentSchema } from '../../model/api.js';
import { DOCS_PREFIX } from '../plugins/openapi.js';
import { documentYaml } from '../openapi/document.js';
import { json } from '../openapi/responses.js';

/**
 * The document the routes' schemas make (src/http/plugins/openapi.ts), as JSON and YAML, and
 * @fastify/swagger-ui's pages at /docs, served from the package (no CDN). None of them looks at
 * credentials or counts against rate limits.
 */
const openapiRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const config = { auth: false, rateLimit: false } as const;
  let yaml: string | undefined;
  app.get(
    '/openapi.json',
    {
      config,
      schema: {
        tags: ['operations'],
        operationId: 'getOpenApiJson',
        summary: 'This document, as JSON',
        description: 'Serves this OpenAPI document, generated from the routes. Ignores credentials.',
        security: [],
        response: { 200: json(OpenApiDocumentSchema, 'The OpenAPI document.') },
      },
    },
    async () => app.swagger() as z.input<typeof OpenApiDocumentSchema>,
  );
  app.get(
    '/openapi.yaml',
    {
      config,
      schema: {
        tags: ['operations'],
        operationId: 'getOpenApiDocument',
        summary: 'This document, as YAML',
        description:
          'Serves this OpenAPI document as YAML (the repository keeps a copy made with a default config: `openapi.yaml`). Ignores credentials.',
        security: [],
        response: {
          200: {
            description: 'The OpenAPI document.',
            content: { 'application/yaml': { schema: z.string().describe('OpenAPI 3.1 as YAML.') } },
          },
        },
      },
    },
    async (_request, reply) => reply.type('application/yaml; charset=utf-8').send((yaml ??= documentYaml(app.swagger()))),
  );
  // Offline: the pages and their scripts come from the package, and no validator is called.
  await app.register(swaggerUi, { routePrefix: DOCS_PREFIX, validatorUrl: false });
};

export default openapiRoutes;
