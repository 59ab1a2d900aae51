/**
 * How `/mcp` answers a `tools/call` the caller may not make (issue 31): in the session, as a
 * `tools/call` result with `isError: true`, never as an HTTP error that ends it.
 *
 * What each client does with an HTTP 401/403 to a POST, read in its transport's source:
 * - Python SDK 1.30 (`mcp/client/streamable_http.py`, `_handle_post_request`): calls
 *   `response.raise_for_status()` in a task of the transport's task group; the
 *   `HTTPStatusError` ends the group, so the whole session is torn down.
 * - Python SDK 2.3 (same file): keeps the session, but reads a JSON-RPC error only from an
 *   `application/json` body; a problem+json body becomes "Server returned an error response"
 *   (-32603), and the registry's reason is lost.
 * - TypeScript SDK 1.32 (`client/streamableHttp.js`, `send`): keeps the session and rejects the
 *   request with `StreamableHTTPError` "Error POSTing to endpoint: <body>"; with an
 *   `authProvider`, it runs OAuth on 401 and re-authorises with the challenge's `scope` on 403
 *   `insufficient_scope`, then sends the request again.
 * - AI SDK (`@ai-sdk/mcp` 1.x, `HttpMCPTransport.send`): keeps the session and rejects the call
 *   with `MCPClientError` "MCP HTTP Transport Error: POSTing to endpoint (HTTP 403): <body>";
 *   with an `authProvider` it runs OAuth on 401 only.
 *
 * So a refusal is a result every client keeps its session with and shows the model: the
 * registry's reason as text, and the problem (`code`, `status`, the scopes that would do) in
 * `_meta["tool-registry/problem"]`. A session that never authenticated cannot be helped by a
 * 401 anyway: a session belongs to its caller, and one with a token is another caller. A token
 * lacking a scope can be stepped up by clients with OAuth: `MCP_SCOPE_CHALLENGE` turns that
 * case back into the authorization spec's HTTP 403 `insufficient_scope` challenge, for
 * deployments whose clients all re-authorise on it (the TypeScript SDK with an authProvider).
 *
 * A tool the caller may not know of is never refused here: the bridge answers it as unknown
 * (`TR_ERR_NOT_FOUND`), which the server turns into the same `-32602` "Unknown tool" as a name
 * never registered.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { RegistryError } from '../../model/errors.js';

/** The `_meta` key a refused call's problem is under (MCP's reverse-DNS-free `prefix/name` form). */
export const PROBLEM_META_KEY = 'tool-registry/problem';

/** A failed or refused call, as MCP reports it to the model: the reason, `isError`, and the problem's facts. */
export function refusedCall(err: RegistryError): CallToolResult {
  const problem: Record<string, unknown> = { code: err.code, status: err.status };
  const scopes = err.challenge?.scope;
  if (scopes !== undefined && scopes.length > 0) problem['scopes'] = [...scopes];
  if (err.retryAfterS !== undefined) problem['retryAfterS'] = err.retryAfterS;
  return { content: [{ type: 'text', text: err.message }], isError: true, _meta: { [PROBLEM_META_KEY]: problem } };
}
