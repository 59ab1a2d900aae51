import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { McpServerIdParamsSchema, McpServerListSchema, McpServerRecordSchema } from '../../model/admin-api.js';
import { McpServerPutBodySchema, parseMcpServerBody } from '../../model/descriptors.js';
import { RegistryError } from '../../model/errors.js';
import { mcpServerRecordBody } from '../../model/record-bodies.js';
import type { McpServerRecord } from '../../model/records.js';
import { adminOnly, adminReadProblems, headers, json, problems, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';
import { pathKeyIntoBody, validatedBy } from '../validation.js';

const writeIndex = { 'X-Registry-Index': headers['X-Registry-Index'] };

const PUT_DESCRIPTION = `Registers an upstream MCP server (Streamable HTTP), or replaces one. The registry connects
to \`url\` (and to no other URL: redirects elsewhere are not followed), lists its tools over
every page of \`tools/list\`, and stores each as a tool of kind \`mcp\` named \`prefix\` +
the upstream's name, with the server's \`toolScopes\` entry for it, else its \`scopes\`. The
tools then show in discovery, \`/stats\`, the change feed and \`POST /tools/{name}/invoke\`
like any other. It lists them again on \`notifications/tools/list_changed\` and every
\`refreshIntervalS\` (default \`MCP_UPSTREAM_REFRESH_S\`); a listing that finds the same tools
writes nothing. Tools whose name is not a valid tool name, or is taken by another tool, are
skipped and named in \`upstream.skipped\`.

The answer does not wait for the server: its tools follow, and \`GET /mcp-servers/{id}\`
shows how it went. A server that cannot be reached is \`down\`; calls to its tools answer
\`503\` until a retry (with backoff) reaches it again.

\`credential.bearer\` is sent as \`Authorization: Bearer\` on every request to the server (a
caller's own token never is). It is stored, and never shown, logged, audited or exported:
reads show \`credential: {"set": true}\`, which a PUT may send back to keep it. A replacement
reconnects and lists the tools again. \`201\` when created, \`200\` when replaced.`;

/** Upstream MCP servers hold credentials and URLs (backend topology): every route needs the admin scope. */
const mcpServerRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);
  const body = (record: McpServerRecord) => {
    const upstream = app.mcpUpstreams.status(record.id);
    return { ...mcpServerRecordBody(record), ...(upstream && { upstream }) };
  };

  app.get(
    '/mcp-servers',
    {
      config: { admin: 'listing MCP servers' },
      schema: {
        tags: ['mcp-servers'],
        operationId: 'listMcpServers',
        summary: 'List upstream MCP servers',
        description: 'Every registered MCP server, sorted by id, with the state of its connection. Needs the admin scope.',
        security,
        response: { 200: json(McpServerListSchema, 'The registered MCP servers.'), ...adminReadProblems },
      },
    },
    async () => ({ mcpServers: app.catalog.mcpServers().map(body) }),
  );

  app.get(
    '/mcp-servers/:id',
    {
      config: { admin: 'reading an MCP server' },
      schema: {
        tags: ['mcp-servers'],
        operationId: 'getMcpServer',
        summary: 'Read one upstream MCP server',
        description:
          'The stored server (its credential hidden) and `upstream`: whether it is connected, when its tools were last synced, the last error, and the upstream tools skipped.',
        security,
        params: McpServerIdParamsSchema,
        response: { 200: json(McpServerRecordSchema, 'The stored server and its state.'), ...adminReadProblems, 404: problems.NotFound },
      },
    },
    async (request) => {
      const record = app.catalog.getMcpServer(request.params.id);
      if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no MCP server "${request.params.id}"`);
      return body(record);
    },
  );

  app.put(
    '/mcp-servers/:id',
    {
      config: { admin: 'writing an MCP server', audit: 'mcp-server.put' },
      preValidation: pathKeyIntoBody('id'),
      schema: {
        tags: ['mcp-servers'],
        operationId: 'putMcpServer',
        summary: 'Register or replace an upstream MCP server',
        description: PUT_DESCRIPTION,
        security,
        params: McpServerIdParamsSchema,
        // The registry service checks the URL against the outbound address policy.
        body: validatedBy(McpServerPutBodySchema, (data) => parseMcpServerBody(data)),
        response: {
          200: json(McpServerRecordSchema, 'An existing server was replaced.', { headers: writeIndex }),
          201: json(McpServerRecordSchema, 'The server was registered.', { headers: writeIndex }),
          ...writeProblems,
        },
      },
    },
    async (request, reply) => {
      const { record, created } = await app.registry.putMcpServer(request.body, { pathId: request.params.id, actor: actorOf(request) });
      reply.header('x-registry-index', String(record.index));
      return reply.code(created ? 201 : 200).send(body(record));
    },
  );

  app.delete(
    '/mcp-servers/:id',
    {
      config: { admin: 'deleting an MCP server', audit: 'mcp-server.delete' },
      schema: {
        tags: ['mcp-servers'],
        operationId: 'deleteMcpServer',
        summary: 'Delete an upstream MCP server',
        description:
          'Leaves a tombstone (status `deleted`) and deletes every tool of the server in the same write; its stored credential is erased.',
        security,
        params: McpServerIdParamsSchema,
        response: {
          200: json(McpServerRecordSchema, "The server's tombstone.", { headers: writeIndex }),
          ...adminReadProblems,
          404: problems.NotFound,
          503: problems.Unavailable,
        },
      },
    },
    async (request, reply) => {
      const { server } = await app.registry.deleteMcpServer(request.params.id, actorOf(request));
      reply.header('x-registry-index', String(server.index));
      return mcpServerRecordBody(server);
    },
  );
};

export default mcpServerRoutes;
