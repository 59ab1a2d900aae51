/**
 * `/mcp`: the registry as a Model Context Protocol server over Streamable HTTP, through the
 * official SDK's server and transport classes. This file is the HTTP side only: who may come in
 * (a token, an allowed origin), which session a request belongs to, and turning the SDK's
 * answers into Fastify replies; what the protocol methods do is src/http/mcp/server.ts, and
 * which session hears of which write is src/http/mcp/sessions.ts.
 */
import { randomUUID } from 'node:crypto';
import cors from '@fastify/cors';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { JsonRpcMessageSchema, McpHeadersSchema } from '../../model/api.js';
import { RegistryError, type ErrorCode } from '../../model/errors.js';
import { viewKeyFor } from '../../model/visibility.js';
import { packageVersion } from '../../package-root.js';
import { callerKey } from '../caller-key.js';
import { eventStreams } from '../event-stream.js';
import { endResponsesOfCancelledRequests } from '../mcp/cancellation.js';
import { describeMalformedMessage } from '../mcp/invalid-params.js';
import { createMcpServer, type McpRequestContext } from '../mcp/server.js';
import { McpSessions, type McpSession } from '../mcp/sessions.js';
import { recordFailedCall } from '../plugins/audit.js';
import { ANYONE, BEARER, empty, headers, problem, problems } from '../openapi/responses.js';
import { tokenExpiresAt } from '../token-expiry.js';
import { documentedOnly } from '../validation.js';
import { resourceMetadataUrl } from './well-known.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** @fastify/cors's per-route switch, which its types do not declare. */
    cors?: false;
  }
}

/** Request headers the SDK's transport reads; nothing else (no credentials) is handed to it. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'] as const;

/** The SDK's HTTP refusals, by status, in the registry's error catalogue. */
const SDK_STATUS_CODES: Readonly<Record<number, ErrorCode>> = {
  400: 'TR_ERR_BAD_REQUEST',
  404: 'TR_ERR_NOT_FOUND',
  405: 'TR_ERR_METHOD_NOT_ALLOWED',
  406: 'TR_ERR_NOT_ACCEPTABLE',
  409: 'TR_ERR_CONFLICT',
  413: 'TR_ERR_BODY_TOO_LARGE',
  415: 'TR_ERR_UNSUPPORTED_MEDIA_TYPE',
};

/** The protocol revision that removed JSON-RPC batching. */
const BATCHLESS_REVISION = '2025-06-18';

const DESCRIPTION = `The Model Context Protocol's Streamable HTTP transport, served by the official
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
token holds none of the tool's scopes for is answered \`403\` with
\`error="insufficient_scope"\` and the scopes that would do; a tool that fails gives a result
with \`isError: true\`; streamed output becomes \`notifications/progress\` when the request
carries a \`progressToken\`. The client's token is not forwarded to tool hosts unless
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

**Limits.** Each caller holds at most \`MCP_SESSIONS_PER_CALLER\` sessions (a new one ends
its least recently used), the registry \`MCP_MAX_SESSIONS\`; a session unused for
\`MCP_SESSION_IDLE_S\` without an open stream ends (requests naming it get \`404\`, and the
client starts a new one). An open \`GET\` stream counts against \`MAX_WAITERS\` and
\`MAX_WAITERS_PER_CALLER\`, ends when its token expires, and is cut off when its client stops
reading. Requests from a browser \`Origin\` not in \`MCP_ALLOWED_ORIGINS\` get \`403\`.
Refusals made before the SDK sees the request and the SDK's own are problem details; those
of the SDK also carry the JSON-RPC \`error\`.`;

const McpEventsSchema = z
  .string()
  .regex(/^(?:event: message\n(?:id: [^\n]*\n)?data: [^\n]+\n\n|: [^\n]*\n\n)*$/)
  .describe('Server-sent events, each `event: message` with one JSON-RPC message as `data`, and `: keepalive` comments.');

const challenge = { 'WWW-Authenticate': headers['WWW-Authenticate'] };

const refusals = {
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

const mcpRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  // The session stream ends with its session (sessions.closeAll on close), not here.
  const streams = eventStreams(fastify);
  const { mcp } = config;
  const sessions = new McpSessions({ maxSessions: mcp.maxSessions, perCaller: mcp.sessionsPerCaller, idleMs: mcp.sessionIdleMs });
  app.metrics.watchMcpSessions(() => sessions.size);
  const unsubscribe = app.changes.subscribe((index, changes) => sessions.changed(index, changes));
  app.addHook('preClose', async () => {
    unsubscribe();
    sessions.closeAll();
  });

  /** The HTTP request behind each message, keyed by the authInfo object handed to the SDK. */
  const contexts = new WeakMap<object, McpRequestContext>();
  const deps = {
    catalog: app.catalog,
    listing: app.listing,
    bridge: app.bridge,
    visibility: config.visibility,
    knownScopes: app.catalog.knownScopeNames,
    pageSize: mcp.pageSize,
    forwardAuthorization: mcp.forwardAuthorization,
    version: packageVersion(),
  };
  const contextOf = (authInfo: unknown) => (typeof authInfo === 'object' && authInfo !== null ? contexts.get(authInfo) : undefined);
  const routeConfig = { resourceMetadataUrl: resourceMetadataUrl(mcp.resource) };
  const allowedOrigins = new Set(mcp.allowedOrigins);

  // @fastify/cors also adds `OPTIONS /mcp*` so that preflights reach a route; /mcp has its own,
  // so that catch-all answers as if it were not there (404, and 405s ignore it: errors.ts).
  app.addHook('onRoute', (route) => {
    if (route.url.endsWith('*')) route.config = { ...route.config, cors: false };
  });
  // Browser clients on an allowed origin may read the answers, the session id included. Its hook
  // runs on onRequest, before the auth and rate-limit refusals, so that those are readable too;
  // a preflight goes on to the OPTIONS route below, rate limited as any request.
  await app.register(cors, {
    origin: (origin, done) => done(null, origin !== undefined && allowedOrigins.has(origin)),
    methods: ['GET', 'POST', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Accept', 'Mcp-Session-Id', 'Mcp-Protocol-Version', 'Last-Event-ID'],
    exposedHeaders: ['Mcp-Session-Id', 'WWW-Authenticate', 'Retry-After'],
    maxAge: 600,
    preflightContinue: true,
    strictPreflight: false,
  });

  /** Who may come in: an allowed origin (DNS rebinding), and a token unless anonymous use is on. */
  const enter = (request: FastifyRequest) => {
    const origin = request.headers.origin;
    if (origin !== undefined && !allowedOrigins.has(origin)) {
      throw new RegistryError(
        'TR_ERR_ORIGIN_NOT_ALLOWED',
        `requests from origin ${JSON.stringify(origin).slice(0, 200)} are not allowed on /mcp (MCP_ALLOWED_ORIGINS)`,
      );
    }
    if (request.caller.kind === 'anonymous' && !mcp.allowAnonymous) {
      throw new RegistryError('TR_ERR_UNAUTHENTICATED', 'the MCP endpoint needs a bearer token', { challenge: {} });
    }
    // Under ANONYMOUS_DISCOVERY=none an anonymous caller is refused here too.
    return viewKeyFor(request.caller, config.visibility, app.catalog.knownScopeNames);
  };

  /** The session a request names, if its caller holds it. */
  const sessionOf = (request: FastifyRequest): McpSession => {
    const id = request.headers['mcp-session-id'];
    if (typeof id !== 'string')
      throw new RegistryError('TR_ERR_BAD_REQUEST', 'this request needs the Mcp-Session-Id header that initialize gave');
    const session = sessions.get(id, callerKey(request));
    if (!session)
      throw new RegistryError('TR_ERR_NOT_FOUND', 'no such MCP session: it ended or never was; start a new one with initialize');
    return session;
  };

  /** What the SDK gets of the HTTP request: its transport headers and who is asking. */
  const handOver = async (request: FastifyRequest, reply: FastifyReply, session: McpSession, body?: unknown): Promise<Response> => {
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    const authInfo = { token: '', clientId: request.caller.kind === 'token' ? (request.caller.sub ?? '') : '', scopes: [] as string[] };
    contexts.set(authInfo, {
      caller: request.caller,
      callerKey: callerKey(request),
      authorization: request.headers.authorization,
      signal: gone.signal,
      onCallFailed: (tool, code, status) => recordFailedCall(request, tool, code, status),
    });
    session.lastSeen = Date.now();
    const forwarded = new Headers();
    for (const name of TRANSPORT_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') forwarded.set(name, value);
    }
    const webRequest = new Request(new URL('/mcp', config.publicUrl), { method: request.method, headers: forwarded });
    return session.transport.handleRequest(webRequest, body === undefined ? { authInfo } : { authInfo, parsedBody: body });
  };

  /** A new session: its own SDK server and transport, held once `initialize` succeeds. */
  const openSession = async (request: FastifyRequest, key: ReturnType<typeof enter>): Promise<McpSession> => {
    const owner = callerKey(request);
    sessions.makeRoom(owner, Date.now());
    const server = createMcpServer(deps, contextOf);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session.id = id;
        sessions.add(session);
      },
      onsessionclosed: () => sessions.close(session),
    });
    const session: McpSession = { id: '', owner, server, transport, view: key, lastSeen: Date.now(), stream: null, inflight: new Set() };
    await server.connect(transport);
    endResponsesOfCancelledRequests(transport);
    return session;
  };

  const schema = (operationId: string, summary: string, response: Record<number, unknown>, extra: Record<string, unknown> = {}) => ({
    tags: ['mcp'],
    operationId,
    summary,
    description: DESCRIPTION,
    security: config.mcp.allowAnonymous ? ANYONE : BEARER,
    headers: McpHeadersSchema,
    ...extra,
    response: { ...response, ...refusals },
  });

  app.post(
    '/',
    {
      config: routeConfig,
      schema: schema(
        'mcpPost',
        'Send MCP messages (JSON-RPC over Streamable HTTP)',
        {
          200: {
            description:
              'The answer to the request: one JSON-RPC response (`application/json`), or a stream ending with it (`text/event-stream`, with progress notifications before it).',
            content: { 'application/json': { schema: JsonRpcMessageSchema }, 'text/event-stream': { schema: McpEventsSchema } },
          },
          202: empty('The message was a notification or a response: nothing to answer.'),
          400: problem(
            "`TR_ERR_BAD_REQUEST`: a message that is no JSON-RPC message of MCP's (the JSON-RPC `error` names the field: `-32602` in params, `-32600` elsewhere), a request other than `initialize` without `Mcp-Session-Id`, an unsupported `MCP-Protocol-Version` (with the SDK's JSON-RPC `error`), or a batch that is empty, is sent under `MCP-Protocol-Version` 2025-06-18 or later (which have none), or has two requests of one id (`-32600`; nothing in it runs).",
          ),
          409: problem('A request with the id of one still being answered on this session (`TR_ERR_CONFLICT`).'),
          406: problem('`Accept` must list both `application/json` and `text/event-stream` (`TR_ERR_NOT_ACCEPTABLE`).'),
          413: problems.PayloadTooLarge,
          415: problems.UnsupportedMediaType,
          503: problem('`MCP_MAX_SESSIONS` sessions are held already (`TR_ERR_UNAVAILABLE`); `Retry-After` says when to retry.', {
            headers: { 'Retry-After': headers['Retry-After'] },
          }),
        },
        { body: documentedOnly(z.union([JsonRpcMessageSchema, z.array(JsonRpcMessageSchema)])) },
      ),
    },
    async (request, reply) => {
      const key = enter(request);
      const body = request.body;
      refuseBatch(request, body);
      refuseMalformedMessages(body);
      if (Array.isArray(body)) refuseRepeatedIds(body);
      let session: McpSession;
      let opened = false;
      if (request.headers['mcp-session-id'] === undefined) {
        if (!isInitializeRequest(body))
          throw new RegistryError(
            'TR_ERR_BAD_REQUEST',
            'start a session with initialize; every other request needs the Mcp-Session-Id header it gave',
          );
        session = await openSession(request, key);
        opened = true;
      } else {
        session = sessionOf(request);
        refuseCallOutsideScopes(request, body);
        holdRequestIds(session, body, reply);
      }
      session.view = key;
      const response = await handOver(request, reply, session, body);
      // An initialize the SDK refused leaves no session behind.
      if (opened && session.id === '') session.server.close().catch(() => undefined);
      return answer(reply, response);
    },
  );

  /**
   * The SDK answers by request id: a second request reusing the id of one still being answered
   * would never get its answer, and would hold its connection until the client gave up.
   */
  const holdRequestIds = (session: McpSession, body: unknown, reply: FastifyReply) => {
    const ids = (Array.isArray(body) ? body : [body]).flatMap((message: unknown) => requestIdOf(message) ?? []);
    const taken = ids.find((id) => session.inflight.has(id));
    if (taken !== undefined)
      throw new RegistryError(
        'TR_ERR_CONFLICT',
        `a request with id ${taken.slice(0, 100)} is still being answered on this session; JSON-RPC ids must be unique`,
      );
    for (const id of ids) session.inflight.add(id);
    if (ids.length > 0) reply.raw.once('close', () => ids.forEach((id) => session.inflight.delete(id)));
  };

  /**
   * A call the token may know of but holds none of the scopes of is the MCP authorization rules'
   * insufficient-scope case: HTTP 403 with the challenge, before the SDK answers 200. Every
   * other refusal (an unknown tool, a deleted one) is the protocol's own error, from the handler.
   */
  const refuseCallOutsideScopes = (request: FastifyRequest, body: unknown) => {
    // Each call of a batch (protocol revisions before 2025-06-18), as a single one.
    for (const message of Array.isArray(body) ? (body as unknown[]) : [body]) {
      const params = (message as { method?: unknown; params?: { name?: unknown } } | null)?.params;
      if ((message as { method?: unknown } | null)?.method !== 'tools/call' || typeof params?.name !== 'string') continue;
      try {
        app.bridge.admit(params.name, request.caller);
      } catch (err) {
        if (err instanceof RegistryError && (err.code === 'TR_ERR_INSUFFICIENT_SCOPE' || err.code === 'TR_ERR_UNAUTHENTICATED')) {
          recordFailedCall(request, params.name, err.code, err.status);
          throw err;
        }
      }
    }
  };

  /**
   * JSON-RPC batches: MCP 2025-06-18 removed them, so a request of that revision or later (its
   * `MCP-Protocol-Version` header) may not send one; an empty batch is never a request
   * (JSON-RPC 2.0 section 6).
   */
  const refuseBatch = (request: FastifyRequest, body: unknown) => {
    if (!Array.isArray(body)) return;
    if (body.length === 0) throw new RegistryError('TR_ERR_BAD_REQUEST', 'an empty JSON-RPC batch is not a request');
    const version = request.headers['mcp-protocol-version'];
    if (typeof version === 'string' && version >= BATCHLESS_REVISION) {
      throw new RegistryError(
        'TR_ERR_BAD_REQUEST',
        `MCP ${version} has no JSON-RPC batches (removed in ${BATCHLESS_REVISION}); send one message per request`,
      );
    }
  };

  /**
   * A message the SDK's transport cannot take, though its JSON parsed: the transport refuses the
   * whole POST as `-32700` (Parse error), naming nothing. Refused here as it would be (400, the
   * whole POST), with the field named and the JSON-RPC code for the fault.
   */
  const refuseMalformedMessages = (body: unknown) => {
    const messages: unknown[] = Array.isArray(body) ? body : [body];
    for (const [i, message] of messages.entries()) {
      const malformed = describeMalformedMessage(message);
      if (malformed === undefined) continue;
      const detail = Array.isArray(body) ? `message ${i + 1} of the batch: ${malformed.message}` : malformed.message;
      throw new RegistryError('TR_ERR_BAD_REQUEST', detail, {
        extra: { jsonrpc: '2.0', error: { code: malformed.code, message: detail }, id: null },
      });
    }
  };

  /**
   * Answers go by request id: of two requests of a batch with one id, the SDK ran both and
   * answered one, and the second answer had nowhere to go. The batch is refused whole, before
   * anything in it runs, as JSON-RPC's Invalid Request.
   */
  const refuseRepeatedIds = (batch: readonly unknown[]) => {
    const seen = new Set<string>();
    for (const message of batch) {
      const id = requestIdOf(message);
      if (id === undefined) continue;
      if (seen.has(id)) {
        const detail = `Invalid Request: more than one request of the batch has id ${id.slice(0, 100)}; each request needs an id of its own`;
        throw new RegistryError('TR_ERR_BAD_REQUEST', detail, {
          extra: { jsonrpc: '2.0', error: { code: -32600, message: detail }, id: null },
        });
      }
      seen.add(id);
    }
  };

  app.get(
    '/',
    {
      config: routeConfig,
      exposeHeadRoute: false,
      schema: schema('mcpStream', "Open the session's stream of server notifications", {
        200: {
          description: 'The stream; it stays open until the session ends, the token expires or the client stops reading.',
          content: { 'text/event-stream': { schema: McpEventsSchema } },
        },
        400: problem('No `Mcp-Session-Id` (`TR_ERR_BAD_REQUEST`).'),
        406: problem('`Accept` must list `text/event-stream` (`TR_ERR_NOT_ACCEPTABLE`).'),
        409: problem('The session has a stream open already (`TR_ERR_CONFLICT`).'),
        503: problem(
          '`MAX_WAITERS` streams and blocking queries are held already, or `MAX_WAITERS_PER_CALLER` by this caller (`TR_ERR_UNAVAILABLE`).',
          {
            headers: { 'Retry-After': headers['Retry-After'] },
          },
        ),
      }),
    },
    async (request, reply) => {
      const key = enter(request);
      const session = sessionOf(request);
      session.view = key;
      const stream = streams.open(request, reply, {
        hold: {
          slots: app.waiters,
          holder: callerKey(request),
          // A stream lasts as long as its token is accepted; the client reconnects with a fresh one.
          expiresAt: tokenExpiresAt(request, config.jwt.clockToleranceS),
          onExpired: () => session.transport.closeStandaloneSSEStream(),
        },
      });
      let response: Response;
      try {
        response = await handOver(request, reply, session);
      } catch (err) {
        stream.release();
        throw err;
      }
      if (response.status !== 200) {
        stream.release();
        return answer(reply, response);
      }
      // The SDK writes the head and the events (through reply.send, so Fastify's hooks add the headers).
      const raw = reply.raw;
      stream.held();
      if (!stream.ended) session.stream = raw;
      stream.onEnd(() => {
        if (session.stream === raw) session.stream = null;
        session.lastSeen = Date.now();
      });
      return answer(reply, response);
    },
  );

  // A browser's preflight carries no credentials: it is answered for allowed origins only.
  app.options(
    '/',
    {
      config: { ...routeConfig, auth: false },
      schema: {
        tags: ['mcp'],
        operationId: 'mcpPreflight',
        summary: 'CORS preflight for browser MCP clients',
        description:
          "Answers a browser's preflight for `/mcp` from an origin in `MCP_ALLOWED_ORIGINS` (default: the origin of `PUBLIC_URL`): the methods and request headers the MCP transport uses. Other origins get `403`.",
        security: [],
        response: {
          204: empty('The origin may call `/mcp` with these methods and headers.', {
            'Access-Control-Allow-Origin': { description: 'The requesting origin.', required: true, schema: z.string() },
            'Access-Control-Allow-Methods': { description: '`GET, POST, DELETE`.', required: true, schema: z.string() },
            'Access-Control-Allow-Headers': { description: 'The headers the MCP transport sends.', required: true, schema: z.string() },
          }),
          403: problem('No `Origin`, or one not in `MCP_ALLOWED_ORIGINS` (`TR_ERR_ORIGIN_NOT_ALLOWED`).'),
          429: problems.TooManyRequests,
        },
      },
    },
    async (request, reply) => {
      const origin = request.headers.origin;
      if (origin === undefined || !allowedOrigins.has(origin)) {
        throw new RegistryError('TR_ERR_ORIGIN_NOT_ALLOWED', 'only origins in MCP_ALLOWED_ORIGINS may call /mcp from a browser');
      }
      // @fastify/cors has set the preflight's headers.
      return (reply as FastifyReply).code(204).send();
    },
  );

  app.delete(
    '/',
    {
      config: routeConfig,
      schema: schema('mcpEndSession', 'End an MCP session', {
        204: empty('The session has ended.'),
        400: problem('No `Mcp-Session-Id` (`TR_ERR_BAD_REQUEST`).'),
      }),
    },
    async (request, reply) => {
      enter(request);
      const session = sessionOf(request);
      const response = await handOver(request, reply, session);
      sessions.close(session);
      // The SDK answers an empty 200; an ended session is no content.
      return response.status === 200 ? (reply as FastifyReply).code(204).send() : answer(reply, response);
    },
  );
};

/** A request's id as JSON text (1 and "1" are two ids); undefined for notifications and responses. */
function requestIdOf(message: unknown): string | undefined {
  const m = message as { id?: unknown; method?: unknown } | null;
  return typeof m?.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number') ? JSON.stringify(m.id) : undefined;
}

/** The SDK's answer as the reply; its refusals become problem details that keep the JSON-RPC error. */
async function answer(reply: FastifyReply, response: Response): Promise<FastifyReply> {
  if (response.status < 400) return reply.send(response);
  let error: { code?: unknown; message?: unknown } | undefined;
  try {
    error = ((await response.json()) as { error?: typeof error }).error;
  } catch {
    error = undefined;
  }
  const allow = response.headers.get('allow');
  if (allow !== null) reply.header('allow', allow);
  const code = SDK_STATUS_CODES[response.status] ?? 'TR_ERR_INTERNAL';
  const message = typeof error?.message === 'string' ? error.message : response.statusText;
  throw new RegistryError(code, message, {
    extra: { jsonrpc: '2.0', error: { code: typeof error?.code === 'number' ? error.code : -32000, message }, id: null },
  });
}

export default mcpRoutes;
