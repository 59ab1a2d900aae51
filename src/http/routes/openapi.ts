import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { packageRoot } from '../../package-root.js';

/** Serves the OpenAPI document that test/openapi.test.ts keeps in step with the routes. */
const openapiRoutes: FastifyPluginAsync = async (app) => {
  const document = readFileSync(join(packageRoot(), 'openapi.yaml'));
  app.get('/openapi.yaml', { config: { auth: false, rateLimit: false } }, async (_request, reply) =>
    reply.type('application/yaml; charset=utf-8').send(document),
  );
};

export default openapiRoutes;
