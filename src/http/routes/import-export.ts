import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { ExportBundleSchema, ImportBundleDescriptorSchema, ImportSummarySchema, type StoredToolDescriptor } from '../../model/api.js';
import { adminOnly, adminReadProblems, headers, json, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';
import { parseJsonSliced } from '../sliced-json.js';
import { documentedOnly } from '../validation.js';

/** Bulk import (one transaction, all or nothing) and export in the same bundle form. */
const importExportRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);

  // In this plugin only: JSON bodies are kept as bytes (up to IMPORT_BODY_LIMIT) and parsed
  // in slices by the route, so that a bundle of tens of MiB never holds the event loop.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: config.importBodyLimit }, (_request, body, done) => done(null, body));

  app.post(
    '/import',
    {
      config: { admin: 'importing', audit: 'import' },
      schema: {
        tags: ['bulk'],
        operationId: 'importBundle',
        summary: 'Import tool services and tools in one transaction',
        description:
          'Creates or replaces every tool service and tool in the bundle under one registry index, all or nothing. Tools may use services from the bundle or already registered ones. Every problem is reported in one `400` with its path in the bundle (for example `tools.3.service`), at most 100 of them; this includes replaced services that would invalidate live tools the bundle does not replace.',
        security,
        // Checked item by item by the registry service, every problem reported with its path.
        body: documentedOnly(ImportBundleDescriptorSchema),
        response: {
          200: json(ImportSummarySchema, 'The bundle was imported.', { headers: { 'X-Registry-Index': headers['X-Registry-Index'] } }),
          ...writeProblems,
        },
      },
    },
    async (request, reply) => {
      const bundle = await parseJsonSliced(request.body as unknown as Buffer, { maxDepth: config.jsonMaxDepth });
      const summary = await app.registry.importBundle(bundle, actorOf(request));
      reply.header('x-registry-index', String(summary.index));
      return summary;
    },
  );

  /** Includes queues and config values, so it needs the admin scope too. */
  app.get(
    '/export',
    {
      config: { admin: 'exporting' },
      schema: {
        tags: ['bulk'],
        operationId: 'exportBundle',
        summary: 'Export every live tool service and tool',
        description:
          'Everything live, in the import bundle\'s form (descriptors as stored, so the result can be imported as is). Includes queue names and config values, so it needs the admin scope.',
        security,
        response: { 200: json(ExportBundleSchema, "The registry's content."), ...adminReadProblems },
      },
    },
    async () => {
      const bundle = app.registry.exportBundle();
      // Descriptors as stored (see StoredToolDescriptor).
      return { ...bundle, tools: bundle.tools as StoredToolDescriptor[] };
    },
  );
};

export default importExportRoutes;
