/**
 * The process: build the app, listen, and close gracefully on SIGTERM/SIGINT (in-flight
 * requests finish, the database closes, exit 0).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './http/app.js';
import { redactText, redactUrl } from './http/redact-url.js';
import type { Config } from './config.js';
import { listenProblem } from './config/errors.js';
import { startTelemetry } from './telemetry.js';

/**
 * Whether pino-pretty is installed: it is an optional dependency (left out of the Docker image,
 * `npm ci --omit=optional`), and pino would fail at startup on a transport it cannot load.
 */
function prettyInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes the bound port to PORT_FILE, whole or not at all (written beside it, then renamed), so a
 * reader that sees the file reads a port the server already listens on.
 */
function reportPort(file: string, app: FastifyInstance): void {
  const address = app.server.address();
  if (address === null || typeof address === 'string') return;
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, `${address.port}\n`);
  renameSync(partial, file);
}

/** Headers that carry credentials, wherever a log line might hold a copy of them. */
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-api-key', 'x-auth-token'];

/** A log call's argument with credentials taken out of its text (two levels of plain objects). */
function redactArgument(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (depth >= 2 || value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) copy[key] = redactArgument(field, depth + 1);
  return copy;
}

/**
 * The server's pino options. Tokens never reach the logs: requests are logged as method, URL,
 * id and address only (no headers), the URL with every credential in its query redacted by
 * name after decoding and anything undecodable dropped (src/http/redact-url.ts); any
 * credential header that an error or a plugin logs is censored by path; and the text of every
 * message and field loses JWTs and credential `name=value` pairs (a tool name in an error's
 * detail is user input, and may be a token).
 */
export function loggerOptions(config: Config, pretty: boolean) {
  return {
    level: config.logLevel,
    hooks: {
      logMethod(this: unknown, args: unknown[], method: (...args: unknown[]) => void) {
        method.apply(
          this,
          args.map((arg) => redactArgument(arg)),
        );
      },
    },
    redact: CREDENTIAL_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `headers["${h}"]`, `err.headers["${h}"]`, `res.headers["${h}"]`]),
    serializers: {
      req: (req: { method: string; url: string; id: string; ip?: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        reqId: req.id,
        remoteAddress: req.ip,
      }),
    },
    ...(pretty && { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }),
  };
}

export async function startServer(config: Config): Promise<FastifyInstance> {
  // Tracing only when the OTEL_* variables ask for it; started before the app so that the first
  // request has a provider, and shut down (flushed) by the app when it closes.
  const telemetry = startTelemetry(process.env);
  let app: FastifyInstance;
  try {
    app = await buildApp(config, {
      logger: loggerOptions(config, Boolean(process.stdout.isTTY) && prettyInstalled()),
      ...(telemetry && { tracing: telemetry }),
    });
  } catch (err) {
    await telemetry?.shutdown();
    throw err;
  }
  telemetry?.logTo(app.log);
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    // Acknowledged writes are on disk already; what a deadline cuts is answers still owed.
    const deadline = config.connections.shutdownTimeoutMs;
    if (deadline > 0) {
      setTimeout(() => {
        app.log.warn({ shutdownTimeoutMs: deadline }, 'requests still in flight after SHUTDOWN_TIMEOUT_MS; exiting without them');
        process.exit(1);
      }, deadline).unref();
    }
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.log.error({ err }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  // Connection caps and socket timeouts are set by buildApp (src/http/plugins/connections.ts),
  // so that tests which listen get them too.
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    await app.close();
    throw listenProblem(err, { port: config.port, host: config.host, portSetting: 'PORT', hostSetting: 'HOST' }) ?? err;
  }
  if (config.portFile !== undefined) {
    try {
      reportPort(config.portFile, app);
    } catch (err) {
      await app.close();
      throw new Error(`PORT_FILE: cannot write ${config.portFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  app.log.info(
    {
      publicUrl: config.publicUrl.href,
      anonymousDiscovery: config.anonymousDiscovery,
      tracing: telemetry !== null,
      // What VIEW_CACHE_BYTES=auto chose on this machine.
      viewCacheBytes: config.viewCacheBytes,
    },
    'tool-registry ready',
  );
  return app;
}
