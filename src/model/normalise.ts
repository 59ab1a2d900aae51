/**
 * Every tool, whichever its kind, becomes one `Tool` value: what a model needs to call it
 * (description, parameters, a JSON Schema `inputSchema`) and where the call goes.
 */
import type { McpTool } from './mcp-schemas.js';
import { JsonTypeSchema, type BusTool, type HttpTool, type JsonType, type ToolDescriptor, type ToolKind } from './schemas.js';
import { isObject, resolveLocal } from './json-object.js';
import type { HttpTarget } from './http-target.js';

/** A JSON Schema whose top is an object: a tool's arguments, or its structured answer. */
export interface JsonSchemaObject {
  type: 'object';
  [keyword: string]: unknown;
}

/** The closed input schema made from the article's `parameters` (or a bus tool's `arguments`). */
interface DerivedInputSchema extends JsonSchemaObject {
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: false;
}

export interface ToolParameter {
  type: JsonType;
  description?: string;
  [keyword: string]: unknown;
}

/**
 * An HTTP tool's target: the article's `host`, `port` and `endpoint` (a POST of the arguments
 * as JSON, and what discovery shows as the tool's location), or a full `target` (issue 30),
 * which agents reach through the registry's invoke route.
 */
export type HttpLocation =
  | { endpoint: string; host: string; port: number; forwardAuthorization: boolean; target?: undefined }
  | { target: HttpTarget; forwardAuthorization: boolean; endpoint?: undefined; host?: undefined; port?: undefined };

export interface Tool {
  name: string;
  kind: ToolKind;
  /** A human title, where the tool has one (tools of upstream MCP servers may). */
  title?: string | undefined;
  description: string;
  scopes: string[];
  /** The article's `parameters` map, also derived for message-bus tools from `arguments`. */
  parameters: Record<string, ToolParameter>;
  returns: string;
  /**
   * What calls are checked against (src/json-schema/arguments.ts): the schema the tool declares
   * (an HTTP tool's `inputSchema`, an mcp tool's upstream schema), as given, else the closed
   * schema made from `parameters` or `arguments`.
   */
  inputSchema: JsonSchemaObject;
  /** A JSON Schema of the tool's structured answer, where the tool declares one. */
  outputSchema?: JsonSchemaObject | undefined;
  /** Where an HTTP tool is reached; message-bus tools are reached through the registry. */
  http: HttpLocation | null;
  /** The service a message-bus tool's calls go to; for an mcp tool, its MCP server's id. */
  serviceId: string | null;
  timeoutMs: number | undefined;
  /** Agent hints kept as given (`group`, `state`, `applicable-states`). */
  hints: Record<string, unknown>;
}

/** What a message-bus tool's observation is, for the article's `returns` field. */
const BUS_TOOL_RETURNS = "The tool service's observation, as text";
/** The same for mcp tools (src/bridge/mcp-transport.ts says how an answer becomes text). */
const MCP_STRUCTURED_RETURNS = "The tool's structured answer as JSON text, which its outputSchema describes";
const MCP_TEXT_RETURNS = "The tool's text content, its parts joined by line feeds";

function inputSchemaOf(parameters: Record<string, ToolParameter & { required?: boolean }>): DerivedInputSchema {
  const properties = dictionary<Record<string, unknown>>();
  const required: string[] = [];
  for (const name of Object.keys(parameters)) {
    const parameter = parameters[name] as ToolParameter & { required?: boolean };
    const schema: Record<string, unknown> = {};
    for (const keyword of Object.keys(parameter)) if (keyword !== 'required') setOwn(schema, keyword, parameter[keyword]);
    properties[name] = schema;
    if (parameter.required !== false) required.push(name);
  }
  // Closed, as models do best with, and enforced as served: a call with a key the tool does not
  // list is refused (400) before it reaches the tool, like any other argument that does not fit.
  return { type: 'object', properties, required, additionalProperties: false };
}

function normaliseHttpTool(tool: HttpTool): Tool {
  let parameters: Record<string, ToolParameter>;
  let inputSchema: JsonSchemaObject;
  if (tool.inputSchema !== undefined) {
    inputSchema = tool.inputSchema;
    parameters = parametersOf(inputSchema);
  } else {
    parameters = dictionary<ToolParameter>();
    for (const [name, param] of Object.entries(tool.parameters ?? {})) parameters[name] = stripUndefined(param);
    inputSchema = inputSchemaOf(parameters);
  }
  return {
    name: tool.name,
    kind: 'http',
    description: tool.description,
    scopes: [...tool.scopes],
    parameters,
    returns: tool.returns,
    inputSchema,
    outputSchema: tool.outputSchema,
    http: httpLocationOf(tool),
    serviceId: null,
    timeoutMs: tool.timeoutMs,
    hints: {},
  };
}

function httpLocationOf(tool: HttpTool): HttpLocation {
  // Only an explicit `true` forwards: a stored descriptor without the field (none is written
  // so; every write path stores the parsed form, the field included) forwards nothing.
  const forwardAuthorization = tool.forwardAuthorization === true;
  if (tool.target !== undefined) return { target: tool.target, forwardAuthorization };
  // The article's form: stored with its defaults written out.
  return { endpoint: tool.endpoint ?? '/', host: tool.host ?? 'localhost', port: tool.port ?? 8002, forwardAuthorization };
}

function normaliseBusTool(tool: BusTool): Tool {
  const withRequired = dictionary<ToolParameter & { required?: boolean }>();
  for (const arg of tool.arguments) {
    withRequired[arg.name] = stripUndefined({ type: arg.type, description: arg.description, required: arg.required });
  }
  const hints: Record<string, unknown> = {};
  for (const key of ['group', 'state', 'applicable-states'] as const) {
    if (tool[key] !== undefined) hints[key] = tool[key];
  }
  return {
    name: tool.name,
    kind: 'tool-service',
    description: tool.description,
    scopes: [...tool.scopes],
    parameters: withRequired,
    returns: BUS_TOOL_RETURNS,
    inputSchema: inputSchemaOf(withRequired),
    // Only an object: a stored tool whose service had a config param of this name keeps it as a value.
    outputSchema: isObject(tool.outputSchema) ? tool.outputSchema : undefined,
    http: null,
    serviceId: tool.service,
    timeoutMs: tool.timeoutMs,
    hints,
  };
}

const JSON_TYPES: ReadonlySet<string> = new Set(JsonTypeSchema.options);

/**
 * The article's type of one property of a declared schema. Where the schema names none (`anyOf`,
 * a local `$ref`) one is inferred from its keywords; `inputSchema` stays the exact contract.
 */
function jsonTypeOf(schema: Record<string, unknown>, root: JsonSchemaObject): JsonType {
  // Local references and first branches, a few steps deep (a reference may loop).
  let node = schema;
  for (let step = 0; step < 8; step++) {
    const ref = node['$ref'];
    const branches = node['anyOf'] ?? node['oneOf'] ?? node['allOf'];
    const next =
      typeof ref === 'string'
        ? resolveLocal(ref, root)
        : Array.isArray(branches)
          ? branches.find((b) => isObject(b) && b['type'] !== 'null')
          : undefined;
    if (node['type'] !== undefined || !isObject(next)) break;
    node = next;
  }
  const types = (Array.isArray(node['type']) ? node['type'] : [node['type']]).filter(
    (t): t is JsonType => typeof t === 'string' && JSON_TYPES.has(t),
  );
  const type = types.find((t) => t !== 'null') ?? types[0];
  if (type !== undefined) return type;
  if (isObject(node['properties'])) return 'object';
  if (node['items'] !== undefined) return 'array';
  return 'string';
}

/** The article's `parameters` map of a declared input schema, from its top-level `properties`. */
function parametersOf(inputSchema: JsonSchemaObject): Record<string, ToolParameter> {
  const properties = isObject(inputSchema['properties']) ? inputSchema['properties'] : {};
  const requiredNames = inputSchema['required'];
  const required = new Set(Array.isArray(requiredNames) ? requiredNames.filter((n) => typeof n === 'string') : []);
  const parameters = dictionary<ToolParameter>();
  for (const [name, raw] of Object.entries(properties)) {
    const schema = isObject(raw) ? raw : {};
    const description = typeof schema['description'] === 'string' ? schema['description'] : undefined;
    // `enum` and `items` say what values fit, which a model reading the article's form needs too.
    const enumValues = Array.isArray(schema['enum']) ? schema['enum'] : undefined;
    const items = isObject(schema['items']) || typeof schema['items'] === 'boolean' ? schema['items'] : undefined;
    parameters[name] = stripUndefined({
      type: jsonTypeOf(schema, inputSchema),
      description,
      enum: enumValues,
      items,
      required: required.has(name) ? undefined : false,
    });
  }
  return parameters;
}

function normaliseMcpTool(tool: McpTool): Tool {
  const parameters = parametersOf(tool.inputSchema);
  return {
    name: tool.name,
    kind: 'mcp',
    title: tool.title,
    description: tool.description,
    scopes: [...tool.scopes],
    parameters,
    returns: tool.outputSchema ? MCP_STRUCTURED_RETURNS : MCP_TEXT_RETURNS,
    inputSchema: tool.inputSchema,
    outputSchema: tool.outputSchema,
    http: null,
    serviceId: tool.server,
    timeoutMs: tool.timeoutMs,
    hints: {},
  };
}

export function normaliseTool(kind: ToolKind, descriptor: ToolDescriptor): Tool {
  if (kind === 'mcp') return normaliseMcpTool(descriptor as McpTool);
  return kind === 'http' ? normaliseHttpTool(descriptor as HttpTool) : normaliseBusTool(descriptor as BusTool);
}

/**
 * An object keyed by user-given names (parameter and argument names), without a prototype, so
 * that no name, even one stored before `__proto__` was refused, reaches Object.prototype.
 */
function dictionary<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}

/** A copy without the keys whose value is undefined (a loop: a load runs it for every parameter). */
function stripUndefined<T extends object>(value: T): T {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) setOwn(copy, key, v);
  }
  return copy as T;
}

/** object[key] = value, as an own property even for `__proto__` (what a spread or Object.fromEntries does). */
function setOwn(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}
