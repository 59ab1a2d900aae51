import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AgUiEventSchema, InvokeQuerySchema } from '../../model/ag-ui.js';
import { InvokeArgumentsSchema, InvokeChunkSchema, InvokeResultSchema, ProblemSchema, ToolNameParamsSchema } from '../../model/api.js';
import { invokeAsAgUi } from '../ag-ui/invoke.js';
import { AgUiEventsSchema } from '../ag-ui/run.js';
import { callerKey } from '../caller-key.js';
import { eventStreams } from '../event-stream.js';
import { recordFailedCall } from '../plugins/audit.js';
import { BEARER, headers, problem, problems } from '../openapi/responses.js';
import { problemBody, problemOf } from '../plugins/errors.js';
import { sseEvent as sse } from '../sse.js';
import { documentedOnly } from '../validation.js';
import { deprecationHeaders } from '../../model/deprecation.js';

const CallEventsSchema = z
  .string()
  .regex(/^(?:event: (?:chunk|result|error)\ndata: [^\n]*\n\n)+$/)
  .describe(
    'Server-sent events: zero or more `chunk` events (`InvokeChunk`), then one `result` event (`InvokeResult`) or one `error` event (`Problem`).',
  );

const DESCRIPTION = `The body is the arguments object, as an agent would POST it to an HTTP tool's endpoint
(an absent body means \`{}\`). The registry checks the caller again at call time,
independent of what discovery showed: a bearer token is required even for tools that
need no scope (anonymous callers get \`401\`), and the token must hold at least one of
the tool's own \`scopes\` when it has any (\`403\` otherwise). What a caller may not list, it
cannot learn exists: a tool it could discover neither with its token nor anonymously (nor as
an operator) is answered exactly like a name never registered, \`404\` for a token and a bare
\`401\` for a caller without one, with no scopes named; \`410\` tells a token that a tool it
could have known of was deleted. Callers without a token get \`401\` for every name, also
unknown or deleted ones, so names are not probed; the challenge names the tool's scopes only
where the tool is in the anonymous view. The arguments are looked at only after these checks:
they must fit the tool's \`inputSchema\` as discovery serves it (a closed schema for tools
described by \`parameters\` or \`arguments\`: a key it does not list is refused), else \`400\`
\`TR_ERR_INVALID_ARGUMENTS\` lists each failing field by its JSON pointer and nothing reaches
the tool; such a refusal is not counted as a call. Before that check, a \`null\` for a key no
object schema requires, whose own schema cannot accept \`null\`, is dropped: what a client of
\`GET /?format=openai-strict\` sends for an argument it leaves out (a \`null\` the schema
accepts is an argument, and is passed on).
Each caller (token issuer and subject, or client address) may have at most
\`MAX_INFLIGHT_CALLS_PER_CALLER\` calls in flight, and the registry \`MAX_INFLIGHT_CALLS\`.

An HTTP tool gets the arguments POSTed as JSON to \`http://{host}:{port}{endpoint}\`, or,
when it has a \`target\` (\`HttpTarget\`), its method on its base URL and path with each
argument where the target places it (path, query, header, cookie or JSON body; TLS verified,
redirects not followed, a 3xx answer a failed call); an answer of bytes (an image, a PDF)
comes back base64 with its media type in \`content\`, \`result\` naming it. Either form goes
with the caller's \`Authorization\` header only when the tool sets
\`forwardAuthorization: true\` (default \`false\`; a token carrying the admin scope is never forwarded); a
message-bus tool's call is carried over its tool service's queues (this needs
\`PULSAR_WS_URL\`; without it such calls answer \`503\`); an mcp tool's call is a
\`tools/call\` to its upstream MCP server, with the server's own credential (never the
caller's token). The call waits at most the tool's
\`timeoutMs\` (default \`TOOL_CALL_TIMEOUT_MS\`); a caller that hangs up cancels it.

**Answers.** By default the answer is one JSON object (\`InvokeResult\`) once the call
is complete. When \`Accept\` includes \`text/event-stream\`, the answer is a server-sent
event stream instead: one \`chunk\` event per piece of the observation as it arrives
(\`data\` is an \`InvokeChunk\`; an HTTP tool sends one chunk, its whole answer), then
either a \`result\` event (\`data\` is the same \`InvokeResult\` as the JSON answer) or an
\`error\` event (\`data\` is a \`Problem\`, with \`serviceError\` for \`TR_ERR_TOOL_SERVICE\`)
when the call fails after the stream started. Each event is one \`event:\` line and one
\`data:\` line of JSON. The stream starts with the first chunk, so a call refused or
failed before any chunk arrived gets the status and problem body listed here, as
without the header.

**AG-UI.** With \`?stream=ag-ui\` the answer is the call as an AG-UI run instead
(\`text/event-stream\`, whatever \`Accept\` says), the events \`POST /ag-ui\` sends for one
call: \`RUN_STARTED\`, \`TOOL_CALL_START\` (ids of the registry's making), the arguments in
\`TOOL_CALL_ARGS\`, \`TOOL_CALL_END\`, the output as a \`tool-output\` activity
(\`ACTIVITY_SNAPSHOT\`, then \`ACTIVITY_DELTA\` per further piece), \`TOOL_CALL_RESULT\` with the
whole observation, \`RUN_FINISHED\`. It starts as the plain stream does, with the first piece
of output; a failure after that is a \`TOOL_CALL_RESULT\` whose \`content\` starts with
\`Error: \` (the problem under \`metadata["tool-registry"].error\`).

Calls and their outcomes count in the \`GET /stats\` usage figures; failed and refused
calls are written to the audit log (action \`tool.invoke\`). A call that carries
\`X-Registry-Console\` (the operator's console sends it) is audited whatever its outcome, as
action \`console.invoke\`.`;

const challenge = { 'WWW-Authenticate': headers['WWW-Authenticate'] };

/**
 * `POST /tools/{name}/invoke`: the body is the arguments object, as the article's agents POST
 * to a tool's endpoint. JSON answers with the whole observation; with
 * `Accept: text/event-stream` each chunk is an event as it arrives, then a `result` event, or
 * an `error` event if the call fails after it started.
 */
const invokeRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  // Not held: a call's stream ends with the call, bounded by its timeout and the bridge's limits.
  const streams = eventStreams(fastify);
  const base = fastify.catalog.publicUrl.href.replace(/\/+$/, '');
  const toolUrl = (name: string) => `${base}/tools/${encodeURIComponent(name)}`;
  app.post(
    '/tools/:name/invoke',
    {
      config: { audit: 'tool.invoke', auditConsole: 'console.invoke' },
      schema: {
        tags: ['calls'],
        operationId: 'invokeTool',
        summary: 'Call a tool through the registry',
        description: DESCRIPTION,
        security: BEARER,
        params: ToolNameParamsSchema,
        querystring: InvokeQuerySchema,
        headers: documentedOnly(
          z.object({
            'X-Registry-Console': z
              .string()
              .optional()
              .describe(
                "Sent by the operator's console (`/dashboard/tools`): the call is written to the audit log as `console.invoke`, answered or refused. A label, not a credential.",
              ),
          }),
        ),
        // The bridge looks at the arguments after the caller's scopes: 401/403/404/410 come first.
        body: documentedOnly(InvokeArgumentsSchema.optional()),
        response: {
          200: {
            description:
              "The call completed (`application/json`), or the call started and its events follow (`text/event-stream`, when `Accept` asked for it, or AG-UI events with `?stream=ag-ui`). A deprecated tool's JSON answer carries `Deprecation`, and `Sunset` and `Link` where set (issue 34).",
            headers: { Deprecation: headers.Deprecation, Sunset: headers.Sunset, Link: headers.DeprecationLink },
            content: {
              'application/json': {
                schema: InvokeResultSchema,
                example: { tool: 'calculator', id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70', result: '4', durationMs: 3.27 },
              },
              'text/event-stream': {
                schema: z.union([CallEventsSchema, AgUiEventsSchema]),
                events: { chunk: InvokeChunkSchema, result: InvokeResultSchema, error: ProblemSchema, message: AgUiEventSchema },
                example:
                  'event: chunk\ndata: {"text":"4"}\n\nevent: result\ndata: {"tool":"calculator","id":"0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70","result":"4","durationMs":3.27}\n\n',
              },
            },
          },
          400: problem(
            "The arguments are not a JSON object or do not fit the tool's `inputSchema` (`TR_ERR_INVALID_ARGUMENTS`, one entry in `errors` per failing field, its `path` a JSON pointer into the arguments such as `/items/0/name`; at most 20), the body is not valid JSON (`TR_ERR_INVALID_JSON`), or the `Authorization` header is malformed (`TR_ERR_INVALID_REQUEST`, with a `WWW-Authenticate` challenge).",
            {
              headers: { 'WWW-Authenticate': headers.MalformedAuthorizationChallenge },
              example: {
                type: 'urn:tool-registry:error:invalid-arguments',
                title: "The arguments do not fit the tool's input schema",
                status: 400,
                detail: 'the arguments do not fit the input schema of calculator: /expression: must be string',
                code: 'TR_ERR_INVALID_ARGUMENTS',
                errors: [{ path: '/expression', message: 'must be string' }],
              },
            },
          ),
          401: problem(
            'No bearer token (`TR_ERR_UNAUTHENTICATED`; calling a tool always needs one, and the challenge names the tool\'s scopes when it has any and anonymous callers may list it), or the token is not valid (`TR_ERR_INVALID_TOKEN`, `error="invalid_token"`). Callers without a token get this answer for every name, also for names never registered or deleted, so they learn nothing about which tools exist.',
            {
              headers: challenge,
              example: {
                type: 'urn:tool-registry:error:unauthenticated',
                title: 'A bearer token is required',
                status: 401,
                detail: 'calling calculator needs a bearer token with scope calculator:use',
                code: 'TR_ERR_UNAUTHENTICATED',
              },
            },
          ),
          403: problem(
            'The token holds none of the tool\'s scopes (`TR_ERR_INSUFFICIENT_SCOPE`, `error="insufficient_scope"`; the challenge\'s `scope` lists those that would do).',
            {
              headers: challenge,
              example: {
                type: 'urn:tool-registry:error:insufficient-scope',
                title: 'The token lacks a required scope',
                status: 403,
                detail: 'calling calculator needs scope calculator:use',
                code: 'TR_ERR_INSUFFICIENT_SCOPE',
              },
            },
          ),
          404: problem(
            'No tool of that name was ever registered, or none the caller may know of (`TR_ERR_NOT_FOUND`; callers with a token only).',
            {
              example: {
                type: 'urn:tool-registry:error:not-found',
                title: 'Not found',
                status: 404,
                detail: 'no tool "calculator"',
                code: 'TR_ERR_NOT_FOUND',
              },
            },
          ),
          410: problem(
            'The tool was deleted, or passed its sunset (issue 34), and can no longer be called (`TR_ERR_GONE`; callers with a token that could have known of the tool only).',
            {
              example: {
                type: 'urn:tool-registry:error:gone',
                title: 'The tool was deleted',
                status: 410,
                detail: 'tool "calculator" was deleted and can no longer be called',
                code: 'TR_ERR_GONE',
              },
            },
          ),
          413: problem(
            'The body is larger than `BODY_LIMIT` (`TR_ERR_BODY_TOO_LARGE`), or the call is larger than the message bus takes in one message (`TR_ERR_REQUEST_TOO_LARGE`).',
          ),
          415: problems.UnsupportedMediaType,
          429: problems.TooManyRequests,
          502: problem(
            "The tool answered with an error, or could not be reached (`TR_ERR_TOOL_SERVICE`). `serviceError` carries the tool's own error type and message: the service's error for message-bus tools; `http-{status}` for an HTTP tool that answered with an error status or a redirect, `tool-unreachable`, `invalid-response` or `response-too-large`; `mcp-tool-error` (the answer had `isError`, its text is the message) or `mcp-error` for an mcp tool. Or the tool's address is one the outbound address policy refuses (`TR_ERR_TARGET_REFUSED`: its host, or the address its name resolved to now, is link-local, cloud metadata, the registry itself, or refused by `OUTBOUND_DENY`); nothing was sent to it.",
            {
              example: {
                type: 'urn:tool-registry:error:tool-service',
                title: 'The tool service answered with an error',
                status: 502,
                detail: 'calculator failed: division by zero',
                code: 'TR_ERR_TOOL_SERVICE',
                serviceError: { type: 'http-500', message: 'division by zero' },
              },
            },
          ),
          503: problem(
            "The tool cannot be reached now (`TR_ERR_BUS_UNAVAILABLE`: no message bus is configured, the broker is down or did not take the request, or the tool's service is not registered; `TR_ERR_UPSTREAM_UNAVAILABLE`: the mcp tool's MCP server is down), or the registry already carries `MAX_INFLIGHT_CALLS` calls, or this caller `MAX_INFLIGHT_CALLS_PER_CALLER` (`TR_ERR_TOO_MANY_CALLS`). `Retry-After` says when to retry.",
            {
              headers: { 'Retry-After': headers['Retry-After'] },
              example: {
                type: 'urn:tool-registry:error:bus-unavailable',
                title: 'The tool cannot be reached now',
                status: 503,
                detail: 'tell-joke cannot be reached now: no message bus is configured (set PULSAR_WS_URL)',
                code: 'TR_ERR_BUS_UNAVAILABLE',
              },
            },
          ),
          504: problem('The tool did not answer within its timeout (`TR_ERR_TIMEOUT`).', {
            example: {
              type: 'urn:tool-registry:error:timeout',
              title: 'The tool did not answer in time',
              status: 504,
              detail: 'calculator: no answer within 30000 ms',
              code: 'TR_ERR_TIMEOUT',
            },
          }),
        },
      },
    },
    async (request, reply) => {
      // A caller that hangs up cancels its call: the bridge aborts it and frees its slot.
      const stream = streams.open(request, reply);
      const invoke = {
        toolName: request.params.name,
        arguments: request.body,
        caller: request.caller,
        authorization: request.headers.authorization,
        callerKey: callerKey(request),
        signal: stream.signal,
      };
      if (request.query.stream === 'ag-ui') {
        // Failures once the stream has started answer 200: the audit hook would not see them.
        await invokeAsAgUi(app.bridge, request, stream, invoke, (tool, code, status) => recordFailedCall(request, tool, code, status));
        return reply;
      }
      if (!(request.headers.accept ?? '').includes('text/event-stream')) {
        const result = await app.bridge.invoke(invoke);
        // Issue 34: a deprecated tool's answer says so (the call passed its checks, so the caller may know of it).
        const deprecation = app.catalog.getTool(invoke.toolName)?.record.deprecation;
        if (deprecation !== undefined) reply.headers(deprecationHeaders(deprecation, toolUrl));
        return result;
      }

      // Streaming: chunks are written as they come; the response starts with the first chunk or
      // the end, so that refusals before the call (401, 403, 404) keep their status codes.
      try {
        const result = await app.bridge.invoke({
          ...invoke,
          onChunk: (text) => {
            stream.start();
            stream.write(sse('chunk', { text }));
          },
        });
        stream.start();
        stream.end(sse('result', result));
      } catch (err) {
        if (!stream.started) throw err;
        // Once streaming, the failure is an event in the one problem shape.
        const { code, detail, error } = problemOf(err);
        if (!error) request.log.error({ err }, 'streamed call failed');
        stream.end(sse('error', problemBody(code, detail, error)));
      }
      return reply;
    },
  );
};

export default invokeRoutes;
