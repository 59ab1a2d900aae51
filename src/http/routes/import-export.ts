import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { z } from 'zod';
import { ExportBundleSchema, ExportQuerySchema, ImportBodySchema, ImportSummarySchema } from '../../model/admin-api.js';
import type { StoredToolDescriptor } from '../../model/descriptors.js';
import { RegistryError } from '../../model/errors.js';
import {
  importOfTrustGraph,
  inDumpTerms,
  trustGraphDumpOf,
  trustGraphItemsOf,
  TrustGraphDumpSchema,
} from '../../model/trustgraph-config.js';
import { adminOnly, adminReadProblems, headers, json, writeProblems } from '../openapi/responses.js';
import { readBodyInPlace } from '../body-in-place.js';
import { charsetProblem } from '../json-body.js';
import { actorOf } from '../plugins/audit.js';
import { parseJsonSliced } from '../sliced-json.js';
import { documentedOnly } from '../validation.js';

/** Bulk import (one transaction, all or nothing) and export in the same bundle form. */
const importExportRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);
  // One item of a bundle is no bigger than a write of it alone may be.
  const maxItem = { bytes: config.bodyLimit, setting: 'BODY_LIMIT' };

  // In this plugin only: JSON bodies are kept as bytes (up to IMPORT_BODY_LIMIT), read in
  // place and parsed in slices by the route, so that a bundle of tens of MiB never holds the
  // event loop.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { bodyLimit: config.importBodyLimit }, (request, payload, done) => {
    const charset = charsetProblem(request.headers['content-type']);
    if (charset) done(charset, undefined);
    else readBodyInPlace(payload, request.headers['content-length'], config.importBodyLimit, done);
  });

  app.post(
    '/import',
    {
      config: { admin: 'importing', audit: 'import', bodyLimit: { bytes: config.importBodyLimit, setting: 'IMPORT_BODY_LIMIT' } },
      schema: {
        tags: ['bulk'],
        operationId: 'importBundle',
        summary: 'Import tool services and tools in one transaction',
        description:
          "Creates or replaces every tool service and tool in the bundle under one registry index, all or nothing. Tools may use services from the bundle or already registered ones. Every problem is reported in one `400` with its path in the bundle (for example `tools.3.service`), at most 100 of them; this includes replaced services that would invalidate live tools the bundle does not replace. One item (a tool service, a tool, or an item of a dump) is at most `BODY_LIMIT` bytes of JSON, what a write of it alone may send; a bigger one is a `400` naming it. A TrustGraph config dump is taken too, told apart by its keys (`config`, or `tool-service` and `tool`, where a bundle has `tool-services` and `tools`): its `tool-service` items and `tool-service` tools are imported the same way, problems named by their path in the dump (`config.tool.tell-joke.style`), and tools of TrustGraph's other kinds and other config types are left out and listed under `skipped`.",
        security,
        // Checked item by item by the registry service, every problem reported with its path.
        body: documentedOnly(ImportBodySchema),
        response: {
          200: json(ImportSummarySchema, 'The bundle was imported.', { headers: { 'X-Registry-Index': headers['X-Registry-Index'] } }),
          ...writeProblems,
        },
      },
    },
    async (request, reply) => {
      // Bytes from the parser above, or nothing when no body came (no Content-Type, so no parser
      // ran): that is refused as a bundle, as every other write refuses a missing descriptor.
      const bytes = request.body as unknown as Buffer | undefined;
      const body =
        bytes === undefined
          ? undefined
          : await parseJsonSliced(bytes, { maxDepth: config.jsonMaxDepth, maxItem, scheduler: app.catalog.scheduler });
      const dump = trustGraphItemsOf(body);
      if (dump === undefined) {
        const summary = await app.registry.importBundle(body, actorOf(request));
        reply.header('x-registry-index', String(summary.index));
        return summary;
      }
      const converted = importOfTrustGraph(dump.items, dump.prefix, config.jsonMaxDepth, maxItem);
      try {
        const summary = await app.registry.importBundle(converted.bundle, actorOf(request));
        reply.header('x-registry-index', String(summary.index));
        return { ...summary, skipped: converted.skipped };
      } catch (err) {
        // Named as the dump has them: `config.tool.tell-joke.style`, not `tools.0.style`.
        if (!(err instanceof RegistryError) || err.fieldErrors === undefined) throw err;
        const errors = inDumpTerms(err.fieldErrors, converted.paths);
        const first = errors[0];
        throw new RegistryError(
          err.code,
          `invalid TrustGraph config dump: ${errors.length} problem(s)${first ? `, first ${first.path}: ${first.message}` : ''}`,
          {
            fieldErrors: errors,
          },
        );
      }
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
          "Everything live, in the import bundle's form (descriptors as stored, so the result can be imported as is), or with `format=trustgraph` the tool services and message-bus tools as `tool-service` and `tool` items of TrustGraph's config (`{source_workspace, source_version, config: {type: {key: JSON text}}}`, the form of `tg-export-workspace-config`; `source_workspace` is `TRUSTGRAPH_WORKSPACE`, `source_version` the registry index), which `POST /import` also takes. Includes queue names and config values, so it needs the admin scope.",
        security,
        querystring: ExportQuerySchema,
        response: {
          200: json(
            z.union([ExportBundleSchema, TrustGraphDumpSchema]),
            "The registry's content: an `ExportBundle`, or with `format=trustgraph` a `TrustGraphConfigDump`.",
          ),
          ...adminReadProblems,
        },
      },
    },
    async (request) => {
      const bundle = app.registry.exportBundle();
      if (request.query.format === 'trustgraph')
        return trustGraphDumpOf(bundle['tool-services'], bundle.tools, config.trustgraph.workspace, app.catalog.index);
      // Descriptors as stored (see StoredToolDescriptor).
      return { ...bundle, tools: bundle.tools as StoredToolDescriptor[] };
    },
  );
};

export default importExportRoutes;
