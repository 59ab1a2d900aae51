import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { StatsSchema } from '../../model/api.js';
import { seesEverything, viewKeyFor } from '../../model/visibility.js';
import { ANYONE, json, problems } from '../openapi/responses.js';

/**
 * `GET /stats`: the article's inventory figures over the caller's view (same policy as
 * discovery), and usage of the tools in it: calls, errors by class, latency. Figures per agent
 * name token subjects and figures per service name backends, so only operators (the admin
 * scope, or STATS_READ_SCOPE) get them.
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
          "The article's `/stats` figures computed over the same view as `GET /`, plus the registry index and usage fields. `total_tool_services` counts every live tool service, whatever the view. The usage fields stay at zero / empty / null until tools are called through the registry. `usage_by_agent` names token subjects and `tools_by_service` and `tools_by_mcp_server` name backends, so they are filled only for tokens holding the admin scope (or `STATS_READ_SCOPE`, where set), which also see the whole catalogue; everyone else gets them empty, and the aggregates over its own view.",
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
      const key = viewKeyFor(request.caller, config.visibility, app.catalog.knownScopeNames);
      const inventory = app.catalog.stats(key);
      // Usage follows the view too; the full view includes tools deleted since they were called.
      const visible = new Set(inventory.tools_by_name);
      const operator = seesEverything(request.caller, config.visibility);
      const usage = app.usage.stats(key.kind === 'all' ? () => true : (tool) => visible.has(tool), operator);
      const services = operator ? app.catalog.serviceStats() : { tools_by_service: {}, tools_by_mcp_server: {} };
      const replica = app.replication?.state.replica;
      return { ...inventory, ...services, registry_index: app.catalog.index, ...(replica !== undefined && { replica }), ...usage };
    },
  );
};

export default statsRoutes;
