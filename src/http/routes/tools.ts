import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { explainAccess } from '../../model/access.js';
import { AccessExplanationSchema, PublicToolSchema, ToolNameParamsSchema } from '../../model/api.js';
import { ToolRecordSchema } from '../../model/admin-api.js';
import { ToolBodySchema, ToolPutBodySchema, type StoredToolDescriptor } from '../../model/descriptors.js';
import { parseToolBody, parseToolPutBody } from '../../json-schema/tool-schemas.js';
import { RegistryError } from '../../model/errors.js';
import { toolRecordRepresentation } from '../../catalog/record-etag.js';
import { toolRecordBody as storedRecordBody } from '../../model/record-bodies.js';
import type { ToolRecord } from '../../model/records.js';
import type { CatalogTool } from '../../catalog/catalog.js';
import { DeprecationSchema, deprecationHeaders } from '../../model/deprecation.js';
import { isAdmin, mayKnowOf, viewKeyFor, visibleScopes } from '../../model/visibility.js';
import { actorOf } from '../plugins/audit.js';
import { ANYONE, adminOnly, empty, headers, json, problems, writeProblems } from '../openapi/responses.js';
import {
  checkConditionFirst,
  readConditionHeaders,
  ifNoneMatch,
  sendTagged,
  viewCachePolicy,
  writeConditionHeaders,
  writeConditionOf,
  answerBlocks,
  CallerKindBlocks,
  type AnswerBlocks,
} from '../conditional.js';
import { pathKeyIntoBody, validatedBy } from '../validation.js';

/**
 * Either tool form, and its declared JSON Schemas, validated here; the registry service checks
 * what needs the catalogue (a message-bus tool's service and config params, src/model/resolve.ts).
 */
const DescriptorBody = validatedBy(ToolBodySchema, (data) => parseToolBody(data));
/** The same for `PUT /tools/{name}`, whose path gives the name (filled in before, by preValidation). */
const PutDescriptorBody = validatedBy(ToolPutBodySchema, (data) => parseToolPutBody(data));

/** The record as the answers declare it (see StoredToolDescriptor). */
function toolRecordBody(record: ToolRecord) {
  const body = storedRecordBody(record);
  return { ...body, descriptor: body.descriptor as StoredToolDescriptor };
}

const written = (description: string, location: boolean, etag = false) =>
  json(ToolRecordSchema, description, {
    headers: {
      'X-Registry-Index': headers['X-Registry-Index'],
      ...(location && { Location: headers.ToolLocation }),
      ...(etag && { ETag: headers.RecordETag }),
    },
  });

/** Preconditions of a tool's writes, checked by the registry in the write's batch. */
const WriteConditionHeaders = writeConditionHeaders('tool', '`GET /tools/{name}` as an admin reads it');

const toolRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const admin = adminOnly(config.adminScope);
  const base = config.publicUrl.href.replace(/\/+$/, '');
  /** Where a tool's record is read: the `Link` of a deprecation's replacement. */
  const toolUrl = (name: string) => `${base}/tools/${encodeURIComponent(name)}`;
  const cachePolicy = viewCachePolicy(config.anonymousMaxAgeS);
  /**
   * A discovery entry's headers, built on its first answer to each kind of caller and kept as
   * long as the entry (a write of the tool makes a new one): the lookup and its 304 write one
   * block, with no strings built per request (issue 33).
   */
  const entryHeaders = new CallerKindBlocks<CatalogTool>();
  const entryBlocks = (entry: CatalogTool, tokenView: boolean): AnswerBlocks =>
    entryHeaders.get(entry, tokenView) ??
    entryHeaders.keep(
      entry,
      tokenView,
      answerBlocks(
        {
          ...(tokenView ? cachePolicy.token : cachePolicy.anonymous),
          'x-registry-index': String(entry.record.index),
          ...(entry.record.deprecation !== undefined && deprecationHeaders(entry.record.deprecation, toolUrl)),
          etag: entry.etag,
        },
        'application/json; charset=utf-8',
      ),
    );

  /** The article's runtime registration; either tool form. 201 when new, 200 when replaced. */
  app.post(
    '/tools/register',
    {
      config: { admin: 'registering a tool', audit: 'tool.put' },
      schema: {
        tags: ['tools'],
        operationId: 'registerTool',
        summary: 'Register or replace a tool (either form)',
        description:
          'The article\'s runtime registration. The body is an HTTP tool or a message-bus tool (`type: "tool-service"`); a message-bus tool is checked against its tool service (the service must exist, its required config values must be given, and every top-level key that is not a tool field must be one of its config params). Every JSON Schema the tool carries (`inputSchema`, `outputSchema`, or the input schema its `parameters` make, `items` included) is checked too: valid against its meta-schema, keywords and formats the registry knows, local `$ref`s only, at most 64 KiB and 32 subschemas deep; a problem is a `400` whose `errors` name its path (`inputSchema.properties.x.items.type`). Answers `201` when the name is new (or was deleted) and `200` when an existing tool was replaced.',
        security: admin,
        body: DescriptorBody,
        response: {
          200: written('An existing tool was replaced.', true),
          201: written('The tool was created.', true),
          ...writeProblems,
        },
      },
    },
    async (request, reply) => {
      const { record, created } = await app.registry.putTool(request.body, { actor: actorOf(request) });
      reply.header('x-registry-index', String(record.index)).header('location', `/tools/${encodeURIComponent(record.name)}`);
      return reply.code(created ? 201 : 200).send(toolRecordBody(record));
    },
  );

  /**
   * Admins get the stored descriptor (with config values); everyone else gets the discovery
   * entry, if the tool is in their view.
   */
  app.get(
    '/tools/:name',
    {
      schema: {
        tags: ['tools', 'discovery'],
        operationId: 'getTool',
        summary: 'Read one tool',
        description:
          "Callers holding the admin scope get the stored record (`ToolRecord`, with the descriptor as stored, config values included). Everyone else gets the tool's discovery entry (`PublicTool`) if the tool is in their view, and `404` otherwise. The answer carries a strong `ETag`; send it back in `If-None-Match` to get `304 Not Modified` while the tool is unchanged.",
        security: ANYONE,
        params: ToolNameParamsSchema,
        headers: readConditionHeaders(),
        response: {
          200: json(z.union([ToolRecordSchema, PublicToolSchema]), 'The stored record (admin) or the discovery entry (everyone else).', {
            headers: {
              ETag: headers.ETag,
              'X-Registry-Index': headers['X-Registry-Index'],
              'Cache-Control': headers.DiscoveryCacheControl,
              Vary: headers.VaryAuthorization,
              Deprecation: headers.Deprecation,
              Sunset: headers.Sunset,
              Link: headers.DeprecationLink,
            },
          }),
          304: empty('The tool still matches an entity tag given in `If-None-Match`; no body.', {
            ETag: headers.ETag,
            'X-Registry-Index': headers['X-Registry-Index'],
          }),
          400: problems.BadRequest,
          401: problems.ViewUnauthorized,
          404: problems.NotFound,
          429: problems.TooManyRequests,
        },
      },
    },
    // Not async, as `GET /` (src/http/routes/discovery.ts): answered before the handler returns,
    // with no promise for Fastify to wait on.
    (request, reply) => {
      const admin = isAdmin(request.caller, config);
      // The view policy first, so that under ANONYMOUS_DISCOVERY=none names cannot be probed.
      const viewKey = admin ? null : viewKeyFor(request.caller, config.visibility, app.catalog.knownScopeNames);
      const entry = app.catalog.getTool(request.params.name);
      if (!entry || (viewKey && !visibleScopes(entry.tool.scopes, viewKey))) {
        throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${request.params.name}"`);
      }
      const tokenView = request.caller.kind === 'token';
      if (admin) {
        reply.headers(tokenView ? cachePolicy.token : cachePolicy.anonymous);
        reply.header('x-registry-index', String(entry.record.index));
        const { deprecation } = entry.record;
        if (deprecation !== undefined) reply.headers(deprecationHeaders(deprecation, toolUrl));
        // The stored record (config values included): rarer, serialised per request.
        sendTagged(reply, request.headers['if-none-match'], toolRecordRepresentation(entry.record));
        return;
      }
      // The discovery entry, as bytes serialised once per write of the tool, with its headers.
      const blocks = entryBlocks(entry, tokenView);
      if (ifNoneMatch(request.headers['if-none-match'], entry.etag)) reply.code(304).headers(blocks.notModified).send();
      else reply.headers(blocks.ok).send(entry.bytes);
    },
  );

  /**
   * The access explainer: which scopes the tool needs, which the caller has, which are
   * missing, and whether a call would be allowed. Tools the caller could not discover even
   * anonymously stay hidden (404); under ANONYMOUS_DISCOVERY=none anonymous callers get 401.
   */
  app.get(
    '/tools/:name/access',
    {
      schema: {
        tags: ['tools', 'discovery'],
        operationId: 'explainToolAccess',
        summary: 'Explain whether the caller may call a tool',
        description:
          "Which scopes the tool needs, which the caller holds, which are missing, whether the tool is in the caller's discovery view, and whether a call would be allowed. Tools the caller could discover neither with its token nor anonymously stay hidden (`404`), unless the caller holds the admin scope. Anonymous callers always get `decision: deny` (calling a tool needs a token).",
        security: ANYONE,
        params: ToolNameParamsSchema,
        response: {
          200: json(AccessExplanationSchema, 'The explanation.'),
          400: problems.BadRequest,
          401: problems.InvalidToken,
          404: problems.NotFound,
          429: problems.TooManyRequests,
        },
      },
    },
    async (request) => {
      const entry = app.catalog.getTool(request.params.name);
      const policy = config.visibility;
      const seen = mayKnowOf(entry?.tool.scopes ?? [], request.caller, policy, app.catalog.knownScopeNames);
      if (!entry || !seen.known) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${request.params.name}"`);
      return explainAccess(entry.tool, request.caller, seen.inOwnView);
    },
  );

  app.put(
    '/tools/:name',
    {
      config: { admin: 'replacing a tool', audit: 'tool.put' },
      // The precondition before the body is looked at (RFC 9110 section 13.2.2), against the tool
      // as committed (the write's batch checks it again); then the path's name into the body.
      preValidation: [
        async (request) => {
          const { name } = request.params;
          checkConditionFirst(request.headers, `tool "${name}"`, () => {
            const current = app.catalog.getTool(name)?.record;
            return current && toolRecordRepresentation(current).etag;
          });
        },
        pathKeyIntoBody('name'),
      ],
      schema: {
        tags: ['tools'],
        operationId: 'putTool',
        summary: 'Create or replace a tool by name',
        description:
          "Same bodies as `POST /tools/register`. The body's `name` may be left out (it is taken from the path); if given it must equal the path's name, or the answer is `400`. `201` when created, `200` when replaced. A replacement may change the tool's kind.",
        security: admin,
        params: ToolNameParamsSchema,
        headers: WriteConditionHeaders,
        body: PutDescriptorBody,
        response: {
          200: written('An existing tool was replaced.', false, true),
          201: written('The tool was created.', false, true),
          ...writeProblems,
          412: problems.PreconditionFailed,
        },
      },
    },
    async (request, reply) => {
      const { record, created } = await app.registry.putTool(request.body, {
        pathName: request.params.name,
        actor: actorOf(request),
        condition: writeConditionOf(request.headers),
      });
      reply.header('x-registry-index', String(record.index));
      reply.header('etag', toolRecordRepresentation(record).etag);
      return reply.code(created ? 201 : 200).send(toolRecordBody(record));
    },
  );

  const deprecated = (description: string) =>
    json(ToolRecordSchema, description, {
      headers: {
        'X-Registry-Index': headers['X-Registry-Index'],
        ETag: headers.RecordETag,
        Deprecation: headers.Deprecation,
        Sunset: headers.Sunset,
        Link: headers.DeprecationLink,
      },
    });
  const deprecationProblems = {
    400: problems.BadRequest,
    401: problems.Unauthorized,
    403: problems.Forbidden,
    404: problems.NotFound,
    409: problems.WriteConflict,
    412: problems.PreconditionFailed,
    429: problems.TooManyRequests,
    503: problems.Unavailable,
  };
  /** The record's answer after a deprecation's write: its new ETag, and the headers its reads carry. */
  const sendDeprecated = (reply: FastifyReply, record: ToolRecord) => {
    reply.header('x-registry-index', String(record.index));
    reply.header('etag', toolRecordRepresentation(record).etag);
    if (record.deprecation !== undefined) reply.headers(deprecationHeaders(record.deprecation, toolUrl));
    return reply.send(toolRecordBody(record));
  };

  /** Issue 34: operators script against these names and fields. */
  app.put(
    '/tools/:name/deprecation',
    {
      config: { admin: 'deprecating a tool', audit: 'tool.deprecate' },
      schema: {
        tags: ['tools'],
        operationId: 'deprecateTool',
        summary: 'Deprecate a tool',
        description:
          "Sets (or replaces) the tool's deprecation: its `status` becomes `deprecated`, every record of it (discovery, lookups, pages, search, exports, `/mcp`) carries `deprecation`, and its own routes answer with the `Deprecation` (RFC 9745), `Sunset` (RFC 8594) and `Link` (`successor-version`) headers. Calls keep working until the sunset and count in `/stats` as `deprecated_tool_calls`; from the sunset on the tool leaves every view and calls get `410`. Every field is optional; `replacement` must be another registered tool (`400` naming it otherwise). Re-registering the tool (`PUT /tools/{name}`) keeps the deprecation; `DELETE` lifts it. `404` for a tool that does not exist.",
        security: admin,
        params: ToolNameParamsSchema,
        headers: WriteConditionHeaders,
        body: DeprecationSchema,
        response: { 200: deprecated('The deprecated tool.'), ...deprecationProblems },
      },
    },
    async (request, reply) => {
      const record = await app.registry.deprecateTool(request.params.name, request.body, {
        actor: actorOf(request),
        condition: writeConditionOf(request.headers),
      });
      return sendDeprecated(reply, record);
    },
  );

  app.delete(
    '/tools/:name/deprecation',
    {
      config: { admin: 'lifting a deprecation', audit: 'tool.undeprecate' },
      schema: {
        tags: ['tools'],
        operationId: 'undeprecateTool',
        summary: "Lift a tool's deprecation",
        description:
          "Lifts the tool's deprecation: its `status` is `active` again. Lifting none is not an error. `404` for a tool that does not exist (or is past its sunset).",
        security: admin,
        params: ToolNameParamsSchema,
        headers: WriteConditionHeaders,
        response: { 200: deprecated('The tool, no longer deprecated.'), ...deprecationProblems },
      },
    },
    async (request, reply) => {
      const record = await app.registry.deprecateTool(request.params.name, null, {
        actor: actorOf(request),
        condition: writeConditionOf(request.headers),
      });
      return sendDeprecated(reply, record);
    },
  );

  /** Leaves a tombstone (status `deleted`) so change feeds can tell mirrors. */
  app.delete(
    '/tools/:name',
    {
      config: { admin: 'deleting a tool', audit: 'tool.delete' },
      schema: {
        tags: ['tools'],
        operationId: 'deleteTool',
        summary: 'Delete a tool',
        description:
          'Leaves a tombstone (status `deleted`) so change feeds can tell mirrors; the tool leaves every view at once. Returns the tombstone record.',
        security: admin,
        params: ToolNameParamsSchema,
        headers: WriteConditionHeaders,
        response: {
          200: json(ToolRecordSchema, "The tool's tombstone.", { headers: { 'X-Registry-Index': headers['X-Registry-Index'] } }),
          400: problems.BadRequest,
          401: problems.Unauthorized,
          403: problems.Forbidden,
          404: problems.NotFound,
          409: problems.WriteConflict,
          412: problems.PreconditionFailed,
          429: problems.TooManyRequests,
          503: problems.Unavailable,
        },
      },
    },
    async (request, reply) => {
      const record = await app.registry.deleteTool(request.params.name, {
        actor: actorOf(request),
        condition: writeConditionOf(request.headers),
      });
      reply.header('x-registry-index', String(record.index));
      return toolRecordBody(record);
    },
  );
};

export default toolRoutes;
