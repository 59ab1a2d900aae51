/**
 * Builds the Fastify app from a config. The server, the CLI and the tests all construct it
 * here, with the same options (house style 1); only src/server.ts listens.
 */
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Config } from '../config.js';
import type { Resolver } from '../bridge/outbound-policy.js';
import { answerExpectation, clientErrorHandler, frameworkErrors } from './framework-errors.js';
import jsonBodyPlugin from './json-body.js';
import auditPlugin from './plugins/audit.js';
import authPlugin from './plugins/auth.js';
import announcePlugin from './plugins/announce.js';
import bridgePlugin from './plugins/bridge.js';
import connectionsPlugin, { serverTimeouts } from './plugins/connections.js';
import errorsPlugin from './plugins/errors.js';
import mcpUpstreamsPlugin from './plugins/mcp-upstreams.js';
import openApiSourcesPlugin from './plugins/openapi-sources.js';
import metricsPlugin from './plugins/metrics.js';
import openapiPlugin from './plugins/openapi.js';
import outboundPlugin from './plugins/outbound.js';
import rateLimitPlugin from './plugins/rate-limit.js';
import registryPlugin from './plugins/registry.js';
import routeConfigPlugin from './plugins/route-config.js';
import securityHeadersPlugin from './plugins/security-headers.js';
import tracingPlugin, { type TracingHandle } from './plugins/tracing.js';
import trustGraphConfigPlugin from './plugins/trustgraph-config.js';
import { requestIdOf } from './request-id.js';
import { lazyChildLogger } from './request-logger.js';
import agUiRoutes from './routes/ag-ui.js';
import auditRoutes from './routes/audit.js';
import changesRoutes from './routes/changes.js';
import dashboardRoutes from './routes/dashboard.js';
import discoveryRoutes from './routes/discovery.js';
import healthRoutes from './routes/health.js';
import importExportRoutes from './routes/import-export.js';
import invokeRoutes from './routes/invoke.js';
import mcpRoutes from './routes/mcp.js';
import mcpServerRoutes from './routes/mcp-servers.js';
import openApiSourceRoutes from './routes/openapi-sources.js';
import metricsRoutes from './routes/metrics.js';
import openapiRoutes from './routes/openapi.js';
import statsRoutes from './routes/stats.js';
import toolServiceRoutes from './routes/tool-services.js';
import toolRoutes from './routes/tools.js';
import toolCredentialRoutes from './routes/tool-credentials.js';
import wellKnownRoutes, { resourceMetadataUrl } from './routes/well-known.js';
import { serializerCompiler, validatorCompiler } from './validation.js';

export interface BuildOptions {
  /** pino options or false; the server passes its terminal-aware logger options. */
  logger?: FastifyServerOptions['logger'];
  /** The OpenTelemetry SDK the server started (src/telemetry.ts): server spans, flushed on close. */
  tracing?: TracingHandle;
  /** Resolves tool hosts' and MCP servers' names for the outbound address policy (default: the system's); tests give their own. */
  resolve?: Resolver;
}

function fastifyOptions(config: Config, options: BuildOptions = {}): FastifyServerOptions {
  // Fastify hands `http` to http.createServer, but its types do not declare it.
  const serverOptions: FastifyServerOptions & { http: { maxHeaderSize: number; requireHostHeader: boolean } } = {
    logger: options.logger ?? false,
    // Without a logger Fastify makes no child at all; with one, only requests that log make one.
    ...(options.logger ? { childLoggerFactory: lazyChildLogger } : {}),
    bodyLimit: config.bodyLimit,
    // A missing Host is refused in the problem shape by the first hook (framework-errors.ts).
    http: { maxHeaderSize: config.maxHeaderSize, requireHostHeader: false, ...serverTimeouts(config).http },
    // A client's X-Request-Id is used only when bounded and well-formed (src/http/request-id.ts).
    requestIdHeader: false,
    genReqId: requestIdOf,
    ...serverTimeouts(config).fastify,
    // Requests arriving while closing get a problem+json 503 (src/http/plugins/security-headers.ts).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Problem details also for what is refused before any route runs.
    frameworkErrors,
    clientErrorHandler,
  };
  return serverOptions;
}

export async function buildApp(config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions(config, options));
  app.server.on('checkExpectation', answerExpectation);
  // Every route's zod schemas validate its request and type its handler (src/http/validation.ts).
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // Descriptors are JSON only; anything else is 415 rather than a confusing validation error.
  app.removeContentTypeParser('text/plain');
  // Before any hook that reads a route's config (src/http/plugins/route-config.ts).
  await app.register(routeConfigPlugin);
  // First of the hooks, so that every other hook runs inside the request's span.
  await app.register(tracingPlugin, { tracing: options.tracing });
  await app.register(securityHeadersPlugin, { config });
  await app.register(errorsPlugin, { resourceMetadataUrl: resourceMetadataUrl(config.resource) });
  // Its onRequest hook refuses on probe-only connections before any token is checked.
  await app.register(connectionsPlugin, { config });
  await app.register(jsonBodyPlugin, { maxDepth: config.jsonMaxDepth });
  // Before the write side, which checks targets with it, and the transports, which connect through it.
  await app.register(outboundPlugin, { config, resolve: options.resolve });
  await app.register(registryPlugin, { config });
  await app.register(authPlugin, { config });
  // Before any route, so that the document sees them all; before rate limiting (see the plugin).
  await app.register(openapiPlugin, { config });
  await app.register(rateLimitPlugin, { config });
  await app.register(auditPlugin, { config });
  // Before the bridge, whose mcp transport uses its connections.
  await app.register(mcpUpstreamsPlugin, { config });
  await app.register(openApiSourcesPlugin, { config });
  await app.register(announcePlugin, { config });
  await app.register(bridgePlugin, { config });
  // After the services it reads, before the routes it times.
  await app.register(metricsPlugin, { config });
  // After the metrics it reports to; it follows the change bus once the app is ready.
  await app.register(trustGraphConfigPlugin, { config });
  // In the order the document lists them.
  await app.register(discoveryRoutes, { config });
  await app.register(changesRoutes, { config });
  await app.register(statsRoutes, { config });
  await app.register(toolRoutes, { config });
  await app.register(toolCredentialRoutes, { config });
  await app.register(invokeRoutes);
  await app.register(agUiRoutes, { config });
  // Its own prefix, so that the catch-all @fastify/cors adds stays under /mcp (routes/mcp.ts).
  await app.register(mcpRoutes, { config, prefix: '/mcp' });
  await app.register(toolServiceRoutes, { config });
  await app.register(mcpServerRoutes, { config });
  await app.register(openApiSourceRoutes, { config });
  await app.register(importExportRoutes, { config });
  await app.register(auditRoutes, { config });
  await app.register(healthRoutes);
  await app.register(metricsRoutes, { config });
  await app.register(wellKnownRoutes, { config });
  await app.register(openapiRoutes);
  // A page, not API: hidden from the document, as /docs is.
  await app.register(dashboardRoutes, { config });
  return app;
}
