/**
 * The tracing tests' own OpenTelemetry provider with an in-memory exporter, and the lookups
 * they share. Each test file runs in its own process (vitest's forks pool), so one provider per
 * file.
 */
import type { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { expect } from 'vitest';

export const exporter = new InMemorySpanExporter();
export const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
/** What createTestApp takes as the app's tracing handle. */
export const tracing = { shutdown: () => provider.forceFlush() };
export const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/u;

/** The spans finished so far (SimpleSpanProcessor exports each as it ends, asynchronously). */
export async function spans(): Promise<ReadableSpan[]> {
  await provider.forceFlush();
  return exporter.getFinishedSpans();
}

/** The one span of that name (and kind); fails the test when there are none or several. */
export function only(found: ReadableSpan[], name: string, kind?: SpanKind): ReadableSpan {
  const matching = found.filter((s) => s.name === name && (kind === undefined || s.kind === kind));
  expect(
    matching.map((s) => s.name),
    `one span ${name}`,
  ).toEqual([name]);
  return matching[0] as ReadableSpan;
}

export const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
