/**
 * A tool as the Model Context Protocol lists it (`tools/list`): the fields a model needs and
 * nothing about where the call goes. Scopes, hosts and queues stay the registry's business.
 */
import type { Tool } from './normalise.js';
import { deprecationNote, type ToolDeprecation } from './deprecation.js';

export interface McpToolEntry {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  /** Issue 34: MCP's `annotations` are fixed hints, so a deprecation goes in `_meta` under the registry's prefix. */
  _meta?: { [DEPRECATION_META]: ToolDeprecation };
}

/** The `_meta` key of a deprecated tool's deprecation in `tools/list` (MCP's reverse-DNS prefix form). */
const DEPRECATION_META = 'io.tool-registry/deprecation';

export function mcpToolOf(tool: Tool, deprecation?: ToolDeprecation): McpToolEntry {
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    description: deprecation === undefined ? tool.description : `${tool.description}\n\n${deprecationNote(deprecation)}`,
    inputSchema: tool.inputSchema as unknown as Record<string, unknown>,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
    ...(deprecation !== undefined && { _meta: { [DEPRECATION_META]: deprecation } }),
  };
}

/**
 * What a call's answer becomes in an MCP result: the observation as text, as the tool gave it
 * (a JSON answer is its JSON text, never a JSON string of it), and, for a tool that declares an
 * output schema, the same answer as `structuredContent`. Null when such a tool's answer is not
 * a JSON object, which its schema cannot describe.
 */
export function mcpResultOf(
  tool: Tool,
  text: string,
): { content: { type: 'text'; text: string }[]; structuredContent?: Record<string, unknown> } | null {
  const content = [{ type: 'text' as const, text }];
  if (tool.outputSchema === undefined) return { content };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  return { content, structuredContent: value as Record<string, unknown> };
}
