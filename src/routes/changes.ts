import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyPluginAsync } from 'fastify';
import { hasAnyScope } from '../auth/caller.js';
import { Catalog, type CatalogChange, type ViewKey } from '../catalog/catalog.js';
import type { Config } from '../config.js';
import { RegistryError } from '../errors.js';
import type { RegistryStore } from '../store/registry-store.js';
import { viewKeyFor } from './view-policy.js';

const HEARTBEAT_MS = 15_000;
const REPLAY_PAGE = 5000;
/** Bytes a stream may have waiting for a client before the registry gives up on it. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

interface FeedEvent {
  index: number;
  op: 'upsert' | 'delete';
  kind: 'tool' | 'tool-service';
  name: string;
}

/**
 * What a change looks like from one caller's view: a tool entering or changing in the view is
 * an upsert, one leaving it a delete, and one the caller never sees is nothing. Tool services
 * are topology, shown to admins only.
 */
function eventFor(change: Pick<CatalogChange, 'kind' | 'name' | 'scopesBefore' | 'scopesAfter'>, index: number, key: ViewKey, isAdmin: boolean): FeedEvent | null {
  if (change.kind === 'tool-service') {
    if (!isAdmin) return null;
    return { index, op: change.scopesAfter === null ? 'delete' : 'upsert', kind: change.kind, name: change.name };
  }
  const after = change.scopesAfter !== null && Catalog.visibleScopes(change.scopesAfter, key);
  const before = change.scopesBefore !== null && Catalog.visibleScopes(change.scopesBefore, key);
  if (after) return { index, op: 'upsert', kind: 'tool', name: change.name };
  if (before) return { index, op: 'delete', kind: 'tool', name: change.name };
  return null;
}

/**
 * Writes the change log after `from` (as seen from one view) through `write`, which may wait
 * for the client to drain, a page at a time and never ending a page inside a write. Returns
 * the registry index it has replayed through.
 */
async function replayChanges(
  store: RegistryStore,
  catalog: Catalog,
  from: number,
  key: ViewKey,
  isAdmin: boolean,
  write: (text: string) => Promise<void>,
): Promise<number> {
  let cursor = from;
  for (;;) {
    // Read and note the catalogue's index in one synchronous step: they agree then.
    const through = catalog.index;
    const rows = store.changesSince(cursor, REPLAY_PAGE);
    let complete = rows;
    if (rows.length === REPLAY_PAGE) {
      // Hold the last write's rows back for the next page, or read one huge write (a bulk
      // import) whole.
      const lastIndex = rows.at(-1)?.index;
      complete = rows.filter((r) => r.index !== lastIndex);
      if (complete.length === 0 && lastIndex !== undefined) complete = store.changesAt(lastIndex);
    }
    let group: FeedEvent[] = [];
    for (const [i, row] of complete.entries()) {
      const event = eventFor(row, row.index, key, isAdmin);
      if (event) group.push(event);
      if (complete[i + 1]?.index !== row.index && group.length > 0) {
        await write(serialise(group));
        group = [];
      }
    }
    if (rows.length < REPLAY_PAGE) return Math.max(through, complete.at(-1)?.index ?? cursor);
    cursor = complete.at(-1)?.index ?? cursor;
  }
}

/** One write's events; only the last carries the SSE id, so a resume never splits a write. */
function serialise(events: FeedEvent[]): string {
  return events
    .map((e, i) => `${i === events.length - 1 ? `id: ${e.index}\n` : ''}event: change\ndata: ${JSON.stringify(e)}\n\n`)
    .join('');
}

/**
 * `GET /changes`: a text/event-stream of the changes in the caller's view, resumable with
 * Last-Event-ID (or `?since=`) from the change log that storage keeps, heartbeats every 15 s,
 * and closed cleanly on shutdown.
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
    const key = viewKeyFor(request.caller, config.anonymousDiscovery, app.catalog);
    const isAdmin = hasAnyScope(request.caller, [config.adminScope]);
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
    let unsubscribe = () => undefined as unknown;
    let done = false;
    const cleanup = () => {
      if (done) return;
      done = true;
      unsubscribe();
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
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-request-id': request.id,
        'x-registry-index': String(app.catalog.index),
        'x-accel-buffering': 'no',
      });
      raw.write(': connected\n\n');
      if (from !== undefined && from > app.catalog.index) {
        // An index from the future (a reset or restored registry): the client must start over.
        raw.write(`event: reset\ndata: ${JSON.stringify({ index: app.catalog.index })}\n\n`);
        from = undefined;
      }
      // Subscribe before replaying and hold live events back meanwhile: the replay waits for
      // the client to drain, and writes that land then are sent after it, without repeats.
      let replaying = from !== undefined;
      const heldBack: [number, string][] = [];
      unsubscribe = app.catalog.onChange((index, changes) => {
        const events = changes.map((c) => eventFor(c, index, key, isAdmin)).filter((e): e is FeedEvent => e !== null);
        if (events.length === 0) return;
        if (replaying) heldBack.push([index, serialise(events)]);
        else send(serialise(events));
      });
      streams.add(raw);
      if (from !== undefined) {
        const replayedThrough = await replayChanges(app.store, app.catalog, from, key, isAdmin, async (text) => {
          send(text);
          if (raw.writableLength > 64 * 1024 && !done) await Promise.race([once(raw, 'drain'), once(raw, 'close')]);
        });
        replaying = false;
        for (const [index, text] of heldBack) if (index > replayedThrough) send(text);
      }
    } catch (err) {
      request.log.error({ err }, 'change stream failed');
      raw.destroy();
      cleanup();
    }
    return reply;
  });
};

export default changesRoutes;
