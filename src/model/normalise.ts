/**
 * Every tool, whichever its kind, becomes one `Tool` value: what a model needs to call it
 * (description, parameters, a JSON Schema `inputSchema`) and where the call goes.
 */
import type { McpTool } from './mcp-schemas.js';
import { JsonTypeSchema, type BusTool, type HttpTool, type JsonType, type ToolDescriptor, type ToolKind } from './schemas.js';

export interface JsonSchemaObject {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: boolean;
}

/** An upstream MCP server's JSON Schema of a tool's arguments, kept as given. */
export interface UpstreamInputSchema {
  type: 'object';
  [keyword: string]: unknown;
}

export interface ToolParameter {
  type: JsonType;
  description?: string;
  [keyword: string]: unknown;
}

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
  /** Closed and derived from `parameters`, except for mcp tools: the upstream's own, as given. */
  inputSchema: JsonSchemaObject | UpstreamInputSchema;
  /** A JSON Schema of the tool's structured answer, where the tool declares one. */
  outputSchema?: Record<string, unknown> | undefined;
  /** Where an HTTP tool is reached; message-bus tools are reached through the registry. */
  http: { endpoint: string; host: string; port: number; forwardAuthorization: boolean } | null;
  /** The service a message-bus tool's calls go to; for an mcp tool, its MCP server's id. */
  serviceId: string | null;
  timeoutMs: number | undefined;
  /** Agent hints kept as given (`group`, `state`, `applicable-states`). */
  hints: Record<string, unknown>;
}

/** What a message-bus tool's observation is, for the article's `returns` field. */
const BUS_TOOL_RETURNS = 'The tool service\'s observation, as text';
/** The same for mcp tools (src/bridge/mcp-transport.ts says how an answer becomes text). */
const MCP_STRUCTURED_RETURNS = "The tool's structured answer as JSON text, which its outputSchema describes";
const MCP_TEXT_RETURNS = "The tool's text content, its parts joined by line feeds";

function inputSchemaOf(parameters: Record<string, ToolParameter & { required?: boolean }>): JsonSchemaObject {
  const properties = dictionary<Record<string, unknown>>();
  const required: string[] = [];
  for (const [name, { required: isRequired, ...schema }] of Object.entries(parameters)) {
    properties[name] = schema;
    if (isRequired !== false) required.push(name);
  }
  // Arguments are passed through untyped and the service validates them, but models do best
  // with a closed schema; extra keys are still forwarded if a model sends them.
  return { type: 'object', properties, required, additionalProperties: false };
}

function normaliseHttpTool(tool: HttpTool): Tool {
  const parameters = dictionary<ToolParameter>();
  for (const [name, param] of Object.entries(tool.parameters)) parameters[name] = stripUndefined(param);
  return {
    name: tool.name,
    kind: 'http',
    description: tool.description,
    scopes: [...tool.scopes],
    parameters,
    returns: tool.returns,
    inputSchema: inputSchemaOf(parameters),
    http: { endpoint: tool.endpoint, host: tool.host, port: tool.port, forwardAuthorization: tool.forwardAuthorization },
    serviceId: null,
    timeoutMs: tool.timeoutMs,
    hints: {},
  };
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
    http: null,
    serviceId: tool.service,
    timeoutMs: tool.timeoutMs,
    hints,
  };
}

const JSON_TYPES: ReadonlySet<string> = new Set(JsonTypeSchema.options);

/**
 * The article's type of one upstream property. Where the schema names none (`anyOf`, say) one
 * is inferred from its keywords; `inputSchema` stays the exact contract.
 */
function jsonTypeOf(schema: Record<string, unknown>): JsonType {
  const types = (Array.isArray(schema['type']) ? schema['type'] : [schema['type']]).filter((t): t is JsonType => typeof t === 'string' && JSON_TYPES.has(t));
  const type = types.find((t) => t !== 'null') ?? types[0];
  if (type !== undefined) return type;
  if (isObject(schema['properties'])) return 'object';
  if (schema['items'] !== undefined) return 'array';
  return 'string';
}

function normaliseMcpTool(tool: McpTool): Tool {
  const properties = isObject(tool.inputSchema['properties']) ? tool.inputSchema['properties'] : {};
  const requiredNames = tool.inputSchema['required'];
  const required = new Set(Array.isArray(requiredNames) ? requiredNames.filter((n) => typeof n === 'string') : []);
  const parameters = dictionary<ToolParameter>();
  for (const [name, raw] of Object.entries(properties)) {
    const schema = isObject(raw) ? raw : {};
    const description = typeof schema['description'] === 'string' ? schema['description'] : undefined;
    parameters[name] = stripUndefined({ type: jsonTypeOf(schema), description, required: required.has(name) ? undefined : false });
  }
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

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * An object keyed by user-given names (parameter and argument names), without a prototype, so
 * that no name, even one stored before `__proto__` was refused, reaches Object.prototype.
 */
function dictionary<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}

function stripUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
