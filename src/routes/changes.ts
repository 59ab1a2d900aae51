import type { FastifyPluginAsync } from 'fastify';
import type { ServerResponse } from 'node:http';
import { hasAnyScope } from '../auth/caller.js';
import { Catalog, type CatalogChange, type ViewKey } from '../catalog/catalog.js';
import type { Config } from '../config.js';
import { RegistryError } from '../errors.js';
import type { ChangeRecord } from '../store/registry-store.js';
import { viewKeyFor } from './view-policy.js';

const HEARTBEAT_MS = 15_000;
const REPLAY_PAGE = 5000;

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

    // Replay and subscribe in one synchronous stretch: no write can land between them.
    if (from !== undefined && from < app.catalog.index) {
      const writeGroups = (rows: ChangeRecord[]) => {
        let group: FeedEvent[] = [];
        rows.forEach((row, i) => {
          const event = eventFor(row, row.index, key, isAdmin);
          if (event) group.push(event);
          if (rows[i + 1]?.index !== row.index && group.length > 0) {
            raw.write(serialise(group));
            group = [];
          }
        });
      };
      for (let cursor = from; ; ) {
        const rows = app.store.changesSince(cursor, REPLAY_PAGE);
        if (rows.length === 0) break;
        let complete = rows;
        if (rows.length === REPLAY_PAGE) {
          // Never end a page inside a write: hold its rows back for the next page, or read a
          // single huge write (a bulk import) whole.
          const lastIndex = rows.at(-1)?.index;
          complete = rows.filter((r) => r.index !== lastIndex);
          if (complete.length === 0 && lastIndex !== undefined) complete = app.store.changesAt(lastIndex);
        }
        writeGroups(complete);
        cursor = complete.at(-1)?.index ?? cursor;
        if (rows.length < REPLAY_PAGE) break;
      }
    }
    const unsubscribe = app.catalog.onChange((index, changes) => {
      const events = changes.map((c) => eventFor(c, index, key, isAdmin)).filter((e): e is FeedEvent => e !== null);
      if (events.length > 0) raw.write(serialise(events));
    });
    streams.add(raw);
    raw.once('close', () => {
      unsubscribe();
      streams.delete(raw);
      release();
    });
    return reply;
  });
};

export default changesRoutes;
