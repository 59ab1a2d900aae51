/**
 * Every tool, whichever its kind, becomes one `Tool` value: what a model needs to call it
 * (description, parameters, a JSON Schema `inputSchema`) and where the call goes.
 */
import type { BusTool, HttpTool, JsonType, ToolKind } from './schemas.js';

export interface JsonSchemaObject {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: boolean;
}

export interface ToolParameter {
  type: JsonType;
  description?: string;
  [keyword: string]: unknown;
}

export interface Tool {
  name: string;
  kind: ToolKind;
  description: string;
  scopes: string[];
  /** The article's `parameters` map, also derived for message-bus tools from `arguments`. */
  parameters: Record<string, ToolParameter>;
  returns: string;
  inputSchema: JsonSchemaObject;
  /** Where an HTTP tool is reached; message-bus tools are reached through the registry. */
  http: { endpoint: string; host: string; port: number; forwardAuthorization: boolean } | null;
  /** The service a message-bus tool's calls go to. */
  serviceId: string | null;
  timeoutMs: number | undefined;
  /** Agent hints kept as given (`group`, `state`, `applicable-states`). */
  hints: Record<string, unknown>;
}

/** What a message-bus tool's observation is, for the article's `returns` field. */
const BUS_TOOL_RETURNS = 'The tool service\'s observation, as text';

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

export function normaliseTool(kind: ToolKind, descriptor: HttpTool | BusTool): Tool {
  return kind === 'http' ? normaliseHttpTool(descriptor as HttpTool) : normaliseBusTool(descriptor as BusTool);
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
