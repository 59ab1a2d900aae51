/**
 * A tool as the Model Context Protocol lists it (`tools/list`): the fields a model needs and
 * nothing about where the call goes. Scopes, hosts and queues stay the registry's business.
 */
import type { Tool } from './normalise.js';

export interface McpToolEntry {
  name: string;
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
}

export function mcpToolOf(tool: Tool): McpToolEntry {
  return {
    name: tool.name,
    ...(tool.title !== undefined && { title: tool.title }),
    description: tool.description,
    inputSchema: tool.inputSchema as unknown as Record<string, unknown>,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
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
