import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../config.js';
import { viewKeyFor } from './view-policy.js';

/**
 * `GET /stats`: the article's inventory figures over the caller's view (same policy as
 * discovery), plus usage fields the call bridge fills in.
 */
const statsRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  app.get('/stats', async (request) => {
    const inventory = app.catalog.stats(viewKeyFor(request.caller, config.anonymousDiscovery));
    return {
      ...inventory,
      registry_index: app.catalog.index,
      // Usage: filled by the call bridge; zero until tools are called through the registry.
      total_tool_calls: 0,
      usage_by_tool: {},
      most_used_tool: null,
    };
  });
};

export default statsRoutes;
