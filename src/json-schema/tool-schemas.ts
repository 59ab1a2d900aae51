/**
 * The schemas a tool declares, checked as the registry will serve them (check.ts): an HTTP
 * tool's `inputSchema`, or the input schema its `parameters` make (their `items`, `enum` and
 * `default` are free-form JSON); any tool's `outputSchema`; an mcp tool's upstream schemas.
 * A message-bus tool's input schema is made from `arguments`, whose shape zod fixes: it cannot
 * be invalid, and only its size is checked.
 */
import type { FieldError } from '../model/errors.js';
import type { McpTool } from '../model/mcp-schemas.js';
import { normaliseTool } from '../model/normalise.js';
import { parseToolInput, parseToolPutInput, type ToolBody, type ToolPutBody } from '../model/descriptors.js';
import { resolveTool, validationError, type ParsedTool, type ServiceLookup } from '../model/resolve.js';
import type { BusTool, HttpTool, ToolDescriptor, ToolKind } from '../model/schemas.js';
import { schemaProblems, sizeProblems, type PathSegment, type SchemaProblem } from './check.js';

/**
 * A tool body as sent (src/model/descriptors.ts), then the schemas it declares: what every front
 * hands the write side (the routes validate with it). Throws `TR_ERR_VALIDATION` with the paths
 * of the problems in the body.
 */
export function parseToolBody(input: unknown, prefix: readonly PropertyKey[] = []): ToolBody {
  return withCheckedSchemas(parseToolInput(input, prefix), prefix);
}

/** The same for `PUT /tools/{name}` and the replication topic, where the path gives the name. */
export function parseToolPutBody(input: unknown, pathName?: string): ToolPutBody {
  return withCheckedSchemas(parseToolPutInput(input, pathName), []);
}

/** A tool body, then what the catalogue says of it (resolveTool): an import's check of each tool. */
export function parseCheckedTool(input: unknown, lookupService: ServiceLookup, prefix: readonly PropertyKey[] = []): ParsedTool {
  return resolveTool(parseToolBody(input, prefix), lookupService, prefix);
}

function withCheckedSchemas<T extends ToolPutBody>(tool: T, prefix: readonly PropertyKey[]): T {
  const kind = 'service' in tool ? 'tool-service' : 'http';
  // The schemas do not depend on the name, which a PUT's path gives later.
  const errors = toolSchemaErrors(kind, { ...tool, name: tool.name ?? '' }, prefix);
  if (errors.length > 0) throw validationError(kind === 'http' ? 'HTTP tool' : 'message-bus tool', errors);
  return tool;
}

/** Field errors (dotted paths under `prefix`) of a descriptor's schemas; none when all pass. */
export function toolSchemaErrors(kind: ToolKind, descriptor: ToolDescriptor, prefix: readonly PropertyKey[] = []): FieldError[] {
  const errors: FieldError[] = [];
  const add = (problems: SchemaProblem[], at: (path: PathSegment[]) => PropertyKey[]) => {
    for (const { path, message } of problems) errors.push({ path: [...prefix, ...at(path)].map(String).join('.'), message });
  };
  if (kind === 'http') {
    const tool = descriptor as HttpTool;
    if (tool.inputSchema !== undefined) add(schemaProblems(tool.inputSchema), (path) => ['inputSchema', ...path]);
    else if (tool.parameters !== undefined && Object.keys(tool.parameters).length > 0) {
      const derived = normaliseTool(kind, tool).inputSchema;
      add(hasFreeFormSchema(tool.parameters) ? schemaProblems(derived) : sizeProblems(derived), parameterPath);
    }
  } else if (kind === 'mcp') {
    add(schemaProblems((descriptor as McpTool).inputSchema), (path) => ['inputSchema', ...path]);
  } else {
    // Valid by construction, but served like any other: held to the same size.
    add(sizeProblems(normaliseTool(kind, descriptor).inputSchema), () => ['arguments']);
  }
  const output = (descriptor as HttpTool | BusTool | McpTool).outputSchema;
  if (output !== undefined) add(schemaProblems(output), (path) => ['outputSchema', ...path]);
  return errors;
}

/**
 * Whether the schema made from these parameters could be invalid. Zod fixes every field of a
 * parameter but `items` (any JSON object) and `enum` (any array: Ajv refuses an empty one);
 * `type` is a JSON type, `description` text, `default` any value, names a safe alphabet. So
 * without these, the made schema is valid by construction and only its size is checked: this
 * halves the check's cost on an import (test/schemas/limits.test.ts holds the claim).
 */
export function hasFreeFormSchema(parameters: NonNullable<HttpTool['parameters']>): boolean {
  return Object.values(parameters).some((p) => p.items !== undefined || p.enum?.length === 0);
}

/**
 * A path in the input schema made from `parameters` (normalise.ts) as a path in the descriptor:
 * `properties.{name}` is the parameter `{name}` less its `required` flag.
 */
function parameterPath(path: PathSegment[]): PropertyKey[] {
  const [keyword, name, ...rest] = path;
  return keyword === 'properties' && name !== undefined ? ['parameters', name, ...rest] : ['parameters'];
}
