/**
 * Exports (issue 12): a tool as the model vendors' and protocols' tool lists take it, so that
 * `GET /?format=` can be passed to an SDK as it comes. Pure shape conversions; the bytes of a
 * whole view are built once per view in src/catalog/exports.ts.
 */
import { z } from 'zod';
import { promptLine, typesOf, vendorSchema } from '../portable/vendor-schemas.js';
import { isObject as isSchema, resolveLocal } from './json-object.js';
import { mcpToolOf, type McpToolEntry } from './mcp-tool.js';
import type { Tool } from './normalise.js';

/** The formats of `GET /?format=`, in the order the documentation lists them. */
export const EXPORT_FORMATS = ['openai', 'openai-responses', 'openai-strict', 'anthropic', 'mcp', 'ag-ui', 'prompt'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const JsonSchemaValue = z.record(z.string(), z.unknown()).describe("A JSON Schema: the tool's `inputSchema`.");
const NameSchema = z.string().describe("The tool's name in the registry.");
const DescriptionSchema = z.string();

export const OpenAiChatToolSchema = z
  .strictObject({
    type: z.literal('function'),
    function: z.strictObject({
      name: NameSchema,
      description: DescriptionSchema,
      parameters: JsonSchemaValue,
      /** `openai-strict` only. */
      strict: z.literal(true).optional().describe('`openai-strict` only.'),
    }),
  })
  .meta({ id: 'OpenAiChatTool', description: 'A tool as OpenAI Chat Completions takes it (`tools` of `chat.completions.create`).' });
export type OpenAiChatTool = z.infer<typeof OpenAiChatToolSchema>;

export const OpenAiResponsesToolSchema = z
  .strictObject({
    type: z.literal('function'),
    name: NameSchema,
    description: DescriptionSchema,
    parameters: JsonSchemaValue,
    /** `false`: `true` would make the API check schemas many tools do not meet (use `openai-strict`). */
    strict: z.literal(false).describe('`false`: with `true` the API refuses schemas that do not meet strict mode (see `openai-strict`).'),
  })
  .meta({ id: 'OpenAiResponsesTool', description: 'A tool as the OpenAI Responses API takes it (`tools` of `responses.create`).' });
export type OpenAiResponsesTool = z.infer<typeof OpenAiResponsesToolSchema>;

export const SkippedToolSchema = z.strictObject({
  name: NameSchema,
  /** Why the tool's input schema is not one OpenAI's strict mode accepts. */
  reason: z
    .string()
    .describe("Why the tool's input schema is not one OpenAI's strict mode accepts (a JSON pointer into it, then the rule)."),
});
export type SkippedTool = z.infer<typeof SkippedToolSchema>;

export const OpenAiStrictExportSchema = z
  .strictObject({
    tools: z.array(OpenAiChatToolSchema).describe('The tools whose input schema meets strict mode, with `strict: true`.'),
    skipped: z.array(SkippedToolSchema).describe('The tools left out, in the order of the answer (name order, unless searched).'),
    nextCursor: z
      .string()
      .nullable()
      .optional()
      .describe('Pages only: the `cursor` for the next page, `null` on the last (also in the `Link` header).'),
  })
  .meta({ id: 'OpenAiStrictExport', description: '`GET /?format=openai-strict`.' });

export const AnthropicToolSchema = z
  .strictObject({
    name: NameSchema,
    description: DescriptionSchema,
    input_schema: z.looseObject({ type: z.literal('object') }).describe("A JSON Schema: the tool's `inputSchema`."),
  })
  .meta({ id: 'AnthropicTool', description: 'A tool as the Anthropic Messages API takes it (`tools` of `messages.create`).' });
export type AnthropicTool = z.infer<typeof AnthropicToolSchema>;

export const AgUiToolSchema = z
  .strictObject({ name: NameSchema, description: DescriptionSchema, parameters: JsonSchemaValue })
  .meta({ id: 'AgUiTool', description: "An AG-UI `Tool` (@ag-ui/core), as a run input's `tools` holds it." });
export type AgUiTool = z.infer<typeof AgUiToolSchema>;

export const McpExportSchema = z
  .strictObject({
    tools: z.array(
      z.strictObject({
        name: NameSchema,
        title: z.string().optional(),
        description: DescriptionSchema,
        inputSchema: JsonSchemaValue,
        outputSchema: JsonSchemaValue.optional(),
      }),
    ),
    nextCursor: z
      .string()
      .optional()
      .describe('Pages only, and not on the last: the `cursor` for the next page (also in the `Link` header).'),
  })
  .meta({ id: 'McpExport', description: 'The result of an MCP `tools/list` (`ListToolsResult`).' });

// OpenAI's and Anthropic's formats take the input schema as those vendors accept it (src/portable/vendor-schemas.ts).
export const openAiChatToolOf = (tool: Tool): OpenAiChatTool => ({
  type: 'function',
  function: { name: tool.name, description: tool.description, parameters: vendorSchema(tool.inputSchema, 'openai') },
});

export const openAiResponsesToolOf = (tool: Tool): OpenAiResponsesTool => ({
  type: 'function',
  name: tool.name,
  description: tool.description,
  parameters: vendorSchema(tool.inputSchema, 'openai'),
  strict: false,
});

export const anthropicToolOf = (tool: Tool): AnthropicTool => ({
  name: tool.name,
  description: tool.description,
  input_schema: vendorSchema(tool.inputSchema, 'anthropic') as AnthropicTool['input_schema'],
});

export const agUiToolOf = (tool: Tool): AgUiTool => ({ name: tool.name, description: tool.description, parameters: tool.inputSchema });

export const mcpExportOf = (tool: Tool): McpToolEntry => mcpToolOf(tool);

/** The article's prompt line: `- calculator(expression): Perform mathematical calculations`. */
export const promptLineOf = (tool: Tool): string => promptLine(tool.name, Object.keys(tool.parameters), tool.description);

export { promptText } from '../portable/vendor-schemas.js';

// ---------------------------------------------------------------------------------------------
// OpenAI strict mode (Structured Outputs, "Supported schemas" in OpenAI's guide).

/** Keywords strict mode accepts in any schema (plus the per-type ones below). */
const STRICT_ANY = new Set(['type', 'description', 'title', 'enum', 'const', 'anyOf', '$ref', '$defs', 'definitions']);
const STRICT_BY_TYPE: Record<string, ReadonlySet<string>> = {
  object: new Set(['properties', 'required', 'additionalProperties']),
  array: new Set(['items', 'minItems', 'maxItems']),
  string: new Set(['pattern', 'format']),
  number: new Set(['multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum']),
  integer: new Set(['multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum']),
};
const STRICT_STRING_FORMATS = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);
/** OpenAI's limits on a strict schema ("Objects have limitations on nesting depth and size"). */
const STRICT_MAX_DEPTH = 10;
const STRICT_MAX_PROPERTIES = 5000;
const STRICT_MAX_ENUM_VALUES = 1000;
/** Property names, definition names, enum values and const values, in characters, all told. */
const STRICT_MAX_STRING_CHARS = 120_000;
/** One enum of more than STRICT_LARGE_ENUM string values may have at most this many characters. */
const STRICT_LARGE_ENUM = 250;
const STRICT_MAX_LARGE_ENUM_CHARS = 15_000;

class NotStrict extends Error {}

type Schema = Record<string, unknown>;

/**
 * The same schema, also allowing `null`: how strict mode says a property may be left out. A
 * type list gains `"null"` where nothing else in the schema could refuse null (the keywords
 * strict mode allows besides `enum`, `const`, `anyOf` and `$ref` apply to one type each); a
 * bare `anyOf` gains a branch; anything else becomes `anyOf: [schema, {type: "null"}]`.
 */
function nullable(schema: Schema): Schema {
  const types = typesOf(schema);
  if (types.includes('null')) return schema;
  const alone = schema['const'] === undefined && schema['$ref'] === undefined;
  if (types.length > 0 && alone && schema['anyOf'] === undefined) {
    const widened: Schema = { ...schema, type: [...types, 'null'] };
    if (Array.isArray(schema['enum'])) widened['enum'] = [...(schema['enum'] as unknown[]), null];
    return widened;
  }
  if (types.length === 0 && alone && schema['enum'] === undefined && Array.isArray(schema['anyOf']))
    return { ...schema, anyOf: [...(schema['anyOf'] as unknown[]), { type: 'null' }] };
  return { anyOf: [schema, { type: 'null' }] };
}

interface StrictCounts {
  properties: number;
  enumValues: number;
  /** Characters of property names, definition names, enum values and const values. */
  chars: number;
}

/** Counts characters towards STRICT_MAX_STRING_CHARS. */
function countChars(counts: StrictCounts, values: readonly unknown[]): number {
  let chars = 0;
  for (const value of values) if (typeof value === 'string') chars += value.length;
  counts.chars += chars;
  if (counts.chars > STRICT_MAX_STRING_CHARS)
    throw new NotStrict(`more than ${STRICT_MAX_STRING_CHARS} characters of property names, definition names, enum and const values`);
  return chars;
}

/**
 * `underAnyOf`: inside an `anyOf` of the registered schema. The bridge drops a strict model's
 * nulls only where a failure fails the whole call (src/json-schema/strict-nulls.ts), never
 * inside an `anyOf`; so there an optional property cannot be made required and nullable, and
 * the tool is skipped instead.
 */
function strictSchema(schema: unknown, path: string, depth: number, counts: StrictCounts, root: Schema, underAnyOf = false): Schema {
  if (!isSchema(schema)) throw new NotStrict(`${path || '/'}: a boolean schema`);
  if (depth > STRICT_MAX_DEPTH) throw new NotStrict(`${path}: nested more than ${STRICT_MAX_DEPTH} levels`);
  const types = typesOf(schema);
  const allowed = (keyword: string) => STRICT_ANY.has(keyword) || types.some((t) => STRICT_BY_TYPE[t]?.has(keyword) === true);
  const out: Schema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    // Metadata only: dropping it changes nothing a model or a validator sees.
    if (keyword === '$schema' || keyword === '$comment') continue;
    if (!allowed(keyword)) throw new NotStrict(`${path || '/'}: keyword "${keyword}" is not supported in strict mode`);
    out[keyword] = value;
  }
  if (typeof schema['format'] === 'string' && !STRICT_STRING_FORMATS.has(schema['format'])) {
    throw new NotStrict(`${path || '/'}: format "${schema['format']}" is not supported in strict mode`);
  }
  if (Array.isArray(schema['enum'])) {
    const values = schema['enum'] as unknown[];
    counts.enumValues += values.length;
    if (counts.enumValues > STRICT_MAX_ENUM_VALUES) throw new NotStrict(`more than ${STRICT_MAX_ENUM_VALUES} enum values`);
    const chars = countChars(counts, values);
    if (values.filter((v) => typeof v === 'string').length > STRICT_LARGE_ENUM && chars > STRICT_MAX_LARGE_ENUM_CHARS) {
      throw new NotStrict(
        `${path || '/'}: an enum of more than ${STRICT_LARGE_ENUM} strings with more than ${STRICT_MAX_LARGE_ENUM_CHARS} characters`,
      );
    }
  }
  if (schema['const'] !== undefined) countChars(counts, [schema['const']]);
  if (typeof schema['$ref'] === 'string' && !schema['$ref'].startsWith('#')) throw new NotStrict(`${path}: a $ref to another document`);
  if (underAnyOf && typeof schema['$ref'] === 'string' && hasOptionalProperty(resolveLocal(schema['$ref'], root), root, new Set())) {
    throw new NotStrict(`${path}: a $ref inside anyOf to a schema with optional properties (a model's null for one would be refused)`);
  }
  if (Array.isArray(schema['anyOf']))
    out['anyOf'] = schema['anyOf'].map((s, i) => strictSchema(s, `${path}/anyOf/${i}`, depth + 1, counts, root, true));
  for (const defs of ['$defs', 'definitions'] as const) {
    if (!isSchema(schema[defs])) continue;
    countChars(counts, Object.keys(schema[defs]));
    out[defs] = mapValues(schema[defs], (s, name) => strictSchema(s, `${path}/${defs}/${name}`, depth + 1, counts, root, underAnyOf));
  }
  if (Array.isArray(schema['items'])) throw new NotStrict(`${path}/items: a tuple (an array of item schemas)`);
  if (schema['items'] !== undefined) out['items'] = strictSchema(schema['items'], `${path}/items`, depth + 1, counts, root, underAnyOf);
  else if (types.includes('array')) throw new NotStrict(`${path || '/'}: an array without "items"`);
  if (types.includes('object') || schema['properties'] !== undefined) {
    if (schema['additionalProperties'] !== false) throw new NotStrict(`${path || '/'}: an object without "additionalProperties": false`);
    const properties = isSchema(schema['properties']) ? schema['properties'] : {};
    const required = new Set(Array.isArray(schema['required']) ? schema['required'] : []);
    counts.properties += Object.keys(properties).length;
    if (counts.properties > STRICT_MAX_PROPERTIES) throw new NotStrict(`more than ${STRICT_MAX_PROPERTIES} properties`);
    countChars(counts, Object.keys(properties));
    out['properties'] = mapValues(properties, (s, name) => {
      const converted = strictSchema(s, `${path}/properties/${name}`, depth + 1, counts, root, underAnyOf);
      if (required.has(name)) return converted;
      if (underAnyOf)
        throw new NotStrict(`${path}/properties/${name}: an optional property inside anyOf (a model's null for it would be refused)`);
      return nullable(converted);
    });
    // Every property listed: an optional one is now required and may be null.
    out['required'] = Object.keys(properties);
  }
  return out;
}

/** Whether an object in the schema (through its properties, items, anyOf and local $refs) has a property it does not require. */
function hasOptionalProperty(schema: unknown, root: Schema, seen: Set<unknown>): boolean {
  if (!isSchema(schema) || seen.has(schema)) return false;
  seen.add(schema);
  const properties = isSchema(schema['properties']) ? schema['properties'] : {};
  const required = Array.isArray(schema['required']) ? schema['required'] : [];
  if (Object.keys(properties).some((name) => !required.includes(name))) return true;
  const below = [...Object.values(properties), schema['items'], ...(Array.isArray(schema['anyOf']) ? schema['anyOf'] : [])];
  if (typeof schema['$ref'] === 'string') below.push(resolveLocal(schema['$ref'], root));
  return below.some((s) => hasOptionalProperty(s, root, seen));
}

function mapValues(object: Schema, map: (value: unknown, key: string) => Schema): Schema {
  const out: Schema = Object.create(null) as Schema;
  for (const [key, value] of Object.entries(object)) out[key] = map(value, key);
  return out;
}

/**
 * The tool for OpenAI with `strict: true`, its input schema made to meet strict mode's rules:
 * an optional property becomes required with `null` allowed (a model then sends `null` for
 * "absent", and the bridge drops such nulls before checking the arguments: see
 * src/json-schema/strict-nulls.ts). Skipped, with the reason, when its schema uses what strict
 * mode does not support or has an object that is not closed: closing it, or dropping a
 * keyword that constrains values, would change what the tool accepts.
 */
export function openAiStrictToolOf(tool: Tool): { tool: OpenAiChatTool } | { skipped: SkippedTool } {
  try {
    if (tool.inputSchema['anyOf'] !== undefined) throw new NotStrict('/: the root is an anyOf');
    const parameters = strictSchema(tool.inputSchema, '', 1, { properties: 0, enumValues: 0, chars: 0 }, tool.inputSchema);
    return { tool: { type: 'function', function: { name: tool.name, description: tool.description, parameters, strict: true } } };
  } catch (error) {
    if (error instanceof NotStrict) return { skipped: { name: tool.name, reason: error.message } };
    throw error;
  }
}
