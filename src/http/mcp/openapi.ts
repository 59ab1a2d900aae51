/** The OpenAPI side of `/mcp`: the description its operations share, its event stream, its refusals. */
import { z } from 'zod';
import { PROBLEM_CONTENT_TYPE } from '../plugins/errors.js';
import { headers, problem, problems, type HeaderDoc } from '../openapi/responses.js';

export const DESCRIPTION = `The Model Context Protocol's Streamable HTTP transport, served by the official
TypeScript SDK at its newest protocol revision (older revisions it supports are negotiated at
\`initialize\`). \`POST\` carries JSON-RPC messages, \`GET\` opens the session's stream of
server notifications, \`DELETE\` ends the session.

**Authorization.** Every request needs a bearer token (unless \`MCP_ALLOW_ANONYMOUS\` is on):
without one, or with one that is not valid, the answer is \`401\` with
\`WWW-Authenticate: Bearer resource_metadata="…/.well-known/oauth-protected-resource/mcp"\`,
where MCP clients find the authorization server. Tokens must be issued for this registry
(its \`RESOURCE_URL\`, or the MCP endpoint's own identifier, \`RESOURCE_URL/mcp\`). A session
belongs to the caller that opened it (token issuer and subject): it answers no one else.

**Tools.** \`tools/list\` returns exactly the tools \`GET /\` shows the same token, in pages of
\`MCP_PAGE_SIZE\` with \`nextCursor\`. \`tools/call\` goes through the same bridge as
\`POST /tools/{name}/invoke\` (scopes checked again, usage and audit recorded): a call the
caller may not make (no token, none of the tool's scopes) is a result with \`isError: true\`,
the reason as text and the problem (\`code\`, \`status\`, \`scopes\`) in
\`_meta["tool-registry/problem"]\`, which every client keeps its session with; under
\`MCP_SCOPE_CHALLENGE\` a missing scope is instead \`403\` with \`error="insufficient_scope"\`, for
clients that step up on it; a tool that fails gives a result with \`isError: true\`; streamed output becomes \`notifications/progress\` when the request
carries a \`progressToken\`, as does an upstream MCP server's own progress (at most one per
\`MCP_PROGRESS_INTERVAL_MS\`, \`MCP_PROGRESS_MAX\` per call), and an upstream's content blocks
(image, audio, resource, resource_link) and its text beside its \`structuredContent\` pass
through whole. The client's token is not forwarded to tool hosts unless
\`MCP_FORWARD_AUTHORIZATION\` is on. \`notifications/tools/list_changed\` reaches a session's
stream when a write changes what its token sees, and only then.

**Batches and cancellation.** JSON-RPC batches exist in revision 2025-03-26 (the revision a
request without \`MCP-Protocol-Version\` is taken to speak); 2025-06-18 and later have none. A
batch with two requests of one id is refused whole (\`-32600\`), and nothing in it runs. A
request cancelled by \`notifications/cancelled\` gets no answer: one cancelled in its own
batch never runs, one cancelled from another POST is stopped, and the response it was in ends
once the rest of that POST are answered (at once, and empty, when nothing is left to answer).
A request whose params its method does not take is answered \`-32602\` with what is wrong
(\`tools/call: "name" is required and must be a string\`).

**Revision 2026-07-28.** A \`POST\` whose \`MCP-Protocol-Version\` is \`2026-07-28\` (or that
has no session and names a revision in \`params._meta["io.modelcontextprotocol/protocolVersion"]\`)
is of that revision: self-contained, no \`initialize\` and no session. Its \`params._meta\` must
carry the revision and \`io.modelcontextprotocol/clientCapabilities\` (an object): else \`400\`
with \`-32602\`. \`MCP-Protocol-Version\` must equal the \`_meta\` revision, \`Mcp-Method\` the
method, and, for \`tools/call\`, \`Mcp-Name\` the tool's name (\`=?base64?...?=\` decoded), each
present: else \`400\` with \`-32020\`; an unknown revision there is \`400\` with \`-32022\` and
the revisions served. These refusals, and every other of a JSON-RPC error at this revision, are
the problem body with the JSON-RPC members, in \`application/json\` (the revision's transport
answers a request with that or an event stream only).
\`server/discover\` answers the revisions served, the capabilities and the server; \`tools/list\`
carries \`resultType\`, \`ttlMs\` and \`cacheScope\`: \`public\` with \`ANONYMOUS_MAX_AGE_S\` as
\`ttlMs\` for the anonymous view, \`private\` with \`0\` for a token's; both answer
\`application/json\`. \`tools/call\` is answered as at 2025-11-25 (an event stream), with
\`resultType\`. \`subscriptions/listen\` (which replaces the \`GET\` stream at this
revision) answers an event stream that stays open: first
\`notifications/subscriptions/acknowledged\` with the part of \`params.notifications\` honoured
(\`toolsListChanged\` only; a filter without it is acknowledged empty and ended at once), then
\`notifications/tools/list_changed\` whenever a write changes the view \`tools/list\` gives the same
caller, and never for other writes; every message carries
\`_meta["io.modelcontextprotocol/subscriptionId"]\` (the request's id), none an event id (the
revision has no \`Last-Event-ID\`), and on shutdown the stream ends with the request's result.
\`server/discover\` advertises \`tools.listChanged\`. Other methods are \`404\` with \`-32601\`,
\`ping\` among them (the revision removed it).
Older revisions' answers are unchanged, and \`initialize\` proposing 2026-07-28 (which has none)
is negotiated down to 2025-11-25.

**Limits.** Each caller holds at most \`MCP_SESSIONS_PER_CALLER\` sessions (a new one ends
its least recently used), the registry \`MCP_MAX_SESSIONS\`; a session unused for
\`MCP_SESSION_IDLE_S\` without an open stream ends (requests naming it get \`404\`, and the
client starts a new one). An open \`GET\` stream, and each 2026-07-28 \`subscriptions/listen\`
stream, counts against \`MAX_WAITERS\` and \`MAX_WAITERS_PER_CALLER\`, gets a \`: keepalive\`
comment every 15 s, ends when its token expires (a listen stream without its result: the
client listens again with a fresh token), and is cut off when its client stops reading. Stream events carry ids: a client that lost a stream sends \`GET\` with
\`Last-Event-ID\` and is sent what it missed, within \`MCP_REPLAY_EVENTS\`, \`MCP_REPLAY_S\`
and \`MCP_REPLAY_BYTES\` per session. Requests from a browser \`Origin\` not in \`MCP_ALLOWED_ORIGINS\` get \`403\`.
Refusals made before the SDK sees the request and the SDK's own are problem details; those
of the SDK also carry the JSON-RPC \`error\`.`;

export const McpEventsSchema = z
  .string()
  .regex(/^(?:event: message\n(?:id: [^\n]*\n)?data: [^\n]+\n\n|id: [^\n]*\n(?:retry: \d+\n)?data: \n\n|: [^\n]*\n\n)*$/)
  .describe(
    'Server-sent events, each `event: message` with one JSON-RPC message as `data` and its event `id` (for `Last-Event-ID`; none on a 2026-07-28 `subscriptions/listen` stream, which is not resumable), a first event with an `id` and empty `data` that a client may resume from before any message, and `: keepalive` comments.',
  );

const challenge = { 'WWW-Authenticate': headers['WWW-Authenticate'] };

/**
 * A refusal of `POST /mcp`: the problem body in `application/problem+json`, or, at revision
 * 2026-07-28, the same body (with its JSON-RPC members) in `application/json`.
 */
export function rpcProblem(description: string, options: { headers?: Record<string, HeaderDoc> } = {}) {
  const doc = problem(description, options);
  const schema = doc.content[PROBLEM_CONTENT_TYPE];
  return { ...doc, content: { ...doc.content, 'application/json': schema } };
}

export const refusals = {
  401: problem(
    "No bearer token (`TR_ERR_UNAUTHENTICATED`), or one that is not valid (`TR_ERR_INVALID_TOKEN`); the challenge links the MCP endpoint's protected-resource metadata.",
    { headers: challenge },
  ),
  403: problem(
    'A browser `Origin` not in `MCP_ALLOWED_ORIGINS` (`TR_ERR_ORIGIN_NOT_ALLOWED`), or a `tools/call` for a tool the token may see but holds none of the scopes of (`TR_ERR_INSUFFICIENT_SCOPE`, `error="insufficient_scope"` with the scopes that would do).',
    { headers: challenge },
  ),
  404: problem(
    'No session with that `Mcp-Session-Id` held by this caller (`TR_ERR_NOT_FOUND`): it ended, or never was. Start a new one with `initialize`.',
  ),
  429: problems.TooManyRequests,
};
