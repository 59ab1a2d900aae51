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
import { ErrorCode, isInitializeRequest, LATEST_PROTOCOL_VERSION, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { JsonRpcMessageSchema, McpHeadersSchema } from '../../model/api.js';
import { RegistryError } from '../../model/errors.js';
import { viewKeyFor, type ViewKey } from '../../model/visibility.js';
import { packageVersion } from '../../package-root.js';
import { callerKey } from '../caller-key.js';
import { eventStreams, type EventStream } from '../event-stream.js';
import { endResponsesOfCancelledRequests } from '../mcp/cancellation.js';
import { answer } from '../mcp/answer.js';
import { sendListAnswer, soleListRequest, type ListRequest } from '../mcp/list-answer.js';
import { readMessages, type McpMessage } from '../mcp/messages.js';
import { DESCRIPTION, McpEventsSchema, refusals, rpcProblem } from '../mcp/openapi.js';
import { createMcpServer, INSTRUCTIONS, SERVER_NAME, SERVER_TITLE, type McpRequestContext } from '../mcp/server.js';
import { LISTEN_KEEP_ALIVE, McpListeners } from '../mcp/listen.js';
import { answerModern, answeredBySdk, isModernPost, LISTEN_METHOD, listenFilter, MODERN_REVISION, modernRequest } from '../mcp/modern.js';
import { SessionEventStore } from '../mcp/event-store.js';
import { replayAnswered } from '../mcp/resumption.js';
import { McpSessions, type McpSession } from '../mcp/sessions.js';
import { McpToolLists } from '../mcp/tool-lists.js';
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

/**
 * What a session stream's client may leave unread before list_changed cuts it off (the socket's
 * own high-water mark, where the SDK's writes start to wait).
 */
const SESSION_STREAM_BUFFER_BYTES = 16 * 1024;

/** Request headers the SDK's transport reads; nothing else (no credentials) is handed to it. */
const TRANSPORT_HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'] as const;

const mcpRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  // The session stream ends with its session (sessions.closeAll on close), not here.
  const streams = eventStreams(fastify);
  const { mcp } = config;
  const sessions = new McpSessions({ maxSessions: mcp.maxSessions, perCaller: mcp.sessionsPerCaller, idleMs: mcp.sessionIdleMs });
  app.metrics.watchMcpSessions(() => sessions.size);
  // 2026-07-28's subscriptions/listen streams: no session, one held stream each (src/http/mcp/listen.ts).
  const listenStreams = eventStreams(fastify, { heartbeat: LISTEN_KEEP_ALIVE });
  const listeners = new McpListeners();
  const unsubscribe = app.changes.subscribe((index, changes) => {
    sessions.changed(index, changes);
    listeners.changed(index, changes);
  });
  app.addHook('preClose', async () => {
    unsubscribe();
    sessions.closeAll();
    listeners.closeAll();
  });

  /** Each session's event store (Last-Event-ID replay), where replay is on. */
  const eventStores = new WeakMap<McpSession, SessionEventStore>();
  /** The HTTP request behind each message, keyed by the authInfo object handed to the SDK. */
  const contexts = new WeakMap<object, McpRequestContext>();
  // tools/list results as bytes, kept as the listing keeps its page bodies (a quarter of the views' bound).
  const toolLists = new McpToolLists({
    catalog: app.catalog,
    listing: app.listing,
    pageSize: mcp.pageSize,
    cacheBytes: Math.floor(config.viewCacheBytes / 4),
  });
  const deps = {
    toolLists,
    bridge: app.bridge,
    visibility: config.visibility,
    knownScopes: app.catalog.knownScopeNames,
    forwardAuthorization: mcp.forwardAuthorization,
    progress: mcp.progress,
    version: packageVersion(),
  };
  const modernDeps = {
    toolLists,
    publicTtlMs: config.anonymousMaxAgeS * 1000,
    name: SERVER_NAME,
    title: SERVER_TITLE,
    version: deps.version,
    instructions: INSTRUCTIONS,
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
    // Mcp-Method and Mcp-Name: every 2026-07-28 request carries them.
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'Accept',
      'Mcp-Session-Id',
      'Mcp-Protocol-Version',
      'Mcp-Method',
      'Mcp-Name',
      'Last-Event-ID',
    ],
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
    session.lastSeen = Date.now();
    return handTo(request, reply, session.transport, body);
  };

  /**
   * Hands the request to an SDK transport. With `revision` (2026-07-28, which the SDK does not
   * know), the transport is told the newest revision it does know, and the handlers the real one.
   */
  const handTo = async (
    request: FastifyRequest,
    reply: FastifyReply,
    transport: WebStandardStreamableHTTPServerTransport,
    body?: unknown,
    revision?: string,
  ): Promise<Response> => {
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    const authInfo = {
      token: '',
      clientId: request.caller.kind === 'token' ? (request.caller.sub ?? '') : '',
      scopes: new Array<string>(),
    };
    contexts.set(authInfo, {
      caller: request.caller,
      callerKey: callerKey(request),
      authorization: request.headers.authorization,
      signal: gone.signal,
      onCallFailed: (tool, code, status) => recordFailedCall(request, tool, code, status),
      revision,
    });
    const forwarded = new Headers();
    for (const name of TRANSPORT_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') forwarded.set(name, value);
    }
    if (revision !== undefined) forwarded.set('mcp-protocol-version', LATEST_PROTOCOL_VERSION);
    const webRequest = new Request(new URL('/mcp', config.publicUrl), { method: request.method, headers: forwarded });
    return transport.handleRequest(webRequest, body === undefined ? { authInfo } : { authInfo, parsedBody: body });
  };

  /**
   * A 2026-07-28 POST (src/http/mcp/modern.ts): no session; `server/discover` and `tools/list`
   * answered here, `tools/call` by an SDK server and stateless transport made for
   * this one request and closed with it.
   */
  const modernPost = async (request: FastifyRequest, reply: FastifyReply, key: ViewKey, messages: readonly McpMessage[]) => {
    const rpc = modernRequest(request.headers, request.body);
    if (rpc === undefined) return reply.code(202).send();
    if (rpc.method === LISTEN_METHOD) return listen(request, reply, key, rpc);
    if (!answeredBySdk(rpc)) return answerModern(reply, modernDeps, rpc, { key, anonymous: request.caller.kind === 'anonymous' });
    if (mcp.scopeChallenge) refuseCallOutsideScopes(request, messages);
    const server = createMcpServer(deps, contextOf);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    await server.connect(transport);
    reply.raw.once('close', () => server.close().catch(() => undefined));
    return answer(reply, await handTo(request, reply, transport, request.body, MODERN_REVISION));
  };

  /**
   * A 2026-07-28 `subscriptions/listen` (src/http/mcp/listen.ts): a held stream as the GET stream
   * is (a slot of MAX_WAITERS and of the caller's MAX_WAITERS_PER_CALLER, no idle timeout, an end
   * when its token expires, a cut-off when its client stops reading), told of changes to `key`,
   * the view tools/list gives the same caller.
   */
  const listen = (request: FastifyRequest, reply: FastifyReply, key: ViewKey, rpc: JSONRPCRequest) => {
    const filter = listenFilter(reply, rpc, request.headers.accept);
    if (filter === undefined) return reply;
    let stream: EventStream;
    try {
      stream = listenStreams.open(request, reply, {
        maxBufferedBytes: SESSION_STREAM_BUFFER_BYTES,
        hold: {
          slots: app.waiters,
          holder: callerKey(request),
          expiresAt: tokenExpiresAt(request, config.jwt.clockToleranceS),
          // Without the graceful result: the client listens again, with a fresh token.
          onExpired: (expired) => expired.end(),
        },
      });
    } catch (err) {
      // A 2026-07-28 client reads the JSON-RPC error of a refusal (the 503 of a full budget).
      if (!(err instanceof RegistryError)) throw err;
      throw new RegistryError(err.code, err.message, {
        ...(err.retryAfterS !== undefined && { retryAfterS: err.retryAfterS }),
        extra: { jsonrpc: '2.0', error: { code: ErrorCode.InternalError, message: err.message }, id: rpc.id },
        rpcAnswer: true,
      });
    }
    // Hijacked: the CORS headers @fastify/cors set on the reply go out with the head.
    stream.start(corsHeaders(reply));
    listeners.listen(stream, rpc.id, key, filter);
    return reply;
  };

  /** A new session: its own SDK server and transport, held once `initialize` succeeds. */
  const openSession = async (request: FastifyRequest, key: ReturnType<typeof enter>): Promise<McpSession> => {
    const owner = callerKey(request);
    sessions.makeRoom(owner, Date.now());
    const server = createMcpServer(deps, contextOf);
    const events = mcp.replay.maxEvents > 0 ? new SessionEventStore(mcp.replay) : undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        session.id = id;
        sessions.add(session);
      },
      onsessionclosed: () => sessions.close(session),
      // Event ids and Last-Event-ID replay (issue 31), from this session's own bounded store.
      eventStore: events,
    });
    const session: McpSession = { id: '', owner, server, transport, view: key, lastSeen: Date.now(), stream: null, inflight: new Set() };
    if (events) eventStores.set(session, events);
    await server.connect(transport);
    endResponsesOfCancelledRequests(transport);
    return session;
  };

  const schema = <R extends Record<number, unknown>>(
    operationId: string,
    summary: string,
    response: R,
    extra: Record<string, unknown> = {},
  ) => ({
    tags: ['mcp'],
    operationId,
    summary,
    description: DESCRIPTION,
    security: config.mcp.allowAnonymous ? ANYONE : BEARER,
    headers: McpHeadersSchema,
    ...extra,
    // An operation's own answer for a status (POST's 404) over the shared one.
    response: { ...refusals, ...response },
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
              'The answer to the request: one JSON-RPC response (`application/json`), or a stream ending with it (`text/event-stream`, with progress notifications before it). At revision 2026-07-28, `subscriptions/listen` answers a stream that stays open, of its notifications.',
            content: { 'application/json': { schema: JsonRpcMessageSchema }, 'text/event-stream': { schema: McpEventsSchema } },
          },
          202: empty('The message was a notification or a response: nothing to answer.'),
          400: rpcProblem(
            "`TR_ERR_BAD_REQUEST`: a message that is no JSON-RPC message of MCP's (the JSON-RPC `error` names the field: `-32602` in params, `-32600` elsewhere), a request other than `initialize` without `Mcp-Session-Id`, an unsupported `MCP-Protocol-Version` (with the SDK's JSON-RPC `error`), or a batch that is empty, is sent under `MCP-Protocol-Version` 2025-06-18 or later (which have none), or has two requests of one id (`-32600`; nothing in it runs). At revision 2026-07-28 (in `application/json`, the JSON-RPC `error` beside the problem members): a `_meta` without the revision or the client capabilities (`-32602`), `MCP-Protocol-Version`, `Mcp-Method` or (`tools/call`) `Mcp-Name` missing or not matching the body (`-32020`), or an unknown revision in `_meta` (`-32022`).",
          ),
          409: problem('A request with the id of one still being answered on this session (`TR_ERR_CONFLICT`).'),
          404: rpcProblem(
            'No session with that `Mcp-Session-Id` held by this caller (`TR_ERR_NOT_FOUND`): it ended, or never was. Start a new one with `initialize`. At revision 2026-07-28 (in `application/json`), a method not offered, `ping` among them (`TR_ERR_NOT_FOUND` with the JSON-RPC error `-32601`).',
          ),
          406: rpcProblem(
            '`Accept` must list both `application/json` and `text/event-stream`, and a 2026-07-28 `subscriptions/listen` at least `text/event-stream` (`TR_ERR_NOT_ACCEPTABLE`).',
          ),
          413: problems.PayloadTooLarge,
          415: problems.UnsupportedMediaType,
          503: rpcProblem(
            '`MCP_MAX_SESSIONS` sessions are held already, or, for a 2026-07-28 `subscriptions/listen`, `MAX_WAITERS` streams and blocking queries or `MAX_WAITERS_PER_CALLER` of this caller (`TR_ERR_UNAVAILABLE`, with the JSON-RPC error `-32603`); `Retry-After` says when to retry.',
            { headers: { 'Retry-After': headers['Retry-After'] } },
          ),
        },
        { body: documentedOnly(z.union([JsonRpcMessageSchema, z.array(JsonRpcMessageSchema)])) },
      ),
    },
    async (request, reply) => {
      const key = enter(request);
      const body = request.body;
      const messages = readMessages(request.headers['mcp-protocol-version'], body);
      if (isModernPost(request.headers, body)) return modernPost(request, reply, key, messages);
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
        if (mcp.scopeChallenge) refuseCallOutsideScopes(request, messages);
        holdRequestIds(session, messages, reply);
      }
      session.view = key;
      const list = opened ? undefined : soleListRequest(request.headers, body);
      if (list !== undefined) {
        const result = listResult(key, list);
        if (result !== undefined) {
          session.lastSeen = Date.now();
          return sendListAnswer(reply, session.id, eventStores.get(session), list, result);
        }
      }
      const response = await handOver(request, reply, session, body);
      // An initialize the SDK refused leaves no session behind.
      if (opened && session.id === '') session.server.close().catch(() => undefined);
      return answer(reply, response);
    },
  );

  /** A tools/list page's result bytes; undefined for a cursor the listing refuses, which the SDK answers. */
  const listResult = (key: ViewKey, list: ListRequest): Buffer | undefined => {
    try {
      return toolLists.resultBytes(key, list.cursor);
    } catch (err) {
      if (err instanceof RegistryError) return undefined;
      throw err;
    }
  };

  /**
   * The SDK answers by request id: a second request reusing the id of one still being answered
   * would never get its answer, and would hold its connection until the client gave up.
   */
  const holdRequestIds = (session: McpSession, messages: readonly McpMessage[], reply: FastifyReply) => {
    const ids = messages.flatMap((message) => message.requestId ?? []);
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
   * Under MCP_SCOPE_CHALLENGE, a call the token may know of but holds none of the scopes of is
   * the MCP authorization rules' insufficient-scope case: HTTP 403 with the challenge, before the
   * SDK answers 200, for clients that step up on it. Otherwise, and for every other refusal, the
   * handler answers in the session (src/http/mcp/refusals.ts says why).
   */
  const refuseCallOutsideScopes = (request: FastifyRequest, messages: readonly McpMessage[]) => {
    // Each call of a batch (protocol revisions before 2025-06-18), as a single one.
    for (const { calledTool: tool } of messages) {
      if (tool === undefined) continue;
      try {
        app.bridge.admit(tool, request.caller);
      } catch (err) {
        if (err instanceof RegistryError && err.code === 'TR_ERR_INSUFFICIENT_SCOPE') {
          recordFailedCall(request, tool, err.code, err.status);
          throw err;
        }
      }
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
        405: problem(
          '`Last-Event-ID` names an event of a `POST` stream that has answered its request, and nothing after it is left to send (`TR_ERR_METHOD_NOT_ALLOWED`).',
        ),
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
      const lastEventId = request.headers['last-event-id'];
      const answered = typeof lastEventId === 'string' ? eventStores.get(session)?.answeredAfter(lastEventId) : undefined;
      if (answered !== undefined && typeof lastEventId === 'string') return replayAnswered(reply, session.id, lastEventId, answered);
      const stream = streams.open(request, reply, {
        maxBufferedBytes: SESSION_STREAM_BUFFER_BYTES,
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
      stream.held();
      if (!stream.ended) session.stream = stream;
      stream.onEnd(() => {
        if (session.stream === stream) session.stream = null;
        session.lastSeen = Date.now();
      });
      return answer(reply, openedAtOnce(response));
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
      return reply.code(204).send();
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
      return response.status === 200 ? reply.code(204).send() : answer(reply, response);
    },
  );
};

/** The CORS headers set on a reply, for a stream that writes its own head. */
function corsHeaders(reply: FastifyReply): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined && (name.startsWith('access-control-') || name === 'vary')) set[name] = String(value);
  }
  return set;
}

/** An SSE comment, sent first on the GET stream. */
const OPENING = new TextEncoder().encode(': stream open\n\n');

/**
 * The GET stream with a comment first: its head goes out at once. The SDK's GET stream writes
 * nothing until its first event (it primes POST streams only), and Node sends a response's head
 * with its first bytes, so a client's `fetch` waited for the first notification or the 15 s
 * keep-alive to learn the stream was open (issue 31's reconnect test measured 15 s).
 */
function openedAtOnce(response: Response): Response {
  if (response.body === null) return response;
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      start(controller) {
        controller.enqueue(OPENING);
      },
    }),
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

export default mcpRoutes;
