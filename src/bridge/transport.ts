/**
 * One transport per backend kind, behind one small interface: the bridge decides who may call
 * what, with which arguments and for how long; a transport only carries the call there and
 * brings the observation back. An upstream MCP server will be a third implementation.
 */
import type { Tool } from '../model/normalise.js';
import type { ToolDescriptor } from '../model/schemas.js';
import type { BinaryContent } from '../model/api.js';
import type { McpContentBlock } from '../model/mcp-content.js';

export interface TransportCall {
  /** The correlation id of this call (the `id` message property on the bus). */
  id: string;
  tool: Tool;
  /** The stored descriptor (a message-bus tool's config values live here). */
  descriptor: ToolDescriptor;
  arguments: Record<string, unknown>;
  /** The caller's subject, for services that want to know who asks. */
  sub: string | null;
  /** The Authorization header to forward, when the tool takes it and policy allows it. */
  authorization: string | undefined;
  /** Who owns the tool (`openapi-source:<id>` for a source's tools): whose credential the call carries. */
  owner: string | null;
  /** The caller's bearer token, for a token exchange (RFC 8693) only: it never reaches the host. */
  callerToken: string | undefined;
  /** Called with each chunk of a streamed answer as it arrives. */
  onChunk: ((text: string) => void) | undefined;
  /** Called with each progress notification of an upstream MCP server during the call. */
  onProgress?: ((progress: CallProgress) => void) | undefined;
  /** Aborted at the call's timeout, or when the caller goes away. */
  signal: AbortSignal;
}

/** A progress notification's values (MCP `notifications/progress`, without its token). */
export interface CallProgress {
  progress: number;
  total?: number | undefined;
  message?: string | undefined;
}

/** An observation: its text, and for an answer of bytes, the bytes (the text then names them). */
export interface TransportAnswer {
  text: string;
  binary?: BinaryContent | undefined;
  /** An upstream MCP server's content blocks, whole (the text then joins their text). */
  blocks?: McpContentBlock[] | undefined;
}

export type TransportState = 'not-configured' | 'connected' | 'disconnected';

export interface ToolTransport {
  /** Carries one call; resolves with the observation (as text, or with its bytes), or rejects with a bridge error. */
  call(call: TransportCall): Promise<string | TransportAnswer>;
  /** The connection's state, for readiness reports. */
  readonly state: TransportState;
  close(): void;
}
