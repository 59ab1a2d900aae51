/**
 * `POST /ag-ui`: the registry as an AG-UI agent that executes tool calls (issue 12). It takes a
 * `RunAgentInput` and runs the tool calls of the last assistant message through the bridge, in
 * order, answering the run's events as they happen (src/http/ag-ui/run.ts says which).
 */
import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../../config.js';
import { AgUiEventSchema, AgUiRunInputSchema, MAX_AG_UI_TOOL_CALLS, pendingToolCalls, streamsToolCallArgs } from '../../model/ag-ui.js';
import { RegistryError } from '../../model/errors.js';
import { agUiEncoder, AgUiEventsSchema, AgUiRun, runToolCall } from '../ag-ui/run.js';
import { callerKey } from '../caller-key.js';
import { eventStreams } from '../event-stream.js';
import { recordFailedCall } from '../plugins/audit.js';
import { BEARER, headers, problem } from '../openapi/responses.js';

const DESCRIPTION = `Runs tool calls for an AG-UI client or agent: the body is an AG-UI \`RunAgentInput\`, and the
registry acts as the agent that executes the tool calls of the conversation's last assistant
message (those no later \`tool\` message answers), one after the other, in order, at most
${MAX_AG_UI_TOOL_CALLS} per run. The answer is a \`text/event-stream\` of AG-UI events (protocol 1.0,
as the official SDK's \`EventEncoder\` writes them): \`RUN_STARTED\`; for each call
\`TOOL_CALL_START\` (its \`id\` as \`toolCallId\`, \`parentMessageId\`: the assistant message),
its arguments text in \`TOOL_CALL_ARGS\` fragments, \`TOOL_CALL_END\`, the output as it streams (an activity
message of type \`tool-output\`: \`ACTIVITY_SNAPSHOT\` with the first piece, one
\`ACTIVITY_DELTA\` appending each further piece to \`chunks\`; an HTTP tool gives one piece, its
whole answer), then \`TOOL_CALL_RESULT\` with the whole observation as \`content\`; then
\`RUN_FINISHED\`. A client that applies the events to the conversation it sent (as
\`@ag-ui/client\`'s \`HttpAgent\` does) already holds the arguments, and AG-UI clients append what
\`TOOL_CALL_ARGS\` carry: it sends \`forwardedProps: {"tool-registry": {"toolCallArgs": "omit"}}\`
and gets none.

Each call goes through the same bridge as \`POST /tools/{name}/invoke\` (HTTP tools get the
caller's \`Authorization\` header on the same terms): the token's scopes are
checked at call time, whatever the client listed in \`tools\` (a capability list, not an
allowlist); calls count in \`GET /stats\`, failed ones are written to the audit log (action
\`tool.invoke\`), and each caller's \`MAX_INFLIGHT_CALLS_PER_CALLER\` applies. A call that fails
(a scope it lacks, an unknown tool, arguments that are not a JSON object, the tool's error, a
timeout) is answered by a \`TOOL_CALL_RESULT\` whose \`content\` is \`Error: \` and what went wrong,
with the problem that invoke would have answered under \`metadata["tool-registry"].error\`; the
run goes on with the next call. Only a fault of the registry itself ends the run with
\`RUN_ERROR\`. A caller that hangs up cancels the call in flight and the rest of the run.

A bearer token is required (\`401\` before the body is read); a body that is not a valid run
input, or has more than ${MAX_AG_UI_TOOL_CALLS} calls to run, is \`400\`. These come as problem details,
before the stream starts.`;

const agUiRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  // Not held: a run ends with its last call, at most MAX_AG_UI_TOOL_CALLS calls of bounded time.
  const streams = eventStreams(fastify);

  app.post(
    '/ag-ui',
    {
      config: { invalidRequest: 'invalid AG-UI run input' },
      // After the token check (src/http/plugins/auth.ts), before the body is read.
      preParsing: (request, _reply, payload, done) => {
        if (request.caller.kind !== 'anonymous') return done(null, payload);
        done(new RegistryError('TR_ERR_UNAUTHENTICATED', 'running tool calls needs a bearer token', { challenge: {} }));
      },
      schema: {
        tags: ['calls'],
        operationId: 'runAgUi',
        summary: 'Run the tool calls of an AG-UI conversation',
        description: DESCRIPTION,
        security: BEARER,
        body: AgUiRunInputSchema,
        response: {
          200: {
            description: "The run's AG-UI events, as they happen.",
            content: {
              'text/event-stream': {
                schema: AgUiEventsSchema,
                events: { message: AgUiEventSchema },
                example: [
                  '{"type":"RUN_STARTED","threadId":"thread-1","runId":"run-1","protocolVersion":"1.0"}',
                  '{"type":"TOOL_CALL_START","toolCallId":"call-1","toolCallName":"calculator","parentMessageId":"msg-2"}',
                  '{"type":"TOOL_CALL_END","toolCallId":"call-1"}',
                  '{"type":"ACTIVITY_SNAPSHOT","messageId":"6f1c0b52-4a4e-4f0a-9f1e-2d3c4b5a6f70","activityType":"tool-output","content":{"toolCallId":"call-1","chunks":["4"]}}',
                  '{"type":"TOOL_CALL_RESULT","messageId":"0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70","toolCallId":"call-1","role":"tool","content":"4","metadata":{"tool-registry":{"id":"1c52b6f0-4a4e-4f0a-9f1e-2d3c4b5a6f70","durationMs":3.27}}}',
                  '{"type":"RUN_FINISHED","threadId":"thread-1","runId":"run-1"}',
                ]
                  .map((data) => `data: ${data}\n\n`)
                  .join(''),
              },
            },
          },
          400: problem(
            `The body is not a valid run input (\`TR_ERR_BAD_REQUEST\`, one entry in \`errors\` per problem), for instance more than ${MAX_AG_UI_TOOL_CALLS} tool calls to run; or it is not valid JSON (\`TR_ERR_INVALID_JSON\`), or the \`Authorization\` header is malformed (\`TR_ERR_INVALID_REQUEST\`).`,
            { headers: { 'WWW-Authenticate': headers.MalformedAuthorizationChallenge } },
          ),
          401: problem('No bearer token (`TR_ERR_UNAUTHENTICATED`), or one that is not valid (`TR_ERR_INVALID_TOKEN`).', {
            headers: { 'WWW-Authenticate': headers['WWW-Authenticate'] },
          }),
        },
      },
    },
    async (request, reply) => {
      const input = request.body;
      const { parentMessageId, calls } = pendingToolCalls(input.messages);
      const encoder = await agUiEncoder();
      // A caller that hangs up cancels the call in flight, and the run makes no more.
      const stream = streams.open(request, reply);
      stream.start();
      const run = new AgUiRun(input.threadId, input.runId, encoder, (text) => stream.write(text));
      const context = {
        bridge: app.bridge,
        caller: request.caller,
        callerKey: callerKey(request),
        authorization: request.headers.authorization,
        signal: stream.signal,
        jsonMaxDepth: config.jsonMaxDepth,
        onCallFailed: (tool: string, code: string, status: number) => recordFailedCall(request, tool, code, status),
        log: request.log,
      };
      const withArgs = streamsToolCallArgs(input.forwardedProps);
      run.started(input.parentRunId);
      for (const call of calls) {
        if (stream.signal.aborted) break;
        // ARGS unless the client asked not to (it applies events to the conversation it sent; src/http/ag-ui/run.ts).
        const opened = run.call(call.id, call.function.name, withArgs ? call.function.arguments : undefined, parentMessageId);
        if (!(await runToolCall(context, opened, call.function.arguments))) break;
      }
      if (!stream.signal.aborted) run.finished();
      stream.end();
      return reply;
    },
  );
};

export default agUiRoutes;
