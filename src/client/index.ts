/**
 * `tool-registry/client`: the agent's side of the registry, with no server dependencies
 * (no Fastify, SQLite or zod at runtime; only types are shared with src/model).
 */
export {
  RegistryClient,
  type Discovery,
  type InvokeOptions,
  type InvokeResult,
  type RegistryClientOptions,
  type TokenSource,
  type UsageStats,
  type WatchOptions,
} from './registry-client.js';
export { RegistryClientError } from './errors.js';
export {
  toAgUi,
  toAnthropic,
  toMcp,
  toOpenAI,
  toPromptContext,
  type AgUiTool,
  type AnthropicTool,
  type McpToolEntry,
  type OpenAiChatTool,
} from './conversions.js';
export type { PublicTool } from '../model/public-view.js';
