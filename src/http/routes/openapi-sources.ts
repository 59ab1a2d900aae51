/**
 * OpenAPI sources (issue 30): `PUT /openapi-sources/{id}` takes an OpenAPI 3.0 or 3.1 document
 * (inline, or read from `documentUrl` through the outbound address policy), converts it in a
 * worker thread (src/sources/openapi/convert.ts), and writes the source and one HTTP tool per
 * kept operation in one write; `GET` reads sources back (credentials masked), `DELETE` removes a
 * source with its tools. Admin scope on every route: sources hold credentials and API topology.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { parseOpenApiSourceBody } from '../../model/descriptors.js';
import { RegistryError } from '../../model/errors.js';
import {
  OpenApiSourceIdParamsSchema,
  OpenApiSourceListSchema,
  OpenApiSourcePutBodySchema,
  OpenApiSourceRecordSchema,
  openApiSourceBody,
  openApiSourceOwner,
  type OpenApiSource,
  type OpenApiSourcePutBody,
} from '../../model/openapi-source.js';
import { maskCredential } from '../../model/outbound-credential.js';
import type { HttpTool } from '../../model/schemas.js';
import type { OpenApiSourceInput } from '../../registry/write-commands.js';
import { OpenApiConverter } from '../../sources/openapi/convert.js';
import { completeCredential } from '../../sources/openapi/credential.js';
import { adminOnly, adminReadProblems, headers, json, problems, writeProblems } from '../openapi/responses.js';
import { actorOf } from '../plugins/audit.js';
import { pathKeyIntoBody, validatedBy } from '../validation.js';

const writeIndex = { 'X-Registry-Index': headers['X-Registry-Index'] };

/** How long reading a documentUrl may take. */
const FETCH_TIMEOUT_MS = 30_000;
/** How long one conversion may run in its worker. */
const CONVERT_TIMEOUT_MS = 60_000;

const PUT_DESCRIPTION = `Registers an OpenAPI 3.0 or 3.1 document as tools, or replaces one. Give the document
inline as \`document\` (JSON or YAML text, or the JSON object), or \`documentUrl\`, which the registry
reads once now (through the outbound address policy, no redirects). Every operation that passes
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

const openApiSourceRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const security = adminOnly(config.adminScope);
  const converter = new OpenApiConverter({ timeoutMs: CONVERT_TIMEOUT_MS });
  const maxBytes = config.openApiMaxDocumentBytes;
  // The document inside a JSON body: YAML's line feeds and quotes escaped, and the other fields.
  const bodyLimit = 2 * maxBytes + 64 * 1024;
  app.addHook('onClose', async () => converter.close());
  const live = (id: string) => {
    const record = app.store.openApiSource(id);
    if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no OpenAPI source "${id}"`);
    return record;
  };

  /** The document text as given, or as read from its URL now. */
  const documentOf = async (body: OpenApiSourcePutBody): Promise<string> => {
    if (body.document === undefined) return readDocument(app.outbound.fetch, body.documentUrl as string, maxBytes);
    const text = typeof body.document === 'string' ? body.document : JSON.stringify(body.document);
    if (Buffer.byteLength(text) > maxBytes) {
      const message = `is larger than ${maxBytes} bytes (OPENAPI_MAX_DOCUMENT_BYTES)`;
      throw new RegistryError('TR_ERR_VALIDATION', `invalid OpenAPI source: document: ${message}`, {
        fieldErrors: [{ path: 'document', message }],
      });
    }
    return text;
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
    async () => ({ openApiSources: app.store.openApiSources().map((r) => openApiSourceBody(r, app.store.openApiSourceTools(r.id))) }),
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
    async (request) => openApiSourceBody(live(request.params.id), app.store.openApiSourceTools(request.params.id)),
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
      const body = request.body;
      const { document: _document, credential, ...rest } = body;
      const source: OpenApiSource = { ...rest, id: request.params.id };
      const text = await documentOf(body);
      const converted = await converter.convert({
        document: text,
        maxBytes,
        prefix: source.prefix,
        ...(source.baseUrl !== undefined && { baseUrl: source.baseUrl }),
        ...(source.documentUrl !== undefined && { relativeTo: source.documentUrl }),
        ...(source.filter !== undefined && { filter: source.filter }),
        ...(source.timeoutMs !== undefined && { timeoutMs: source.timeoutMs }),
        scopes: source.scopes,
        apiKeyFilled: fillsApiKey(credential, () => app.store.openApiSource(source.id)?.credential?.['kind']),
        ...(source.scopeMap !== undefined && { scopeMap: source.scopeMap }),
      });
      const owner = openApiSourceOwner(source.id);
      let sealed: OpenApiSourceInput['credential'] = null;
      if (credential !== undefined && credential !== null) {
        if ('set' in credential) sealed = 'keep';
        else {
          const full = completeCredential(credential, converted.securitySchemes);
          sealed = { sealed: app.store.credentials.seal(owner, full), shown: maskCredential(full) };
        }
      }
      const input: OpenApiSourceInput = {
        source,
        document: text,
        title: converted.title,
        version: converted.version,
        skipped: converted.skipped,
        credential: sealed,
        operations: converted.operations.map((op) => ({
          pointer: op.pointer,
          deprecated: op.deprecated,
          body: op.body as unknown as HttpTool,
        })),
      };
      const result = await app.registry.putOpenApiSource(input, actorOf(request));
      reply.header('x-registry-index', String(result.record.index));
      return reply.code(result.created ? 201 : 200).send({
        ...openApiSourceBody(result.record, app.store.openApiSourceTools(source.id)),
        written: result.written,
        deleted: result.deleted,
      });
    },
  );

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
      reply.header('x-registry-index', String(record.index));
      return { ...openApiSourceBody(record, []), deleted };
    },
  );
};

/** Whether the source's credential (or, for `{"set": true}`, the stored one) is an API key, which fills the document's apiKey parameters. */
function fillsApiKey(credential: OpenApiSourcePutBody['credential'], storedKind: () => unknown): boolean {
  if (credential === undefined || credential === null) return false;
  if ('set' in credential) return storedKind() === 'apiKey';
  return 'apiKey' in credential || 'apiKeyFile' in credential;
}

/** Reads a document from its URL through the outbound address policy: 200 only, no redirects, bounded. */
async function readDocument(fetch: (url: string, init: RequestInit) => Promise<Response>, url: string, maxBytes: number): Promise<string> {
  const refused = (message: string) =>
    new RegistryError('TR_ERR_VALIDATION', `invalid OpenAPI source: documentUrl: ${message}`, {
      fieldErrors: [{ path: 'documentUrl', message }],
    });
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json, application/yaml, text/yaml, */*;q=0.5' },
      redirect: 'manual',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    throw refused(`cannot be read (${code ?? (err as Error).message.slice(0, 200)})`);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw refused(`answered ${response.status}, not 200 with the document (redirects are not followed)`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw refused(`serves more than ${maxBytes} bytes (OPENAPI_MAX_DOCUMENT_BYTES)`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export default openApiSourceRoutes;
