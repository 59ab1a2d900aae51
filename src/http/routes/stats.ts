import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import { viewKeyFor } from '../../model/visibility.js';

/**
 * `GET /stats`: the article's inventory figures over the caller's view (same policy as
 * discovery), and usage of the tools in it: calls, per agent, errors by class, latency.
 */
const statsRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  app.get('/stats', async (request) => {
    const key = viewKeyFor(request.caller, config.anonymousDiscovery, () => app.catalog.knownScopes().keys());
    const inventory = app.catalog.stats(key);
    // Usage follows the view too; the full view includes tools deleted since they were called.
    const visible = new Set(inventory.tools_by_name);
    const usage = app.usage.stats(key.kind === 'all' ? () => true : (tool) => visible.has(tool));
    return { ...inventory, registry_index: app.catalog.index, ...usage };
  });
};

export default statsRoutes;
