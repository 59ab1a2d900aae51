import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import {
  McpServerIdParamsSchema,
  McpServerListSchema,
  McpServerRecordSchema,
  PendingListSchema,
  PendingQuerySchema,
  ReviewBodySchema,
  ReviewResultSchema,
} from '../../model/admin-api.js';
import { pendingChangeBody } from '../../model/mcp-review.js';
import type { McpTool } from '../../model/mcp-schemas.js';
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

const PENDING_DESCRIPTION = `The versions of the server's tools that wait for an operator (policy \`review\`, the
default): a tool the upstream lists for the first time, or lists with another title, description
or schema than the version agents are served. Agents keep the accepted version (and calls are
checked against its schema) until the change is accepted; a tool the upstream no longer lists
leaves at once. Each change names the served \`tool\` and the \`digest\` of its pending version,
which \`POST /mcp-servers/{id}/accept\` and \`/reject\` take, with a \`diff\` from the accepted
version by JSON pointer. Paged by tool name (\`after\`, \`next\`).`;

const ACCEPT_DESCRIPTION = `Accepts pending changes, each by its \`tool\` and the \`digest\` listed in
\`GET /mcp-servers/{id}/pending\`: agents are served those versions from this write on. All or
none: a change that is no longer pending, or whose pending version has another digest now (the
upstream changed it again since it was read), refuses the whole request with \`409\` naming it,
and nothing is accepted. Audited under the operator, with the digests before and after.`;

const REJECT_DESCRIPTION = `Rejects pending changes, by \`tool\` and \`digest\` as for accepting them:
agents keep the version they are served, and the same version listed again stays out of the
queue (a later, different version is pending again). Rejected versions are listed with
\`rejected=true\`, and can still be accepted. Audited under the operator.`;

/** Upstream MCP servers hold credentials and URLs (backend topology): every route needs the admin scope. */
const mcpServerRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);
  const body = (record: McpServerRecord) => {
    const upstream = app.mcpUpstreams.status(record.id);
    return {
      ...mcpServerRecordBody(record),
      ...(upstream && { upstream: { ...upstream, pending: app.store.mcpPendingCount(record.id) } }),
    };
  };
  const live = (id: string): McpServerRecord => {
    const record = app.catalog.getMcpServer(id);
    if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no MCP server "${id}"`);
    return record;
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
    async (request) => body(live(request.params.id)),
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

  app.get(
    '/mcp-servers/:id/pending',
    {
      config: { admin: 'reading pending changes of an MCP server' },
      schema: {
        tags: ['mcp-servers'],
        operationId: 'listMcpServerPending',
        summary: "List an upstream server's changes that wait for review",
        description: PENDING_DESCRIPTION,
        security,
        params: McpServerIdParamsSchema,
        querystring: PendingQuerySchema,
        response: {
          200: json(PendingListSchema, 'A page of pending changes, by tool name.'),
          ...adminReadProblems,
          404: problems.NotFound,
        },
      },
    },
    async (request) => {
      const { id } = live(request.params.id);
      const { after, limit, rejected } = request.query;
      const rows = app.store.mcpPendingPage(id, after ?? '', limit + 1, rejected);
      const page = rows.slice(0, limit);
      const accepted = (name: string) => {
        const tool = app.catalog.getTool(name)?.record;
        return tool?.kind === 'mcp' && tool.serviceId === id ? (tool.descriptor as McpTool) : undefined;
      };
      return {
        changes: page.map((row) => pendingChangeBody(row, accepted(row.name))),
        pending: app.store.mcpPendingCount(id),
        next: rows.length > limit ? (page.at(-1)?.name ?? null) : null,
      };
    },
  );

  for (const verb of ['accept', 'reject'] as const) {
    app.post(
      `/mcp-servers/:id/${verb}`,
      {
        config: { admin: `${verb === 'accept' ? 'accepting' : 'rejecting'} changes of an MCP server`, audit: `mcp-server.${verb}` },
        schema: {
          tags: ['mcp-servers'],
          operationId: verb === 'accept' ? 'acceptMcpServerChanges' : 'rejectMcpServerChanges',
          summary: verb === 'accept' ? 'Accept pending changes of an upstream server' : 'Reject pending changes of an upstream server',
          description: verb === 'accept' ? ACCEPT_DESCRIPTION : REJECT_DESCRIPTION,
          security,
          params: McpServerIdParamsSchema,
          body: ReviewBodySchema,
          response: {
            // A rejection changes no tool: it takes no registry index.
            200:
              verb === 'accept'
                ? json(ReviewResultSchema, 'The changes were accepted.', { headers: writeIndex })
                : json(ReviewResultSchema, 'The changes were rejected.'),
            ...writeProblems,
            404: problems.NotFound,
          },
        },
      },
      async (request, reply) => {
        live(request.params.id);
        const write = verb === 'accept' ? app.registry.acceptMcpChanges : app.registry.rejectMcpChanges;
        const result = await write.call(app.registry, request.params.id, request.body.changes, actorOf(request));
        if (result.index !== null) reply.header('x-registry-index', String(result.index));
        return { changes: result.changes };
      },
    );
  }

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
