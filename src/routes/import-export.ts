import type { FastifyPluginAsync } from 'fastify';

/** Bulk import (one transaction, all or nothing) and export in the same bundle form. */
const importExportRoutes: FastifyPluginAsync = async (app) => {
  app.post('/import', async (request, reply) => {
    app.requireAdmin(request, 'importing');
    const summary = app.registry.importBundle(request.body);
    reply.header('x-registry-index', String(summary.index));
    return summary;
  });

  /** Includes queues and config values, so it needs the admin scope too. */
  app.get('/export', async (request) => {
    app.requireAdmin(request, 'exporting');
    return app.registry.exportBundle();
  });
};

export default importExportRoutes;
