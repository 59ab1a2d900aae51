/**
 * What discovery shows of a tool. The article's fields come first so its agents work unchanged,
 * then the registry's own. Queue names and config values are never here: they are backend
 * topology, not something a model needs.
 */
import type { JsonSchemaObject, Tool, ToolParameter } from './normalise.js';
import type { ToolKind } from './schemas.js';
import type { ToolRecord, ToolStatus } from './records.js';
import type { ToolDeprecation } from './deprecation.js';

export interface PublicTool {
  name: string;
  description: string;
  scopes: string[];
  parameters: Record<string, ToolParameter>;
  returns: string;
  endpoint: string;
  host: string;
  port: number;
  kind: ToolKind;
  inputSchema: JsonSchemaObject;
  /** Where the tool declares one. */
  outputSchema?: JsonSchemaObject;
  status: ToolStatus;
  /** Issue 34: on deprecated tools only. */
  deprecation?: ToolDeprecation;
  index: number;
  updatedAt: string;
  [hint: string]: unknown;
}

/** Where the registry's own invoke route is reached, for message-bus and mcp tools. */
function invokeLocation(publicUrl: URL, toolName: string): { endpoint: string; host: string; port: number } {
  const base = publicUrl.pathname.replace(/\/+$/, '');
  const port = publicUrl.port !== '' ? Number(publicUrl.port) : publicUrl.protocol === 'https:' ? 443 : 80;
  return { endpoint: `${base}/tools/${encodeURIComponent(toolName)}/invoke`, host: publicUrl.hostname, port };
}

/** Builds the entry with a fixed key order, so equal views serialise to equal bytes. */
export function publicToolView(tool: Tool, record: ToolRecord, publicUrl: URL): PublicTool {
  // A tool with a full target is reached through the registry, like message-bus tools.
  const location = tool.http?.endpoint !== undefined ? tool.http : invokeLocation(publicUrl, tool.name);
  return {
    name: tool.name,
    description: tool.description,
    scopes: tool.scopes,
    parameters: tool.parameters,
    returns: tool.returns,
    endpoint: location.endpoint,
    host: location.host,
    port: location.port,
    kind: tool.kind,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
    ...tool.hints,
    status: record.status,
    ...(record.deprecation !== undefined && { deprecation: record.deprecation }),
    index: record.index,
    updatedAt: record.updatedAt,
  };
}
