/**
 * Discovered tools in the shapes model SDKs take, the same as `GET /?format=` serves. The
 * server's conversions (src/model/exports.ts) sit beside zod schemas and take the internal
 * `Tool`; these take the discovery entry and need nothing at runtime, so the client stays free
 * of zod. Only the types are shared, and test/client pins each result to the server's export.
 */
import type { AgUiTool, AnthropicTool, OpenAiChatTool } from '../model/exports.js';
import type { McpToolEntry } from '../model/mcp-tool.js';
import type { PublicTool } from '../model/public-view.js';
import { promptLine, promptText, vendorSchema } from '../portable/vendor-schemas.js';

export type { AgUiTool, AnthropicTool, OpenAiChatTool, McpToolEntry };

/** OpenAI Chat Completions `tools` (`GET /?format=openai`). */
export const toOpenAI = (tools: readonly PublicTool[]): OpenAiChatTool[] =>
  tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: vendorSchema(tool.inputSchema, 'openai') },
  }));

/** Anthropic Messages `tools` (`GET /?format=anthropic`). */
export const toAnthropic = (tools: readonly PublicTool[]): AnthropicTool[] =>
  tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: vendorSchema(tool.inputSchema, 'anthropic') as AnthropicTool['input_schema'],
  }));

/** An MCP `tools/list` result's `tools` (`GET /?format=mcp` holds them under `tools`). */
export const toMcp = (tools: readonly PublicTool[]): McpToolEntry[] =>
  tools.map((tool) => ({
    name: tool.name,
    ...(typeof tool['title'] === 'string' && { title: tool['title'] }),
    description: tool.description,
    inputSchema: tool.inputSchema as unknown as Record<string, unknown>,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema as unknown as Record<string, unknown> }),
  }));

/** AG-UI `Tool`s, as a run input's `tools` holds them (`GET /?format=ag-ui`). */
export const toAgUi = (tools: readonly PublicTool[]): AgUiTool[] =>
  tools.map((tool) => ({ name: tool.name, description: tool.description, parameters: tool.inputSchema }));

/**
 * The discovery article's tool context for a system prompt (`GET /?format=prompt`):
 *
 *     Available tools:
 *     - calculator(expression): Perform mathematical calculations
 *
 * with a final newline; empty when there are no tools, as the article's agent then adds no
 * tool message.
 */
export const toPromptContext = (tools: readonly PublicTool[]): string =>
  promptText(tools.map((tool) => promptLine(tool.name, Object.keys(tool.parameters), tool.description)));
