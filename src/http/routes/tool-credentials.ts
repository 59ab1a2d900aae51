/**
 * A single HTTP tool's own outbound credential (issue 30): `PUT`, `GET` and `DELETE
 * /tools/{name}/credential`, admin only. What the registry sends the tool's host instead of the
 * caller's token, for tools registered by hand (an OpenAPI source's tools carry the source's).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { ToolNameParamsSchema } from '../../model/api.js';
import { RegistryError } from '../../model/errors.js';
import { OutboundCredentialSchema } from '../../model/outbound-credential.js';
import type { ToolCredentialRecord } from '../../store/tool-credential-rows.js';
import { adminOnly, adminReadProblems, json, problems, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';

const ToolCredentialSchema = z
  .strictObject({
    tool: z.string(),
    credential: z.record(z.string(), z.unknown()).describe('The credential masked: its kind and the fields that are not secret.'),
    origin: z
      .string()
      .describe(
        'The scheme, host and port it is sent to: the tool’s target when it was set. A tool moved elsewhere sends it nowhere (its calls answer 502 until it is set again).',
      ),
    updatedAt: z.string(),
  })
  .meta({ id: 'ToolCredential', description: "An HTTP tool's own outbound credential, as reads show it: never its secret." });

const PUT_DESCRIPTION = `Sets the registry's own credential for calls to this HTTP tool's host, sent instead of the
caller's token (which the host never gets; \`forwardAuthorization\` no longer applies to the tool):
an API key in a header, query parameter or cookie (\`{"apiKey": "…", "in": "header", "name": "X-API-Key"}\`),
a bearer token, basic credentials, OAuth 2.0 client credentials (tokens cached until they expire),
or a token exchange (RFC 8693) of each caller's token for one meant for the host. Each secret may be
given as a file path instead (\`apiKeyFile\`, ...), read at every call. Sealed in the database
(CREDENTIALS_KEY_FILE), never shown, logged, audited, exported or put in the tool's descriptor;
bound to the origin the tool calls now. Deleting the tool deletes it. Not for tools of OpenAPI
sources (their source's credential applies: 409) nor tools of other kinds (409).`;

const toolCredentialRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);
  const shown = (record: ToolCredentialRecord) => ({
    tool: record.name,
    credential: record.shown,
    origin: record.origin,
    updatedAt: record.updatedAt,
  });

  app.put(
    '/tools/:name/credential',
    {
      config: { admin: "setting a tool's credential", audit: 'tool.credential.put' },
      schema: {
        tags: ['tools'],
        operationId: 'putToolCredential',
        summary: "Set an HTTP tool's own outbound credential",
        description: PUT_DESCRIPTION,
        security,
        params: ToolNameParamsSchema,
        body: OutboundCredentialSchema,
        response: { 200: json(ToolCredentialSchema, 'The credential as stored, masked.'), ...writeProblems, 404: problems.NotFound },
      },
    },
    async (request) => shown(await app.registry.setToolCredential(request.params.name, request.body, actorOf(request))),
  );

  app.get(
    '/tools/:name/credential',
    {
      config: { admin: "reading a tool's credential" },
      schema: {
        tags: ['tools'],
        operationId: 'getToolCredential',
        summary: "Read an HTTP tool's own outbound credential, masked",
        description: 'Its kind, the fields that are not secret, and the origin it is sent to. `404` when the tool has none.',
        security,
        params: ToolNameParamsSchema,
        response: { 200: json(ToolCredentialSchema, 'The credential, masked.'), ...adminReadProblems, 404: problems.NotFound },
      },
    },
    async (request) => {
      const record = app.store.toolCredential(request.params.name);
      if (!record || !app.catalog.getTool(request.params.name))
        throw new RegistryError('TR_ERR_NOT_FOUND', `tool "${request.params.name}" has no credential of its own`);
      return shown(record);
    },
  );

  app.delete(
    '/tools/:name/credential',
    {
      config: { admin: "removing a tool's credential", audit: 'tool.credential.delete' },
      schema: {
        tags: ['tools'],
        operationId: 'deleteToolCredential',
        summary: "Remove an HTTP tool's own outbound credential",
        description:
          "Its calls carry no credential of the registry's from now on (the caller's token only under `forwardAuthorization`). `404` when it has none.",
        security,
        params: ToolNameParamsSchema,
        response: {
          200: json(
            z.strictObject({ tool: z.string(), deleted: z.literal(true) }).meta({ id: 'ToolCredentialDeleted' }),
            'The credential was removed.',
          ),
          ...writeProblems,
          404: problems.NotFound,
        },
      },
    },
    async (request) => {
      await app.registry.removeToolCredential(request.params.name, actorOf(request));
      return { tool: request.params.name, deleted: true as const };
    },
  );
};

export default toolCredentialRoutes;
