import type { FastifyPluginAsync } from 'fastify';
import { actorOf } from '../plugins/audit.js';

/** Bulk import (one transaction, all or nothing) and export in the same bundle form. */
const importExportRoutes: FastifyPluginAsync = async (app) => {
  app.post('/import', { config: { admin: 'importing', audit: 'import' } }, async (request, reply) => {
    const summary = await app.registry.importBundle(request.body, actorOf(request));
    reply.header('x-registry-index', String(summary.index));
    return summary;
  });

  /** Includes queues and config values, so it needs the admin scope too. */
  app.get('/export', { config: { admin: 'exporting' } }, async () => app.registry.exportBundle());
};

export default importExportRoutes;
