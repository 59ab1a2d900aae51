/**
 * The OpenTelemetry SDK the server starts (src/telemetry.ts): only when the OTEL_* variables ask
 * for it, a wrong value stops startup with one line, and when on, a request's spans reach an
 * OTLP/HTTP receiver by the time the app has closed.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { startTelemetry } from '../../src/telemetry.js';
import { createTestApp } from '../helpers/app.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('startTelemetry', () => {
  it('starts nothing unless an exporter or an OTLP endpoint is configured', () => {
    expect(startTelemetry({})).toBeNull();
    expect(startTelemetry({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(startTelemetry({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).toBeNull();
    // Only the API's no-op: spans record nothing.
    expect(trace.getTracer('test').startSpan('nothing').isRecording()).toBe(false);
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER: must be otlp, console or none (got "zipkin")'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'notaurl' }, 'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL (got "notaurl")'],
    [
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://a:pw@collector' },
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: must be an http:// or https:// URL (got "ftp://***@collector")',
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_PROTOCOL: grpc is not supported; use an OTLP/HTTP endpoint (http/json)',
    ],
    [
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' },
      'OTEL_TRACES_SAMPLER: "sometimes" is not a sampler this registry knows',
    ],
    [
      { OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' },
      'OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1 (got "2")',
    ],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'b3' }, 'OTEL_PROPAGATORS: only tracecontext and baggage are supported (got "b3")'],
  ])('refuses %j with one line', (env, message) => {
    expect(() => startTelemetry(env)).toThrow(new ConfigError(message));
  });

  it("exports a request's spans over OTLP/HTTP, flushed when the app closes", async () => {
    const bodies: string[] = [];
    const receiver = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        if (req.url === '/v1/traces') bodies.push(body);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      // The exporter reads its endpoint from the process's environment itself.
      vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`);
      vi.stubEnv('OTEL_SERVICE_NAME', 'registry-eu');
      const telemetry = startTelemetry(process.env);
      expect(telemetry).not.toBeNull();
      const t = await createTestApp({}, { tracing: telemetry ?? undefined });
      expect((await t.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
      expect(bodies).toEqual([]); // batched, not sent per span
      await t.close();
      const exported = JSON.stringify(bodies.map((b) => JSON.parse(b) as unknown));
      expect(exported).toContain('"name":"GET /"');
      expect(exported).toContain('{"key":"service.name","value":{"stringValue":"registry-eu"}}');
      // Shut down with the app: the API is a no-op again.
      expect(trace.getTracer('test').startSpan('after').isRecording()).toBe(false);
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
