import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import { isAdmin, viewKeyFor } from '../../model/visibility.js';
import { SSE_HEADERS, sseChanges, sseEvent } from '../sse.js';

const HEARTBEAT_MS = 15_000;
/** Bytes a stream may have waiting for a client before the registry gives up on it. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** During replay, wait for the client to drain past this many buffered bytes. */
const REPLAY_HIGH_WATER = 64 * 1024;

/**
 * `GET /changes`: the change feed (src/registry/change-feed.ts) as a text/event-stream,
 * resumable with Last-Event-ID (or `?since=`), heartbeats every 15 s, closed cleanly on shutdown.
 */
const changesRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const streams = new Set<ServerResponse>();
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(': heartbeat\n\n');
  }, HEARTBEAT_MS).unref();
  app.addHook('preClose', async () => {
    clearInterval(heartbeat);
    for (const stream of streams) stream.end();
    streams.clear();
  });

  // No automatic HEAD route: it would hold a stream slot with nothing to send.
  app.get<{ Querystring: { since?: string } }>('/changes', { exposeHeadRoute: false }, async (request, reply) => {
    const key = viewKeyFor(request.caller, config.anonymousDiscovery, () => app.catalog.knownScopes().keys());
    const admin = isAdmin(request.caller, config);
    const resumeFrom = request.headers['last-event-id'] ?? request.query.since;
    let from: number | undefined;
    if (resumeFrom !== undefined) {
      from = typeof resumeFrom === 'string' && /^\d{1,15}$/.test(resumeFrom) ? Number(resumeFrom) : Number.NaN;
      if (!Number.isSafeInteger(from)) {
        throw new RegistryError('TR_ERR_BAD_REQUEST', 'Last-Event-ID (or since) must be a registry index from this feed');
      }
    }
    const release = app.waiters.reserve();
    reply.hijack();
    const raw = reply.raw;
    let close = () => undefined as unknown;
    let done = false;
    const cleanup = () => {
      if (done) return;
      done = true;
      close();
      streams.delete(raw);
      release();
    };
    // Registered first, so that the slot is released however the stream ends.
    raw.once('close', cleanup);
    /**
     * A client that stops reading must not make the registry buffer without bound: past the
     * limit its stream is ended, and it resumes from its Last-Event-ID.
     */
    const send = (text: string) => {
      if (done) return;
      if (raw.writableLength > MAX_BUFFERED_BYTES) {
        raw.end(': the client is not reading; reconnect with Last-Event-ID to resume\n\n');
        return;
      }
      raw.write(text);
    };
    try {
      raw.writeHead(200, { ...SSE_HEADERS, 'x-request-id': request.id, 'x-registry-index': String(app.catalog.index) });
      raw.write(': connected\n\n');
      const subscription = app.changeFeed.subscribe({ from, key, admin }, async (events, phase) => {
        send(sseChanges(events));
        if (phase === 'replay' && raw.writableLength > REPLAY_HIGH_WATER && !done) await Promise.race([once(raw, 'drain'), once(raw, 'close')]);
      });
      close = subscription.close;
      // An index from the future (a reset or restored registry): the client must start over.
      if (subscription.reset) raw.write(sseEvent('reset', { index: subscription.index }));
      streams.add(raw);
      await subscription.caughtUp;
    } catch (err) {
      request.log.error({ err }, 'change stream failed');
      raw.destroy();
      cleanup();
    }
    return reply;
  });
};

export default changesRoutes;
