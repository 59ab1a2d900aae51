/**
 * AG-UI (issue 12): the run input `POST /ag-ui` takes, and the events the registry sends back,
 * on that route and on `POST /tools/{name}/invoke?stream=ag-ui`. The shapes follow the
 * protocol's `RunAgentInput` and events (@ag-ui/core, protocol 1.0); the registry acts as an
 * agent that executes the tool calls of the conversation's last assistant message.
 * test/http/ag-ui.test.ts checks both against the official SDK's schemas and event verifier.
 */
import { z } from 'zod';
import { ProblemSchema } from './api.js';

/** Tool calls one run makes at most; a run input with more pending is refused with 400. */
export const MAX_AG_UI_TOOL_CALLS = 32;

/**
 * The most messages a run input holds, and the most items of each list in it. Far above any
 * conversation, and low enough that zod refuses a longer list before it checks its items: a list
 * of 340,000 bad items (1 MiB) raised one issue each, which overflowed the stack (issue 28).
 */
const MAX_AG_UI_MESSAGES = 10_000;
const MAX_AG_UI_LIST = 1_000;

/** The `activityType` of the activity message that shows a call's output as it streams. */
export const TOOL_OUTPUT_ACTIVITY = 'tool-output';

/** The namespace of the registry's own entries in an event's `metadata`. */
export const AG_UI_METADATA_KEY = 'tool-registry';

const IdSchema = z.string().min(1).max(256);

/** `POST /tools/{name}/invoke`'s query: which stream the answer is. */
export const InvokeQuerySchema = z.object({
  stream: z
    .literal('ag-ui')
    .optional()
    .describe(
      '`ag-ui`: answer the call as a stream of AG-UI events (`text/event-stream`, whatever `Accept` says) rather than JSON or `chunk`/`result` events.',
    ),
});

export const AgUiToolCallSchema = z
  .looseObject({
    /** Identifies the call; the tool message answering it carries it as `toolCallId`. */
    id: IdSchema.describe('Identifies the call; the `TOOL_CALL_RESULT` answering it carries it as `toolCallId`.'),
    type: z.literal('function'),
    function: z.looseObject({
      /** The registry tool to call. */
      name: z.string().max(256).describe('The registry tool to call.'),
      /** The arguments as JSON text, an object; empty text means `{}`. */
      arguments: z.string().describe('The arguments as JSON text: an object (empty text means `{}`).'),
    }),
  })
  .meta({ id: 'AgUiToolCall', description: 'A tool call an assistant message made.' });
export type AgUiToolCall = z.infer<typeof AgUiToolCallSchema>;

const AgUiMessageSchema = z
  .looseObject({
    id: IdSchema,
    role: z.enum(['developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning']),
    /** Assistant messages: the calls the turn made. */
    toolCalls: z.array(AgUiToolCallSchema).max(MAX_AG_UI_LIST).optional().describe('Assistant messages: the tool calls the turn made.'),
    /** Tool messages: the call they answer. */
    toolCallId: z.string().optional().describe('Tool messages: the call they answer.'),
  })
  .meta({ id: 'AgUiMessage', description: 'A message of the conversation; only `id`, `role`, `toolCalls` and `toolCallId` are read.' });
type AgUiMessage = z.infer<typeof AgUiMessageSchema>;

/** The calls a run makes: those of the last assistant message that no later tool message answers. */
export interface PendingToolCalls {
  /** The assistant message holding the calls (`parentMessageId` of each `TOOL_CALL_START`). */
  parentMessageId: string | undefined;
  /** Its index in `messages`. */
  index: number;
  calls: AgUiToolCall[];
}

export function pendingToolCalls(messages: readonly AgUiMessage[]): PendingToolCalls {
  const index = messages.findLastIndex((m) => m.role === 'assistant');
  const assistant = messages[index];
  if (!assistant) return { parentMessageId: undefined, index, calls: [] };
  const answered = new Set(
    messages.slice(index + 1).flatMap((m) => (m.role === 'tool' && m.toolCallId !== undefined ? [m.toolCallId] : [])),
  );
  return { parentMessageId: assistant.id, index, calls: (assistant.toolCalls ?? []).filter((call) => !answered.has(call.id)) };
}

/** The registry's own options of a run, under `forwardedProps["tool-registry"]`. */
const AgUiRegistryOptionsSchema = z.strictObject({
  toolCallArgs: z.enum(['stream', 'omit']).optional(),
});

/** `forwardedProps["tool-registry"]`, when forwardedProps is an object that has it. */
function registryOptionsOf(forwardedProps: unknown): unknown {
  if (typeof forwardedProps !== 'object' || forwardedProps === null || Array.isArray(forwardedProps)) return undefined;
  return Object.hasOwn(forwardedProps, AG_UI_METADATA_KEY) ? (forwardedProps as Record<string, unknown>)[AG_UI_METADATA_KEY] : undefined;
}

/**
 * Whether a run sends the arguments of the calls it runs as TOOL_CALL_ARGS: yes unless the
 * client asked not to (src/http/ag-ui/run.ts says when a client should).
 */
export function streamsToolCallArgs(forwardedProps: unknown): boolean {
  const parsed = AgUiRegistryOptionsSchema.safeParse(registryOptionsOf(forwardedProps) ?? {});
  return !parsed.success || parsed.data.toolCallArgs !== 'omit';
}

export const AgUiRunInputSchema = z
  .looseObject({
    threadId: IdSchema.describe('The conversation; echoed in `RUN_STARTED` and `RUN_FINISHED`.'),
    runId: IdSchema.describe('This run; echoed in `RUN_STARTED` and `RUN_FINISHED`.'),
    parentRunId: IdSchema.optional(),
    protocolVersion: z.string().max(32).optional().describe('The AG-UI protocol version the client speaks, e.g. `1.0`.'),
    state: z.unknown().optional().describe('Not read.'),
    messages: z
      .array(AgUiMessageSchema)
      .max(MAX_AG_UI_MESSAGES)
      .describe(
        `The conversation. The registry runs the tool calls of the last assistant message that no later tool message answers, in order (at most ${MAX_AG_UI_TOOL_CALLS}).`,
      ),
    tools: z
      .array(z.looseObject({ name: z.string(), description: z.string().optional(), parameters: z.unknown().optional() }))
      .max(MAX_AG_UI_LIST)
      .optional()
      .describe('What the client can execute: a capability list, not an allowlist. Not read; the token decides what may be called.'),
    context: z
      .array(z.looseObject({ description: z.string(), value: z.string() }))
      .max(MAX_AG_UI_LIST)
      .optional()
      .describe('Not read.'),
    forwardedProps: z
      .unknown()
      .optional()
      .describe(
        'Read only under the key `tool-registry`: `{"toolCallArgs": "omit"}` leaves `TOOL_CALL_ARGS` out (for a client that applies the events to the conversation it sent: AG-UI clients append those fragments to the arguments they hold); `"stream"`, the default, sends them. Anything else in it is not read.',
      ),
    resume: z.array(z.unknown()).max(MAX_AG_UI_LIST).optional().describe('Not read.'),
  })
  .superRefine((input, ctx) => {
    const options = registryOptionsOf(input.forwardedProps);
    if (options !== undefined) {
      const parsed = AgUiRegistryOptionsSchema.safeParse(options);
      if (!parsed.success) {
        for (const issue of parsed.error.issues)
          ctx.addIssue({ code: 'custom', path: ['forwardedProps', AG_UI_METADATA_KEY, ...issue.path.map(String)], message: issue.message });
      }
    }
    const { index, calls } = pendingToolCalls(input.messages);
    if (calls.length > MAX_AG_UI_TOOL_CALLS) {
      ctx.addIssue({
        code: 'custom',
        path: ['messages', index, 'toolCalls'],
        message: `${calls.length} tool calls to run; one run makes at most ${MAX_AG_UI_TOOL_CALLS}`,
      });
    }
    const ids = new Set<string>();
    for (const call of calls) {
      if (ids.has(call.id))
        ctx.addIssue({
          code: 'custom',
          path: ['messages', index, 'toolCalls'],
          message: `tool call id ${JSON.stringify(call.id)} is given twice`,
        });
      ids.add(call.id);
    }
  })
  .meta({
    id: 'AgUiRunInput',
    description:
      'An AG-UI `RunAgentInput` whose last assistant message carries `toolCalls` for the registry to run. Fields not listed are accepted and not read.',
    examples: [
      {
        threadId: 'thread-1',
        runId: 'run-1',
        messages: [
          { id: 'msg-1', role: 'user', content: 'What is 2 + 2?' },
          {
            id: 'msg-2',
            role: 'assistant',
            toolCalls: [{ id: 'call-1', type: 'function', function: { name: 'calculator', arguments: '{"expression":"2 + 2"}' } }],
          },
        ],
        tools: [],
        context: [],
      },
    ],
  });
/** @public */
export type AgUiRunInput = z.infer<typeof AgUiRunInputSchema>;

// ---------------------------------------------------------------------------------------------
// The events the registry sends (each the `data` of one server-sent event)

const ToolCallIdSchema = z.string().describe('The call: from the assistant message on `POST /ag-ui`, made by the registry on invoke.');

const RegistryMetadataSchema = z
  .strictObject({
    [AG_UI_METADATA_KEY]: z.strictObject({
      id: z.string().optional().describe("The call's correlation id (as in `InvokeResult`), when it succeeded."),
      durationMs: z.number().optional(),
      error: ProblemSchema.optional().describe('Why the call failed: the problem `POST /tools/{name}/invoke` would have answered.'),
    }),
  })
  .describe("The registry's own details, under the key `tool-registry`; AG-UI clients copy it onto the tool message.");

export const AgUiEventSchema = z
  .discriminatedUnion('type', [
    z.strictObject({
      type: z.literal('RUN_STARTED'),
      threadId: z.string(),
      runId: z.string(),
      parentRunId: z.string().optional(),
      protocolVersion: z.string(),
    }),
    z.strictObject({
      type: z.literal('TOOL_CALL_START'),
      toolCallId: ToolCallIdSchema,
      toolCallName: z.string(),
      parentMessageId: z.string().optional(),
    }),
    z.strictObject({
      type: z.literal('TOOL_CALL_ARGS'),
      toolCallId: z.string(),
      delta: z.string().describe('A fragment of the arguments text; the fragments concatenate to it.'),
    }),
    z.strictObject({ type: z.literal('TOOL_CALL_END'), toolCallId: z.string() }),
    z.strictObject({
      type: z.literal('ACTIVITY_SNAPSHOT'),
      messageId: z.string(),
      activityType: z.literal(TOOL_OUTPUT_ACTIVITY),
      content: z.strictObject({ toolCallId: z.string(), chunks: z.array(z.string()).describe('The output so far, piece by piece.') }),
    }),
    z.strictObject({
      type: z.literal('ACTIVITY_DELTA'),
      messageId: z.string(),
      activityType: z.literal(TOOL_OUTPUT_ACTIVITY),
      patch: z.array(
        z.strictObject({ op: z.literal('add'), path: z.literal('/chunks/-'), value: z.string().describe('The next piece of output.') }),
      ),
    }),
    z.strictObject({
      type: z.literal('TOOL_CALL_RESULT'),
      messageId: z.string().describe('The tool message this result becomes; assigned when the call was opened.'),
      toolCallId: z.string(),
      role: z.literal('tool'),
      content: z.string().describe('The whole observation, or `Error: ` and what went wrong.'),
      metadata: RegistryMetadataSchema,
    }),
    z.strictObject({ type: z.literal('RUN_FINISHED'), threadId: z.string(), runId: z.string() }),
    z.strictObject({ type: z.literal('RUN_ERROR'), message: z.string(), code: z.string() }),
  ])
  .meta({ id: 'AgUiEvent', description: 'An AG-UI event (protocol 1.0), the `data` of one server-sent event.' });
/** @public */
export type AgUiEvent = z.infer<typeof AgUiEventSchema>;
