/**
 * Tools of upstream MCP servers: `tools/call` with the upstream's name for the tool, over the
 * server's one connection (kept by src/registry/mcp-sync.ts), with the server's credential and
 * never the caller's token. The answer becomes the observation text: structured content as
 * its JSON text, else the text parts joined by line feeds, other parts named in brackets; and
 * its content blocks go on whole (issue 31), for `/mcp` and invoke's `content`. Progress
 * notifications of the upstream are handed to the call's `onProgress`. Each call is an MCP
 * client span whose W3C trace context goes upstream in `params._meta`.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { McpTool } from '../model/mcp-schemas.js';
import { TargetRefusedError, ToolServiceError, UpstreamUnavailableError } from './errors.js';
import type { CallToolResult, McpUpstreamClient } from './mcp-client.js';
import { annotateActive, traceTransport } from './tracing.js';
import type { McpContentBlock } from '../model/mcp-content.js';
import type { ToolTransport, TransportAnswer, TransportCall } from './transport.js';

/** The server's connection while it is usable; otherwise why not (`refused`: by the outbound address policy). */
export type McpConnectionLookup = (serverId: string) => { client: McpUpstreamClient } | { down: string; refused?: boolean };

type ContentPart = CallToolResult['content'][number];

/** Bytes of base64 data, without decoding it. */
function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((data.length * 3) / 4) - padding;
}

function partText(part: ContentPart): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
    case 'audio':
      return `[${part.type} ${part.mimeType}, ${base64Bytes(part.data)} bytes]`;
    case 'resource_link':
      return `[resource ${part.uri}]`;
    case 'resource':
      return 'text' in part.resource ? part.resource.text : `[resource ${part.resource.uri}, ${base64Bytes(part.resource.blob)} bytes]`;
    default:
      return '[content the registry cannot show]';
  }
}

/** The observation of a successful call. */
function observationOf(result: CallToolResult): string {
  if (result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return result.content.map(partText).join('\n');
}

export class McpTransport implements ToolTransport {
  /** Each server has its own state (GET /mcp-servers/{id}); there is no one connection to report. */
  readonly state = 'connected' as const;
  readonly #lookup: McpConnectionLookup;
  readonly #maxResponseBytes: number;

  constructor(lookup: McpConnectionLookup, maxResponseBytes: number) {
    this.#lookup = lookup;
    this.#maxResponseBytes = maxResponseBytes;
  }

  async call(call: TransportCall): Promise<TransportAnswer> {
    const tool = call.descriptor as McpTool;
    const connection = this.#lookup(tool.server);
    if ('down' in connection) {
      if (connection.refused) throw new TargetRefusedError(`MCP server "${tool.server}": ${connection.down}`);
      throw new UpstreamUnavailableError(`MCP server "${tool.server}" cannot be reached now: ${connection.down}`);
    }
    const { client } = connection;
    // The MCP conventions' client span, `tools/call {tool}` (the upstream's name for it); its
    // context goes upstream in params._meta. No URL path: a registered URL may hold a credential.
    const port = client.url.port !== '' ? Number(client.url.port) : client.url.protocol === 'https:' ? 443 : 80;
    const { id: sessionId, protocolVersion } = client.session;
    const attributes = {
      'mcp.method.name': 'tools/call',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': tool.upstreamName,
      'network.transport': 'tcp',
      'network.protocol.name': 'http',
      'server.address': client.url.hostname,
      'server.port': port,
      ...(sessionId !== undefined && { 'mcp.session.id': sessionId }),
      ...(protocolVersion !== undefined && { 'mcp.protocol.version': protocolVersion }),
    };
    // error.type as the conventions name it: the JSON-RPC error code, or `tool_error` for an
    // answer with isError; otherwise the registry's own class of the failure.
    let rpcCode: string | undefined;
    const errorTypeOf = (err: unknown) =>
      rpcCode ?? (err instanceof ToolServiceError && err.type === 'mcp-tool-error' ? 'tool_error' : undefined);
    return traceTransport(
      `tools/call ${tool.upstreamName}`,
      attributes,
      async (traceContext) => {
        let result: CallToolResult;
        try {
          result = await client.callTool(tool.upstreamName, call.arguments, call.signal, traceContext, call.onProgress);
        } catch (err) {
          if (call.signal.aborted) throw call.signal.reason;
          if (client.lost !== null && client.refused) throw new TargetRefusedError(`MCP server "${tool.server}": ${client.lost}`);
          if (client.lost !== null) throw new UpstreamUnavailableError(`MCP server "${tool.server}" cannot be reached now: ${client.lost}`);
          if (err instanceof McpError) {
            rpcCode = String(err.code);
            annotateActive('rpc.response.status_code', rpcCode);
          }
          // A JSON-RPC error (an unknown tool, invalid arguments) or an HTTP error status.
          throw new ToolServiceError('mcp-error', err instanceof Error ? err.message.slice(0, 1000) : 'the MCP server failed the call');
        }
        if (result.isError === true) {
          throw new ToolServiceError(
            'mcp-tool-error',
            result.content.map(partText).join('\n').slice(0, 1000) || 'the tool reported an error',
          );
        }
        const text = observationOf(result);
        // The SDK's schema kept the fields it knows of each block: they pass on as it parsed them.
        const blocks = result.content as McpContentBlock[];
        // One bound on the whole answer, its text and its blocks (an image's base64 counts as sent).
        if (Buffer.byteLength(text) + Buffer.byteLength(JSON.stringify(blocks)) > this.#maxResponseBytes)
          throw new ToolServiceError('response-too-large', 'the tool sent more than the registry keeps for one call');
        call.onChunk?.(text);
        return { text, blocks };
      },
      errorTypeOf,
    );
  }

  /** The connections belong to the sync, which closes them. */
  close(): void {}
}
