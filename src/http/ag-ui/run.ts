/**
 * One AG-UI run written to one response (issue 12): the events in the protocol's order, encoded
 * by the official SDK's EventEncoder (`data: <json>` and a blank line each), and tool calls
 * carried through the same bridge as `POST /tools/{name}/invoke`.
 *
 * Per call: TOOL_CALL_START, the arguments text in TOOL_CALL_ARGS fragments, TOOL_CALL_END (the
 * arguments are complete), the output as it streams, then TOOL_CALL_RESULT with the whole
 * observation.
 *
 * The issue this answers (12) asks for TOOL_CALL_ARGS on every call, `POST /ag-ui`'s too, and
 * they are sent by default. But a call of `POST /ag-ui`'s input is one the client holds already,
 * with its complete arguments, and the protocol (docs/concepts/events.mdx, "Tool Call Events")
 * defines ARGS as fragments that "frontends should concatenate ... in the order received to
 * construct the complete arguments object", with no way to replace arguments. @ag-ui/client 1.0
 * does exactly that: its default apply appends each delta to the call it finds by id (a START
 * for a known id is a no-op), so its copy of the conversation then reads `{"a":1}{"a":1}`,
 * which the next model request would send back (measured; its verifier does not object, as it
 * tracks only which calls are open). A client that applies the events to the conversation it
 * sent therefore passes `forwardedProps: {"tool-registry": {"toolCallArgs": "omit"}}` and gets
 * START and END only; a client that shows the run from its events alone gets the arguments. On
 * `POST /tools/{name}/invoke?stream=ag-ui` the registry makes the call itself, so the call is
 * new to every client and its arguments always come as ARGS.
 *
 * The protocol has no event for a tool result in pieces, so the result is accumulated; the
 * pieces show as an activity message of type `tool-output` (ACTIVITY_SNAPSHOT, then one
 * ACTIVITY_DELTA per piece appending to `chunks`), which clients render or ignore and never send
 * back to a model. A call that fails is still answered, with a TOOL_CALL_RESULT
 * saying why (`Error: ...`, the problem under the `tool-registry` metadata key), as MCP answers
 * a failed call with `isError`: the agent reading the conversation sees the failure and can
 * correct itself, and the other calls of the run go on. Only a fault of the registry itself
 * ends a run early, with RUN_ERROR (every open call ended first).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { EventType, PROTOCOL_VERSION, type Event } from '@ag-ui/core';
import type { EventEncoder } from '@ag-ui/encoder';
import { z } from 'zod';
import type { InvokeResult, ToolBridge } from '../../bridge/bridge.js';
import { AG_UI_METADATA_KEY, TOOL_OUTPUT_ACTIVITY } from '../../model/ag-ui.js';
import type { Caller } from '../../model/caller.js';
import { RegistryError, type ErrorCode } from '../../model/errors.js';
import { parseJsonBody } from '../json-body.js';
import { problemBody, problemOf } from '../plugins/errors.js';

/**
 * The SDK's encoder, loaded with the first AG-UI answer: @ag-ui/encoder brings @ag-ui/proto and
 * protobuf, 95 ms at every start of the app (measured) for a front many deployments never use.
 * It keeps no state, so one serves every run.
 */
let encoder: Promise<EventEncoder> | undefined;
export const agUiEncoder = (): Promise<EventEncoder> =>
  (encoder ??= import('@ag-ui/encoder').then(({ EventEncoder }) => new EventEncoder()));

/** How the events are framed on the wire, for the OpenAPI document. */
export const AgUiEventsSchema = z
  .string()
  .regex(/^(?:data: [^\n]+\n\n)*$/)
  .describe('Server-sent events as AG-UI encodes them: one `data:` line of JSON per event (an `AgUiEvent`), no event names.');

/**
 * Characters of arguments text per TOOL_CALL_ARGS event: the protocol streams arguments as
 * fragments, and this keeps each event small however long the arguments are.
 */
const ARGS_FRAGMENT_CHARS = 4096;

/** Arguments text in fragments that concatenate to it, never splitting a surrogate pair. */
function* fragments(text: string): Generator<string> {
  if (text === '') yield '';
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + ARGS_FRAGMENT_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(start, end);
    start = end;
  }
}

/** The events of one run, in order; writes stop once the run has ended. */
export class AgUiRun {
  readonly #encoder: EventEncoder;
  readonly #write: (text: string) => void;
  /** Calls started and not yet ended (TOOL_CALL_END), ended before a RUN_ERROR. */
  readonly #open = new Set<string>();
  #ended = false;

  constructor(
    readonly threadId: string,
    readonly runId: string,
    encoder: EventEncoder,
    write: (text: string) => void,
  ) {
    this.#encoder = encoder;
    this.#write = write;
  }

  get ended(): boolean {
    return this.#ended;
  }

  emit(event: Event): void {
    if (!this.#ended) this.#write(this.#encoder.encodeSSE(event));
  }

  started(parentRunId?: string): void {
    this.emit({
      type: EventType.RUN_STARTED,
      threadId: this.threadId,
      runId: this.runId,
      ...(parentRunId !== undefined && { parentRunId }),
      protocolVersion: PROTOCOL_VERSION,
    });
  }

  /**
   * Opens a call: START, the arguments in ARGS fragments (not for a call the client already
   * holds: `argumentsText` undefined), END.
   */
  call(toolCallId: string, toolCallName: string, argumentsText: string | undefined, parentMessageId?: string): AgUiToolCall {
    this.#open.add(toolCallId);
    this.emit({ type: EventType.TOOL_CALL_START, toolCallId, toolCallName, ...(parentMessageId !== undefined && { parentMessageId }) });
    if (argumentsText !== undefined)
      for (const delta of fragments(argumentsText)) this.emit({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta });
    this.#end(toolCallId);
    return new AgUiToolCall(this, toolCallId, toolCallName);
  }

  #end(toolCallId: string): void {
    if (this.#open.delete(toolCallId)) this.emit({ type: EventType.TOOL_CALL_END, toolCallId });
  }

  finished(): void {
    this.emit({ type: EventType.RUN_FINISHED, threadId: this.threadId, runId: this.runId });
    this.#ended = true;
  }

  /** Ends the run on a fault of the registry, every open call ended first. */
  errored(message: string, code: ErrorCode): void {
    for (const id of [...this.#open]) this.#end(id);
    this.emit({ type: EventType.RUN_ERROR, message, code });
    this.#ended = true;
  }
}

/** A call whose arguments are complete: its output as it streams, then its one result. */
export class AgUiToolCall {
  /** The tool message the result becomes, assigned when the call is opened. */
  readonly resultMessageId = randomUUID();
  #activityId: string | undefined;

  constructor(
    readonly run: AgUiRun,
    readonly toolCallId: string,
    readonly toolName: string,
  ) {}

  output(text: string): void {
    if (this.#activityId === undefined) {
      this.#activityId = randomUUID();
      this.run.emit({
        type: EventType.ACTIVITY_SNAPSHOT,
        messageId: this.#activityId,
        activityType: TOOL_OUTPUT_ACTIVITY,
        content: { toolCallId: this.toolCallId, chunks: [text] },
      });
      return;
    }
    this.run.emit({
      type: EventType.ACTIVITY_DELTA,
      messageId: this.#activityId,
      activityType: TOOL_OUTPUT_ACTIVITY,
      patch: [{ op: 'add', path: '/chunks/-', value: text }],
    });
  }

  succeeded(result: InvokeResult): void {
    this.#result(result.result, { id: result.id, durationMs: result.durationMs });
  }

  failed(code: ErrorCode, detail: string, error?: RegistryError): void {
    this.#result(`Error: ${detail}`, { error: problemBody(code, detail, error) });
  }

  #result(content: string, details: Record<string, unknown>): void {
    this.run.emit({
      type: EventType.TOOL_CALL_RESULT,
      messageId: this.resultMessageId,
      toolCallId: this.toolCallId,
      role: 'tool',
      content,
      metadata: { [AG_UI_METADATA_KEY]: details },
    });
  }
}

/** Who is calling, as for `POST /tools/{name}/invoke`. */
export interface AgUiCallContext {
  bridge: ToolBridge;
  caller: Caller;
  callerKey: string;
  authorization: string | undefined;
  /** Aborted when the caller hangs up: the call is cancelled, and the run makes no more. */
  signal: AbortSignal;
  /** JSON_MAX_DEPTH, for the arguments text. */
  jsonMaxDepth: number;
  /** A call that failed, with its code and the HTTP status invoke would have answered (audit log). */
  onCallFailed: (toolName: string, code: ErrorCode, status: number) => void;
  log: FastifyBaseLogger;
}

/**
 * Runs one call of a `RunAgentInput` through the bridge, its events on `call`. Returns false
 * when the run must stop: the caller went away, or RUN_ERROR was sent.
 */
export async function runToolCall(context: AgUiCallContext, call: AgUiToolCall, argumentsText: string): Promise<boolean> {
  const { bridge, caller } = context;
  try {
    let args: unknown;
    try {
      args = argumentsOf(argumentsText, context.jsonMaxDepth);
    } catch (err) {
      // As on invoke, who is calling what is checked before the arguments are looked at.
      bridge.admit(call.toolName, caller);
      throw err;
    }
    const result = await bridge.invoke({
      toolName: call.toolName,
      arguments: args,
      caller,
      authorization: context.authorization,
      callerKey: context.callerKey,
      signal: context.signal,
      onChunk: (text) => call.output(text),
    });
    call.succeeded(result);
    return true;
  } catch (err) {
    return reportFailure(context, call, err);
  }
}

/** A failed call: its result says why and the run goes on, unless the registry itself failed. */
export function reportFailure(context: Pick<AgUiCallContext, 'onCallFailed' | 'log'>, call: AgUiToolCall, err: unknown): boolean {
  const { code, detail, error } = problemOf(err);
  if (!error) context.log.error({ err }, 'AG-UI tool call failed');
  context.onCallFailed(call.toolName, code, error?.status ?? 500);
  // Nobody is left to tell.
  if (code === 'TR_ERR_CLIENT_CLOSED') return false;
  if (!error) {
    call.run.errored(detail, code);
    return false;
  }
  call.failed(code, detail, error);
  return true;
}

/** The arguments text as a value: empty text is `{}`; the bridge refuses what is not an object. */
function argumentsOf(text: string, maxDepth: number): unknown {
  if (text.trim() === '') return {};
  try {
    return parseJsonBody(text, maxDepth);
  } catch (err) {
    if (err instanceof RegistryError && err.code === 'TR_ERR_INVALID_JSON') {
      throw new RegistryError('TR_ERR_INVALID_ARGUMENTS', 'the arguments are not valid JSON', {
        fieldErrors: [{ path: '', message: 'must be the JSON text of an object' }],
      });
    }
    throw err;
  }
}
