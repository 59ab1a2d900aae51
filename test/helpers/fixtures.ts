import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { McpTool } from '../../src/model/mcp-schemas.js';

const SEED = join(import.meta.dirname, '..', 'fixtures', 'seed');

/** A seed descriptor by file name (without .json), as the source documents give it. */
export function seed(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SEED, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

/** The discovery article's four tools, registered at startup there. */
export const ARTICLE_TOOLS = ['calculator', 'file_reader', 'database_query', 'simulation_data'] as const;

/**
 * A tool of MCP server `server` as its sync would store it, `prefix` + `name` (issue 29's tests
 * fill a server's review queue with these, as a listing of the upstream would).
 */
export function mcpToolOf(
  server: string,
  prefix: string,
  name: string,
  description: string,
  inputSchema: McpTool['inputSchema'] = { type: 'object' },
): McpTool {
  return { type: 'mcp', name: `${prefix}${name}`, server, upstreamName: name, description, inputSchema, scopes: [] };
}
