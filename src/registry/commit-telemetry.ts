/**
 * What a group commit tells observers (metrics) and tracing: its size, how long it took from the
 * start of its transaction until its fsync returned, and whether it held. A commit serves many
 * requests, so its span is a root of its own with a link to the span of each write in it (the
 * OpenTelemetry pattern for batches) rather than a child of whichever request came first.
 */
import { context, SpanStatusCode, trace, type Link, type SpanContext } from '@opentelemetry/api';

const tracer = trace.getTracer('tool-registry');

/** One group commit, as metrics see it. */
export interface CommitObservation {
  /** Writes in the batch, each in its own savepoint (failed ones included). */
  writes: number;
  /** From the start of the transaction until the fsync returned or either failed. */
  durationMs: number;
  /** False when the shared commit or its fsync failed (every write in it was refused). */
  ok: boolean;
}

export type CommitObserver = (commit: CommitObservation) => void;

/** The span of the request that queued a write, if tracing is on and there is one. */
export const callerSpan = (): SpanContext | undefined => trace.getSpanContext(context.active());

export class CommitTelemetry {
  readonly #observers = new Set<CommitObserver>();

  observe(observer: CommitObserver): () => void {
    this.#observers.add(observer);
    return () => {
      this.#observers.delete(observer);
    };
  }

  /** Starts timing one commit of writes queued under these spans; call the result once it settles. */
  start(writers: readonly { span?: SpanContext | undefined }[]): (error?: unknown) => void {
    const started = performance.now();
    const links: Link[] = [];
    for (const { span } of writers) if (span) links.push({ context: span });
    const span = tracer.startSpan('registry.group_commit', {
      root: true,
      links,
      attributes: { 'tool_registry.commit.writes': writers.length },
    });
    return (error?: unknown) => {
      const observation = { writes: writers.length, durationMs: performance.now() - started, ok: error === undefined };
      if (error !== undefined) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the commit failed' });
      }
      span.end();
      for (const observer of this.#observers) observer(observation);
    };
  }
}
