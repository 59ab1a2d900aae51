/**
 * The descriptors on the wire: the write bodies, one zod schema each, which the routes validate
 * with (src/http/validation.ts) and every other front parses with (imports, announcements, the
 * replication topic), and the stored forms the answers show. `id`s name the document's
 * components and descriptions become its prose. Checks that need the catalogue (a message-bus
 * tool's service and its config params) are resolve.ts's.
 */
import { OpenApiSourcePutBodySchema, type OpenApiSourcePutBody } from './openapi-source.js';
import { z } from 'zod';
import { RegistryError } from './errors.js';
import { fieldErrorsFrom, resolveTool, validationError, type ParsedTool, type ServiceLookup } from './resolve.js';
import {
  ArgumentSchema,
  ConfigParamSchema,
  ConfigValueSchema,
  StoredHttpToolFieldsSchema,
  JsonTypeSchema,
  ObjectJsonSchema,
  ParameterSchema,
  PulsarQueueSchema,
  PulsarTopicSchema,
  ScopeEntrySchema,
  ScopeSchema,
  ScopesSchema,
  ServiceIdSchema,
  ToolNameSchema,
  ToolServiceSchema,
  TopicLocalNameSchema,
  busToolInput,
  httpToolInput,
  toolBoundsFirst,
  toolServiceInput,
} from './schemas.js';
import { McpServerInputSchema, McpToolSchema } from './mcp-schemas.js';

// ---------------------------------------------------------------------------------------------
// Names of the parts of descriptors (schemas.ts defines them)

function name<T extends z.ZodType>(schema: T, id: string, description?: string): T {
  z.globalRegistry.add(schema, description === undefined ? { id } : { id, description });
  return schema;
}

name(ToolNameSchema, 'ToolName', "Valid as a function name for every model vendor's function calling.");
name(ServiceIdSchema, 'ServiceId', '1 to 128 characters of letters, digits, `_`, `.` or `-`, not starting with `.` or `-`.');
name(ScopeSchema, 'Scope', 'An OAuth scope token (RFC 6749 section 3.3) of at most 200 characters.');
name(
  ScopeEntrySchema,
  'ScopeEntry',
  'One alternative of `scopes`: a scope token, or up to 16 tokens separated by single spaces (RFC 6749 section 3.3), ALL of which are needed; also accepted as an array of tokens. Stored with its tokens sorted and de-duplicated, joined by one space.',
);
name(
  ScopesSchema,
  'Scopes',
  'Scope entries, any ONE of which grants the tool; an empty list needs no scope. `["write:pets read:pets", "api_key"]` means (write:pets AND read:pets) OR api_key. Repeated entries are dropped, order kept.',
);
name(PulsarTopicSchema, 'PulsarTopic', 'A Pulsar topic name, e.g. `non-persistent://tg/request/joke`.');
name(TopicLocalNameSchema, 'TopicLocalName', 'A Pulsar local topic name (no `/`).');
name(JsonTypeSchema, 'JsonType', 'A JSON Schema type name.');
name(
  ConfigValueSchema,
  'ConfigValue',
  "A config value for one of the service's config params: any JSON value (a string of at most 8192 characters, or an object or list of at most 64 KiB of JSON), passed to the service as it is inside the request's `config` JSON text.",
);
name(
  PulsarQueueSchema,
  'PulsarQueue',
  'A Pulsar topic name (`non-persistent://tg/request/joke`) or a TrustGraph queue id (`request:tg:joke`, `class:topicspace:topic`), stored as the topic it names.',
);
name(ArgumentSchema, 'Argument', 'One argument of a message-bus tool, as the model sees it.');
name(ParameterSchema, 'HttpParameter', "One parameter of an HTTP tool, in the article's form.");
name(
  ObjectJsonSchema,
  'ObjectJsonSchema',
  'A JSON Schema whose top is `type: "object"`: draft 2020-12, or draft-07 when `$schema` says so. Checked when registered: it must be valid against its meta-schema, use only keywords and formats the registry knows, refer only to its own subschemas (`"$ref": "#/$defs/name"`, or in draft 2020-12 `"$ref": "#name"` to its own `"$anchor": "name"`; no `$id`, `$dynamicRef` or remote references), and be at most 64 KiB of JSON and 32 subschemas deep.',
);
name(
  ConfigParamSchema,
  'ConfigParam',
  'A config value that tools on the service supply. Its name becomes a top-level key of message-bus tool descriptors, so it may not be one of the tool fields.',
);

// ---------------------------------------------------------------------------------------------
// Write bodies

const HTTP_TOOL_DESCRIPTION =
  "The discovery article's tool form: the model's arguments are POSTed as JSON to `endpoint` on `host:port` (default `localhost:8002`); or, instead of those three, a full `target` (`baseUrl`, `method`, `path` template and where each argument goes), which agents then reach through the registry's invoke route. The caller's token reaches the tool only with `forwardAuthorization: true` (default `false`). A descriptor without `type: \"tool-service\"` is an HTTP tool; `type: \"http\"` may mark it and is dropped when stored. The arguments are described by the article's `parameters` or by a full JSON Schema `inputSchema` (not both; with `inputSchema`, discovery's `parameters` are made from its top-level `properties`); calls through the registry are checked against the input schema discovery serves.";
const BUS_TOOL_DESCRIPTION =
  'A tool whose calls the registry carries over its tool service\'s queues. Config values are extra top-level keys, one per config param of the service (e.g. `"collection": "customers"`): each extra key must be a config param of the service named in `service`, and the service\'s required config params must be present. Argument names must be unique.';

/** What a refusal of a tool body calls it: by its form, as the registry stores it. */
function toolWhat(input: unknown): string {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return 'tool';
  return 'type' in input && input.type === 'tool-service' ? 'message-bus tool' : 'HTTP tool';
}

/**
 * Either tool form, told apart by `type` (`tool-service`, or `http` or none), bounded before
 * any field is parsed (toolBoundsFirst).
 */
function toolBody<H extends z.core.$ZodTypeDiscriminable, B extends z.core.$ZodTypeDiscriminable>(http: H, bus: B, meta: z.GlobalMeta) {
  const forms = z.discriminatedUnion('type', [http, bus], {
    error: 'must be "tool-service" for a message-bus tool, or "http" or absent for an HTTP tool',
  });
  return z.preprocess(toolBoundsFirst, forms).meta(meta);
}

/** A message-bus tool as sent, and as stored (config values and all). */
const BusToolSchema = busToolInput(ToolNameSchema, { id: 'MessageBusTool', title: 'Message-bus tool', description: BUS_TOOL_DESCRIPTION });

/** `POST /tools/register` and each tool of `POST /import`: either form, named. */
export const ToolBodySchema = toolBody(
  httpToolInput(ToolNameSchema, {
    id: 'HttpToolDescriptor',
    description: `${HTTP_TOOL_DESCRIPTION} On \`PUT /tools/{name}\` the \`name\` may be omitted.`,
  }),
  BusToolSchema,
  {
    id: 'ToolDescriptor',
    description: 'Either tool form, as sent to `POST /tools/register` and `POST /import` (`PUT /tools/{name}` takes `ToolPutDescriptor`).',
  },
);
export type ToolBody = z.output<typeof ToolBodySchema>;

/** `PUT /tools/{name}`: either form, the `name` optional (the path gives it). */
export const ToolPutBodySchema = toolBody(
  httpToolInput(ToolNameSchema.optional(), {
    id: 'HttpToolPutDescriptor',
    title: 'HTTP tool',
    description: 'An HTTP tool as `PUT /tools/{name}` takes it: `HttpToolDescriptor` with the `name` optional (the path gives it).',
  }),
  busToolInput(ToolNameSchema.optional(), {
    id: 'MessageBusToolPutDescriptor',
    title: 'Message-bus tool',
    description: 'A message-bus tool as `PUT /tools/{name}` takes it: `MessageBusTool` with the `name` optional (the path gives it).',
  }),
  { id: 'ToolPutDescriptor', description: 'Either tool form, as sent to `PUT /tools/{name}`.' },
);
export type ToolPutBody = z.output<typeof ToolPutBodySchema>;

const SERVICE_DESCRIPTION =
  'A tool service as operators send it: the full queue form (`request-queue` and `response-queue`) or the short `topic` form (not both; `topic: T` expands to `non-persistent://tg/request/T` and `non-persistent://tg/response/T`), with config params as `{name, required}` objects or bare names (meaning not required), names unique. Stored in the full queue form (`ToolService`). On `PUT /tool-services/{id}` the `id` may be omitted.';

/** A tool service as imports and announcements hold it, with its id. */
export const ToolServiceBodySchema = toolServiceInput(ServiceIdSchema, { id: 'ToolServiceDescriptor', description: SERVICE_DESCRIPTION });

/** `PUT /tool-services/{id}`: the `id` optional (the path gives it). */
export const ToolServicePutBodySchema = toolServiceInput(ServiceIdSchema.optional(), {
  id: 'ToolServicePutDescriptor',
  description: 'A tool service as `PUT /tool-services/{id}` takes it: `ToolServiceDescriptor` with the `id` optional (the path gives it).',
});
export type ToolServicePutBody = z.output<typeof ToolServicePutBodySchema>;

/** `PUT /mcp-servers/{id}` (its only write): the `id` optional (the path gives it). */
export const McpServerPutBodySchema = McpServerInputSchema.partial({ id: true }).meta({
  id: 'McpServerDescriptor',
  description:
    'An upstream MCP server as operators send it: its Streamable HTTP `url`, and optionally a `credential` the registry sends as `Authorization: Bearer` to that URL only (`{"bearer": "..."}`; `{"set": true}`, as reads show it, keeps the stored one), a `prefix` for its tool names, `scopes` for all its tools and `toolScopes` per upstream tool name (an entry wins). On `PUT /mcp-servers/{id}` the `id` may be omitted.',
});
export type McpServerPutBody = z.output<typeof McpServerPutBodySchema>;

/**
 * Parses a body with its schema: a `TR_ERR_VALIDATION` naming `what` and every problem's path
 * under `prefix` (the route's refusal and an import item's are worded alike).
 */
function parseWith<S extends z.ZodType>(schema: S, what: string, input: unknown, prefix: readonly PropertyKey[]): z.output<S> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw validationError(what, [{ path: prefix.map(String).join('.'), message: 'must be a JSON object' }]);
  }
  const result = schema.safeParse(input);
  if (!result.success) throw validationError(what, fieldErrorsFrom(result.error, prefix));
  return result.data;
}

/** A tool body with its name (json-schema/tool-schemas.ts adds the check of the schemas it declares). */
export function parseToolInput(input: unknown, prefix: readonly PropertyKey[] = []): ToolBody {
  return parseWith(ToolBodySchema, toolWhat(input), input, prefix);
}

/** A tool body with its name, checked against the catalogue (without its schemas' check: parseCheckedTool). */
export function parseTool(input: unknown, lookupService: ServiceLookup, prefix: readonly PropertyKey[] = []): ParsedTool {
  return resolveTool(parseToolInput(input, prefix), lookupService, prefix);
}

/** A tool body as `PUT /tools/{name}` and the replication topic carry it, the name filled from the path. */
export function parseToolPutInput(input: unknown, pathName?: string): ToolPutBody {
  return parseWith(ToolPutBodySchema, toolWhat(input), withPathKey(input, 'name', pathName), []);
}

/** A tool service with its id (an import's, an announcement's). */
export function parseToolService(input: unknown, prefix: readonly PropertyKey[] = []): z.output<typeof ToolServiceBodySchema> {
  return parseWith(ToolServiceBodySchema, 'tool service', input, prefix);
}

/** A tool service as `PUT /tool-services/{id}` and the replication topic carry it. */
export function parseToolServicePut(input: unknown, pathId?: string): ToolServicePutBody {
  return parseWith(ToolServicePutBodySchema, 'tool service', withPathKey(input, 'id', pathId), []);
}

/** An MCP server as `PUT /mcp-servers/{id}` and the replication topic carry it, the id filled from the path. */
export function parseMcpServerBody(input: unknown, pathId?: string): McpServerPutBody {
  return parseWith(McpServerPutBodySchema, 'MCP server', withPathKey(input, 'id', pathId), []);
}

/**
 * Fills a PUT body's key from the URL path before the body is parsed, so that the stored form
 * is what the same body with the key would give, or refuses a body that names something else.
 */
export function withPathKey(input: unknown, key: 'name' | 'id', fromPath: string | undefined): unknown {
  if (fromPath === undefined || typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const given: unknown = Object.hasOwn(input, key) ? Reflect.get(input, key) : undefined;
  if (given === undefined) return { ...input, [key]: fromPath };
  // Anything but a string is left to the schema, which names what is wrong with it (String() of
  // `{"toString": []}` threw: a 500).
  if (typeof given === 'string' && given !== fromPath) throw differsFromPath(key, given, fromPath);
  return input;
}

function differsFromPath(key: string, given: string, fromPath: string): RegistryError {
  return new RegistryError('TR_ERR_VALIDATION', `the body's ${key} "${given}" differs from the URL's "${fromPath}"`, {
    fieldErrors: [{ path: key, message: `must equal "${fromPath}" from the URL` }],
  });
}

function hasKey<K extends string, T extends Partial<Record<K, string>>>(input: T, key: K): input is T & Record<K, string> {
  return input[key] !== undefined;
}

/**
 * A parsed PUT body with its key: the body's own, or the path's that withPathKey filled in.
 * The write side's check, for any caller that did not parse the body through withPathKey.
 */
export function named<K extends 'name' | 'id', T extends Partial<Record<K, string>>>(
  input: T,
  key: K,
  fromPath: string | undefined,
): T & Record<K, string> {
  if (!hasKey(input, key)) throw validationError('body', [{ path: key, message: 'is required (or given by the URL path)' }]);
  if (fromPath !== undefined && input[key] !== fromPath) throw differsFromPath(key, input[key], fromPath);
  return input;
}

// ---------------------------------------------------------------------------------------------
// Stored forms, as the answers show them

/** The stored HTTP tool: the form operators send without the optional `type` marker. */
const StoredHttpToolSchema = StoredHttpToolFieldsSchema.meta({
  id: 'HttpTool',
  title: 'HTTP tool',
  description: 'A stored HTTP tool descriptor, with every default filled in and no `type` marker.',
});

const McpToolDocSchema = McpToolSchema.meta({
  id: 'McpTool',
  title: 'MCP tool',
  description:
    "A tool of an upstream MCP server, written by the registry when it lists the server's tools (operators change it through the server, never through `/tools`): the prefixed `name`, the `upstreamName` calls use, and the upstream's `title`, `description`, `inputSchema` and `outputSchema` as given.",
});

export const StoredToolDescriptorSchema = z.union([StoredHttpToolSchema, BusToolSchema, McpToolDocSchema]).meta({
  id: 'StoredToolDescriptor',
  description: 'Any tool form, as stored: every default filled in, no `type` marker on HTTP tools.',
});
/**
 * A stored descriptor as the answers declare it. resolve.ts lets only config values of the
 * service's params through, each a ConfigValue, which the `BusTool` type does not say.
 */
export type StoredToolDescriptor = z.input<typeof StoredToolDescriptorSchema>;

name(ToolServiceSchema, 'ToolService', 'The stored, normalised tool service (always the full queue form).');

/** `PUT /openapi-sources/{id}` (issue 30), the id filled from the path. */
export function parseOpenApiSourceBody(input: unknown, pathId?: string): OpenApiSourcePutBody {
  return parseWith(OpenApiSourcePutBodySchema, 'OpenAPI source', withPathKey(input, 'id', pathId), []);
}
