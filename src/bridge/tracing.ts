/**
 * Spans of a call through the bridge, through the OpenTelemetry API only: without an SDK
 * started (src/telemetry.ts) every call here is the API's no-op. The invoke span follows the
 * GenAI conventions (`execute_tool {name}`); its child is the HTTP POST to the tool's host, the
 * send on the bus, or the `tools/call` to an upstream MCP server, and the W3C `traceparent` of
 * that child goes with the call (a header, a message property, or the request's `params._meta`),
 * so the tool's own spans join the caller's trace.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { RegistryError } from '../model/errors.js';
import { ToolServiceError } from './errors.js';

const tracer = trace.getTracer('tool-registry');

/** An error's class for `error.type`: its stable code, the tool's own error type, or its name. */
const errorType = (err: unknown): string =>
  err instanceof RegistryError ? err.code : err instanceof ToolServiceError ? err.type : err instanceof Error ? err.name : 'unknown';

/** What a transport says an error's `error.type` is, where its conventions differ; undefined: the default. */
type ErrorTypeOf = (err: unknown) => string | undefined;

/** Ends `span` with the outcome of `work`. */
async function within<T>(span: Span, work: () => Promise<T>, errorTypeOf?: ErrorTypeOf): Promise<T> {
  try {
    return await work();
  } catch (err) {
    span.setAttribute('error.type', errorTypeOf?.(err) ?? errorType(err));
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * The span of one invoke, active while `work` runs so that the transport's span is its child.
 * Named `execute_tool` until the tool is known (annotateInvoke): a name from the URL that names
 * no tool is an attribute, never a span name, so that callers cannot mint span names.
 */
export function traceInvoke<T>(toolName: string, work: () => Promise<T>): Promise<T> {
  const attributes = { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': toolName };
  return tracer.startActiveSpan('execute_tool', { kind: SpanKind.INTERNAL, attributes }, (span) => within(span, work));
}

/** What the bridge learns once the call is admitted: the tool, its kind and the call's correlation id. */
export function annotateInvoke(toolName: string, kind: string, callId: string): void {
  const span = trace.getActiveSpan();
  span?.updateName(`execute_tool ${toolName}`);
  span?.setAttributes({ 'gen_ai.tool.type': kind, 'gen_ai.tool.call.id': callId });
}

/**
 * A client span around a transport's call, with the trace context to send: `work` gets a
 * carrier holding `traceparent` (and `tracestate`) for the span, or nothing when tracing is off.
 */
export function traceTransport<T>(
  name: string,
  attributes: Attributes,
  work: (carrier: Record<string, string>) => Promise<T>,
  errorTypeOf?: ErrorTypeOf,
): Promise<T> {
  return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, (span) => {
    const carrier: Record<string, string> = {};
    propagation.inject(context.active(), carrier);
    return within(span, () => work(carrier), errorTypeOf);
  });
}

/** Sets an attribute on the active span (the transport's), if tracing is on. */
export function annotateActive(key: string, value: string | number): void {
  trace.getActiveSpan()?.setAttribute(key, value);
}
