/**
 * OpenAPI sources (issue 30): `PUT /openapi-sources/{id}` takes an OpenAPI 3.0 or 3.1 document
 * (inline, or read from `documentUrl` through the outbound address policy), converts it in a
 * worker thread (src/sources/openapi/convert.ts), and writes the source and one HTTP tool per
 * kept operation in one write; `GET` reads sources back (credentials masked), `DELETE` removes a
 * source with its tools. Admin scope on every route: sources hold credentials and API topology.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { PendingQuerySchema, ReviewBodySchema, ReviewResultSchema } from '../../model/admin-api.js';
import { parseOpenApiSourceBody } from '../../model/descriptors.js';
import { RegistryError } from '../../model/errors.js';
import { OpenApiPendingListSchema, OpenApiRefreshResultSchema, openApiPendingBody } from '../../model/openapi-review.js';
import {
  OpenApiSourceIdParamsSchema,
  OpenApiSourceListSchema,
  OpenApiSourcePutBodySchema,
  OpenApiSourceRecordSchema,
  openApiSourceBody,
  openApiSourceOwner,
  type OpenApiSource,
  type OpenApiSourceRecord,
} from '../../model/openapi-source.js';
import { adminOnly, adminReadProblems, headers, json, problems, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';
import { pathKeyIntoBody, validatedBy } from '../validation.js';

const writeIndex = { 'X-Registry-Index': headers['X-Registry-Index'] };

const PUT_DESCRIPTION = `Registers an OpenAPI 3.0 or 3.1 document as tools, or replaces one. Give the document
inline as \`document\` (JSON or YAML text, or the JSON object), or \`documentUrl\`, which the registry
reads now (through the outbound address policy, no redirects) and again on the source's interval
(\`refreshIntervalS\`, default OPENAPI_REFRESH_S) or on \`POST /openapi-sources/{id}/refresh\`: what
a later read finds new or changed waits for review under the \`policy\` \`review\` (the default). Every operation that passes
\`filter\` becomes an HTTP tool named \`prefix\` + its \`operationId\` (or its method and path),
sanitised and unique; its description from \`summary\` and \`description\`; its input schema from
the parameters and the JSON request body (\`$ref\`s resolved, \`readOnly\` properties left out); its
output schema from the 2xx JSON answer when that is an object. Its \`scopes\` follow the
operation's \`security\`: one entry per requirement object, needing all of its scopes (a scheme
without scopes by the scheme's name), any one entry granting the tool (\`scopeMap\` renames
them); an operation without security is open unless the source gives \`scopes\`.

\`credential\` is what the registry sends the API, never the caller's token: \`{"apiKey": "…"}\`
fills the document's apiKey scheme, \`{"bearer": "…"}\` a bearer scheme, \`{"clientCredentials":
{...}}\` fetches OAuth 2.0 tokens (the document's token URL unless given), \`{"tokenExchange":
{...}}\` trades each caller's token for one meant for the API (RFC 8693). It is sealed in the
database and never shown, logged, audited or exported; reads show it masked, and \`{"set": true}\`
keeps the stored one. The source and all its tools are one write: a name another tool holds, an
invalid document (with the JSON pointer of the problem) or a refused base URL changes nothing.
Operations whose tool would not pass registration are listed in \`skipped\`. \`201\` when created.`;

const REFRESH_DESCRIPTION = `Reads the source's \`documentUrl\` now (as its interval does), converts it, and
applies what differs from the tools agents are served: an operation the document no longer has
leaves at once; a new or changed one is written at once under the source's \`policy\` \`auto\`, or
waits in \`GET /openapi-sources/{id}/pending\` under \`review\` (the default), agents keeping the tool
they have. A pending version is the whole tool: where its calls go and its scopes count as much as
its text. An operation whose name another tool holds, or whose target the outbound address policy
refuses, is skipped with the reason. A document that cannot be read or converted is a 400 naming
it, and changes nothing; a source given its document inline has no URL to read (409).`;

const PENDING_DESCRIPTION = `The versions of the source's tools that a read of its \`documentUrl\` found new or changed
and that wait for an operator (policy \`review\`). Each names the \`tool\`, the operation's JSON
\`pointer\` and the \`digest\` of its pending version, which \`POST /openapi-sources/{id}/accept\` and
\`/reject\` take, with a \`diff\` from the tool agents are served (a new tool is all \`add\`s).`;

const ACCEPT_DESCRIPTION = `Accepts pending changes, each by its \`tool\` and the \`digest\` listed in
\`GET /openapi-sources/{id}/pending\`: agents are served those tools from this write on. All or none: a
change no longer pending, or pending at another digest now, is a 409 naming it, and nothing is
accepted. Audited under the operator, with the digests before and after.`;

const REJECT_DESCRIPTION = `Rejects pending changes, by \`tool\` and \`digest\` as for accepting them: agents keep
what they are served, and the same version read again stays out of the queue (a later, different
version is pending again). Rejected versions are listed with \`rejected=true\`, and can still be
accepted. Audited under the operator.`;

const openApiSourceRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);
  const maxBytes = config.openApiMaxDocumentBytes;
  // The document inside a JSON body: YAML's line feeds and quotes escaped, and the other fields.
  const bodyLimit = 2 * maxBytes + 64 * 1024;
  const live = (id: string) => {
    const record = app.store.openApiSource(id);
    if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no OpenAPI source "${id}"`);
    return record;
  };
  /** A source as reads show it: with its tools, and for a documentUrl source when it is read again and what waits for review. */
  const body = (record: OpenApiSourceRecord) => {
    const status = app.openApiSources.status(record.id);
    return {
      ...openApiSourceBody(record, app.store.openApiSourceTools(record.id)),
      ...(record.descriptor.documentUrl !== undefined && {
        refresh: {
          lastReadAt: status?.lastReadAt ?? null,
          lastError: status?.lastError ?? null,
          nextReadAt: status?.nextReadAt ?? null,
          pending: app.store.openApiPendingCount(record.id),
        },
      }),
    };
  };

  app.get(
    '/openapi-sources',
    {
      config: { admin: 'listing OpenAPI sources' },
      schema: {
        tags: ['openapi-sources'],
        operationId: 'listOpenApiSources',
        summary: 'List OpenAPI sources',
        description: 'Every OpenAPI source, sorted by id, with its tools. Needs the admin scope.',
        security,
        response: { 200: json(OpenApiSourceListSchema, 'The OpenAPI sources.'), ...adminReadProblems },
      },
    },
    async () => ({ openApiSources: app.store.openApiSources().map(body) }),
  );

  app.get(
    '/openapi-sources/:id',
    {
      config: { admin: 'reading an OpenAPI source' },
      schema: {
        tags: ['openapi-sources'],
        operationId: 'getOpenApiSource',
        summary: 'Read one OpenAPI source',
        description:
          'The stored source (its credential masked), the title and version of its document, its tools and the operations skipped.',
        security,
        params: OpenApiSourceIdParamsSchema,
        response: { 200: json(OpenApiSourceRecordSchema, 'The source.'), ...adminReadProblems, 404: problems.NotFound },
      },
    },
    async (request) => body(live(request.params.id)),
  );

  app.put(
    '/openapi-sources/:id',
    {
      bodyLimit,
      config: {
        admin: 'writing an OpenAPI source',
        audit: 'openapi-source.put',
        bodyLimit: { bytes: bodyLimit, setting: 'OPENAPI_MAX_DOCUMENT_BYTES' },
      },
      preValidation: pathKeyIntoBody('id'),
      schema: {
        tags: ['openapi-sources'],
        operationId: 'putOpenApiSource',
        summary: 'Register or replace an OpenAPI source',
        description: PUT_DESCRIPTION,
        security,
        params: OpenApiSourceIdParamsSchema,
        body: validatedBy(OpenApiSourcePutBodySchema, (data) => parseOpenApiSourceBody(data)),
        response: {
          200: json(OpenApiSourceRecordSchema, 'An existing source was replaced.', { headers: writeIndex }),
          201: json(OpenApiSourceRecordSchema, 'The source was registered.', { headers: writeIndex }),
          ...writeProblems,
        },
      },
    },
    async (request, reply) => {
      const { document: _document, credential: _credential, ...rest } = request.body;
      const source: OpenApiSource = { ...rest, id: request.params.id };
      const input = await app.openApiSources.prepare(source, request.body);
      const result = await app.registry.putOpenApiSource(input, actorOf(request));
      app.openApiSources.written(result.record);
      reply.header('x-registry-index', String(result.record.index));
      return reply.code(result.created ? 201 : 200).send({ ...body(result.record), written: result.written, deleted: result.deleted });
    },
  );

  app.post(
    '/openapi-sources/:id/refresh',
    {
      config: { admin: 'reading an OpenAPI source again', audit: 'openapi-source.refresh' },
      schema: {
        tags: ['openapi-sources'],
        operationId: 'refreshOpenApiSource',
        summary: "Read an OpenAPI source's documentUrl again now",
        description: REFRESH_DESCRIPTION,
        security,
        params: OpenApiSourceIdParamsSchema,
        body: z.strictObject({}).nullish().describe('None is needed (an empty JSON object is taken too).'),
        response: {
          // Only a read that changes tools agents see takes a registry index (then also in X-Registry-Index).
          200: json(OpenApiRefreshResultSchema, 'What the read changed.'),
          ...writeProblems,
          404: problems.NotFound,
        },
      },
    },
    async (request, reply) => {
      live(request.params.id);
      const result = await app.openApiSources.refresh(request.params.id, actorOf(request));
      if (result.index !== null) reply.header('x-registry-index', String(result.index));
      const { stale: _stale, ...shown } = result;
      return { id: request.params.id, ...shown };
    },
  );

  app.get(
    '/openapi-sources/:id/pending',
    {
      config: { admin: 'reading pending changes of an OpenAPI source' },
      schema: {
        tags: ['openapi-sources'],
        operationId: 'listOpenApiSourcePending',
        summary: "List an OpenAPI source's changes that wait for review",
        description: PENDING_DESCRIPTION,
        security,
        params: OpenApiSourceIdParamsSchema,
        querystring: PendingQuerySchema,
        response: {
          200: json(OpenApiPendingListSchema, 'A page of pending changes, by tool name.'),
          ...adminReadProblems,
          404: problems.NotFound,
        },
      },
    },
    async (request) => {
      const { id } = live(request.params.id);
      const { after, limit, rejected } = request.query;
      const rows = app.store.openApiPendingPage(id, after ?? '', limit + 1, rejected);
      const page = rows.slice(0, limit);
      const owner = openApiSourceOwner(id);
      const accepted = (name: string) => {
        const tool = app.catalog.getTool(name)?.record;
        return tool?.owner === owner ? (tool.descriptor as unknown as Record<string, unknown>) : undefined;
      };
      return {
        changes: page.map((row) => openApiPendingBody(row, accepted(row.name))),
        pending: app.store.openApiPendingCount(id),
        next: rows.length > limit ? (page.at(-1)?.name ?? null) : null,
      };
    },
  );

  for (const verb of ['accept', 'reject'] as const) {
    app.post(
      `/openapi-sources/:id/${verb}`,
      {
        config: { admin: `${verb === 'accept' ? 'accepting' : 'rejecting'} changes of an OpenAPI source`, audit: `openapi-source.${verb}` },
        schema: {
          tags: ['openapi-sources'],
          operationId: verb === 'accept' ? 'acceptOpenApiSourceChanges' : 'rejectOpenApiSourceChanges',
          summary: verb === 'accept' ? 'Accept pending changes of an OpenAPI source' : 'Reject pending changes of an OpenAPI source',
          description: verb === 'accept' ? ACCEPT_DESCRIPTION : REJECT_DESCRIPTION,
          security,
          params: OpenApiSourceIdParamsSchema,
          body: ReviewBodySchema,
          response: {
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
        const write = verb === 'accept' ? app.registry.acceptOpenApiChanges : app.registry.rejectOpenApiChanges;
        const result = await write.call(app.registry, request.params.id, request.body.changes, actorOf(request));
        if (result.index !== null) reply.header('x-registry-index', String(result.index));
        return { changes: result.changes };
      },
    );
  }

  app.delete(
    '/openapi-sources/:id',
    {
      config: { admin: 'deleting an OpenAPI source', audit: 'openapi-source.delete' },
      schema: {
        tags: ['openapi-sources'],
        operationId: 'deleteOpenApiSource',
        summary: 'Delete an OpenAPI source and its tools',
        description: 'Deletes the source, its stored credential and every tool of it, in one write.',
        security,
        params: OpenApiSourceIdParamsSchema,
        response: {
          200: json(OpenApiSourceRecordSchema, 'The source was deleted, with its tools.', { headers: writeIndex }),
          ...writeProblems,
          404: problems.NotFound,
        },
      },
    },
    async (request, reply) => {
      const { record, deleted } = await app.registry.deleteOpenApiSource(request.params.id, actorOf(request));
      app.openApiSources.deleted(record.id);
      reply.header('x-registry-index', String(record.index));
      return { ...openApiSourceBody(record, []), deleted };
    },
  );
};

export default openApiSourceRoutes;
