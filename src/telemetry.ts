/**
 * OpenTelemetry tracing for the process, configured the standard way, through the OTEL_*
 * variables, and only when asked for: OTEL_TRACES_EXPORTER (otlp or console), or an OTLP
 * endpoint (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). Otherwise nothing
 * is started and the services' spans are the API's no-ops. Started by src/server.ts, never by
 * buildApp, so tests bring their own provider.
 *
 * Read here: OTEL_SDK_DISABLED, OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP(_TRACES)_PROTOCOL
 * (http/json is what the installed exporter sends; http/protobuf endpoints take it too, grpc
 * ones do not), OTEL_TRACES_SAMPLER(_ARG), OTEL_PROPAGATORS (tracecontext, baggage),
 * OTEL_SERVICE_NAME (default tool-registry) and OTEL_RESOURCE_ATTRIBUTES. The exporter reads its
 * own: the endpoint, OTEL_EXPORTER_OTLP(_TRACES)_HEADERS, _TIMEOUT, _COMPRESSION, certificates.
 */
import { context, diag, DiagLogLevel, propagation, trace, type TextMapPropagator } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, envDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { ConfigError, withoutUserinfo } from './config/errors.js';
import { packageVersion } from './package-root.js';

export interface Telemetry {
  /** Sends the SDK's own warnings (failed exports) to the app's log. */
  logTo(log: { warn(obj: object, msg: string): void }): void;
  /** Flushes the spans not yet exported and stops the SDK. */
  shutdown(): Promise<void>;
}

type Env = Readonly<Record<string, string | undefined>>;

const value = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v === '' ? undefined : v;
};

const list = (env: Env, name: string): string[] | undefined =>
  value(env, name)
    ?.split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '');

/** The exporters asked for (checked, not yet made); empty when tracing stays off. */
function exporterNames(env: Env): ('otlp' | 'console')[] {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return [];
  const named = list(env, 'OTEL_TRACES_EXPORTER');
  const endpointVariable =
    value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') === undefined ? 'OTEL_EXPORTER_OTLP_ENDPOINT' : 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT';
  const endpoint = value(env, endpointVariable);
  // The exporter would fall back to localhost:4318 on a value it cannot read, and say so later in a stack trace.
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint)) {
    throw new ConfigError(
      `${endpointVariable}: must be an http:// or https:// URL (got ${JSON.stringify(withoutUserinfo(endpoint).slice(0, 80))})`,
    );
  }
  const wanted = named ?? (endpoint === undefined ? [] : ['otlp']);
  return wanted.flatMap((name): ('otlp' | 'console')[] => {
    if (name === 'none') return [];
    if (name === 'console') return [name];
    if (name !== 'otlp') throw new ConfigError(`OTEL_TRACES_EXPORTER: must be otlp, console or none (got ${JSON.stringify(name)})`);
    const protocolVariable =
      value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL';
    if (value(env, protocolVariable) === 'grpc')
      throw new ConfigError(`${protocolVariable}: grpc is not supported; use an OTLP/HTTP endpoint (http/json)`);
    return [name];
  });
}

function samplerOf(env: Env): Sampler {
  const name = value(env, 'OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on';
  const arg = value(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1))
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1 (got ${JSON.stringify(arg)})`);
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      throw new ConfigError(`OTEL_TRACES_SAMPLER: ${JSON.stringify(name)} is not a sampler this registry knows`);
  }
}

function propagatorOf(env: Env): TextMapPropagator {
  const propagators = (list(env, 'OTEL_PROPAGATORS') ?? ['tracecontext', 'baggage']).flatMap((name): TextMapPropagator[] => {
    if (name === 'tracecontext') return [new W3CTraceContextPropagator()];
    if (name === 'baggage') return [new W3CBaggagePropagator()];
    if (name === 'none') return [];
    throw new ConfigError(`OTEL_PROPAGATORS: only tracecontext and baggage are supported (got ${JSON.stringify(name)})`);
  });
  return new CompositePropagator({ propagators });
}

/**
 * Starts tracing when the environment asks for it, and registers it as the API's global
 * provider, context manager and propagator; null when it does not. A wrong value throws a
 * ConfigError naming the variable.
 */
export function startTelemetry(env: Env): Telemetry | null {
  const names = exporterNames(env);
  if (names.length === 0) return null;
  const sampler = samplerOf(env);
  const propagator = propagatorOf(env);
  const exporters = names.map((name): SpanExporter => (name === 'console' ? new ConsoleSpanExporter() : new OTLPTraceExporter()));
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) win over our defaults.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'tool-registry', [ATTR_SERVICE_VERSION]: packageVersion() }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler,
    spanProcessors: exporters.map((exporter) => new BatchSpanProcessor({ exporter })),
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(propagator);
  return {
    logTo(log) {
      diag.setLogger(
        {
          error: (message, ...args) => log.warn({ args }, `opentelemetry: ${message}`),
          warn: (message, ...args) => log.warn({ args }, `opentelemetry: ${message}`),
          info: () => undefined,
          debug: () => undefined,
          verbose: () => undefined,
        },
        DiagLogLevel.WARN,
      );
    },
    async shutdown() {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
        diag.disable();
      }
    },
  };
}
