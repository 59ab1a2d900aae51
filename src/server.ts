/**
 * The process: build the app, listen, and close gracefully on SIGTERM/SIGINT (in-flight
 * requests finish, the database closes, exit 0).
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, redactUrl } from './http/app.js';
import type { Config } from './config.js';

function loggerOptions(config: Config, pretty: boolean) {
  return {
    level: config.logLevel,
    // Tokens never reach the logs: headers are not serialised, and URLs lose access_token.
    redact: ['req.headers.authorization', 'req.headers.cookie'],
    serializers: {
      req: (req: { method: string; url: string; id: string; ip?: string }) => ({ method: req.method, url: redactUrl(req.url), reqId: req.id, remoteAddress: req.ip }),
    },
    ...(pretty && { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' } } }),
  };
}

export async function startServer(config: Config): Promise<FastifyInstance> {
  const app = await buildApp(config, { logger: loggerOptions(config, Boolean(process.stdout.isTTY)) });
  let closing = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
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
  await app.listen({ port: config.port, host: config.host });
  app.server.maxConnections = config.maxConnections;
  app.log.info({ publicUrl: config.publicUrl.href, anonymousDiscovery: config.anonymousDiscovery }, 'tool-registry ready');
  return app;
}
