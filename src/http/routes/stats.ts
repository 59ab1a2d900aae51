import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { StatsQuerySchema, StatsSchema, WindowStatsSchema } from '../../model/api.js';
import { seesEverything, viewKeyFor } from '../../model/visibility.js';
import { ANYONE, json, problems } from '../openapi/responses.js';

/**
 * `GET /stats`: the article's inventory figures over the caller's view (same policy as
 * discovery), and usage of the tools in it: calls, errors by class, latency. Figures per agent
 * name token subjects and figures per service name backends, so only operators (the admin
 * scope, or STATS_READ_SCOPE) get them. `?window=1h|24h` answers the usage fields over the last
 * hour or day instead, minute by minute (issue 34), under the same view.
 */
const statsRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get(
    '/stats',
    {
      config: { invalidRequest: 'invalid stats query' },
      schema: {
        tags: ['discovery'],
        operationId: 'getStats',
        summary: "Inventory and usage figures over the caller's view",
        description:
          "The article's `/stats` figures computed over the same view as `GET /`, plus the registry index and usage fields. `total_tool_services` counts every live tool service, whatever the view. The usage fields stay at zero / empty / null until tools are called through the registry. `usage_by_agent` names token subjects and `tools_by_service` and `tools_by_mcp_server` name backends, so they are filled only for tokens holding the admin scope (or `STATS_READ_SCOPE`, where set), which also see the whole catalogue; everyone else gets them empty, and the aggregates over its own view. With `window` (`1h` or `24h`) the answer is `WindowStats` instead: the usage fields over that window of this process, under the same view, plus one bucket per minute; any other `window` is `400` naming it.",
        security: ANYONE,
        querystring: StatsQuerySchema,
        response: {
          200: json(
            z.union([StatsSchema, WindowStatsSchema]),
            "Figures over the caller's view: `Stats`, or `WindowStats` when `window` is given.",
          ),
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
      const include = key.kind === 'all' ? () => true : (tool: string) => visible.has(tool);
      const replica = app.replication?.state.replica;
      const { window } = request.query;
      if (window !== undefined) {
        return { window, ...(replica !== undefined && { replica }), ...app.usage.windowStats(window, include) };
      }
      const operator = seesEverything(request.caller, config.visibility);
      const usage = app.usage.stats(include, operator);
      const services = operator ? app.catalog.serviceStats() : { tools_by_service: {}, tools_by_mcp_server: {} };
      return { ...inventory, ...services, registry_index: app.catalog.index, ...(replica !== undefined && { replica }), ...usage };
    },
  );
};

export default statsRoutes;
