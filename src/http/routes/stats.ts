import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { StatsSchema } from '../../model/api.js';
import { viewKeyFor } from '../../model/visibility.js';
import { ANYONE, json, problems } from '../openapi/responses.js';

/**
 * `GET /stats`: the article's inventory figures over the caller's view (same policy as
 * discovery), and usage of the tools in it: calls, per agent, errors by class, latency.
 */
const statsRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/stats',
    {
      schema: {
        tags: ['discovery'],
        operationId: 'getStats',
        summary: "Inventory and usage figures over the caller's view",
        description:
          "The article's `/stats` figures computed over the same view as `GET /`, plus the registry index and usage fields. `total_tool_services` counts every live tool service, whatever the view. The usage fields stay at zero / empty / null until tools are called through the registry.",
        security: ANYONE,
        response: {
          200: json(StatsSchema, "Figures over the caller's view."),
          400: problems.BadRequest,
          401: problems.ViewUnauthorized,
          429: problems.TooManyRequests,
        },
      },
    },
    async (request) => {
      const key = viewKeyFor(request.caller, config.anonymousDiscovery, () => app.catalog.knownScopes().keys());
      const inventory = app.catalog.stats(key);
      // Usage follows the view too; the full view includes tools deleted since they were called.
      const visible = new Set(inventory.tools_by_name);
      const usage = app.usage.stats(key.kind === 'all' ? () => true : (tool) => visible.has(tool));
      return { ...inventory, registry_index: app.catalog.index, ...usage };
    },
  );
};

export default statsRoutes;
