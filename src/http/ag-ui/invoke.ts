/**
 * `POST /tools/{name}/invoke?stream=ag-ui`: one call as an AG-UI run (issue 12), the events of
 * src/http/ag-ui/run.ts. As with `Accept: text/event-stream`, the stream starts with the
 * call's first output or its end, so that a call refused or failed before then keeps its status
 * and problem body; a failure after that is the call's TOOL_CALL_RESULT.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { InvokeRequest, ToolBridge } from '../../bridge/bridge.js';
import type { ErrorCode } from '../../model/errors.js';
import type { EventStream } from '../event-stream.js';
import { agUiEncoder, AgUiRun, reportFailure, type AgUiToolCall } from './run.js';

export async function invokeAsAgUi(
  bridge: ToolBridge,
  request: FastifyRequest,
  stream: EventStream,
  invoke: InvokeRequest,
  onCallFailed: (toolName: string, code: ErrorCode, status: number) => void,
): Promise<void> {
  // The caller made the call itself: the run and the call get ids of the registry's making.
  const run = new AgUiRun(randomUUID(), randomUUID(), await agUiEncoder(), (text) => stream.write(text));
  let call: AgUiToolCall | undefined;
  const started = (): AgUiToolCall => {
    if (call) return call;
    stream.start();
    run.started();
    return (call = run.call(randomUUID(), invoke.toolName, JSON.stringify(invoke.arguments ?? {})));
  };
  try {
    const result = await bridge.invoke({ ...invoke, onChunk: (text) => started().output(text) });
    started().succeeded(result);
  } catch (err) {
    if (!call) throw err;
    reportFailure({ onCallFailed, log: request.log }, call, err);
  }
  run.finished();
  stream.end();
}
