import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { ChangeEventSchema, ChangesHeadersSchema, ChangesQuerySchema } from '../../model/api.js';
import { isAdmin, type ViewChange, viewKeyFor } from '../../model/visibility.js';
import { callerKey } from '../caller-key.js';
import { eventStreams } from '../event-stream.js';
import { ANYONE, headers, problem, problems, waitersFullExample } from '../openapi/responses.js';
import { sseChanges, sseEvent } from '../sse.js';
import { tokenExpiresAt } from '../token-expiry.js';

const HEARTBEAT_MS = 15_000;

const ChangeStreamSchema = z
  .string()
  .regex(/^: connected\n\n(?:: heartbeat\n\n|(?:id: [0-9]+\n)?event: change\ndata: [^\n]+\n\n)*$/)
  .describe(
    'Server-sent events: a `: connected` comment, then `change` events (`data` is a `ChangeEvent`, the last event of each write preceded by `id: <registry index>`) and `: heartbeat` comments. The stream does not end; the pattern describes any part of it that ends after a whole event.',
  );

const DESCRIPTION = `A \`text/event-stream\` of the changes in the caller's view, for agents and mirrors that
keep a copy of the catalogue. The stream starts with a \`: connected\` comment line and
does not end on its own: only when the client goes away or the registry shuts down. A
\`: heartbeat\` comment comes every 15 seconds, so that idle connections stay open.

Each change is a \`change\` event whose \`data\` is a \`ChangeEvent\`: \`upsert\` when a tool
entered the caller's view or changed in it, \`delete\` when it left it (deleted, or
replaced with scopes the caller lacks). Writes outside the view send nothing.
A write that touches several tools or services (an import) sends one event for each,
in a row, and only the last of them carries an \`id:\` line: the write's registry index.
A resume from an \`id\` therefore never splits a write.

**Resuming.** Send the last \`id\` received in \`Last-Event-ID\` (as \`EventSource\` does when
it reconnects), or pass it as \`since\`; the header wins when both are given (both must be
registry indexes). The stream first replays the changes in the view after that index, from
the change log the registry keeps, then goes on live, with no gap and no repeat (\`since=0\`
replays the whole log). Without either, only changes from now on are sent: to mirror the
catalogue, read \`GET /\` and open the stream with \`since\` set to its \`X-Registry-Index\`.

The view follows the rules of \`GET /\`: under \`ANONYMOUS_DISCOVERY=none\` a token is
needed. An open stream counts against \`MAX_WAITERS\`, together with held blocking
queries, and against the caller's own \`MAX_WAITERS_PER_CALLER\` (per token issuer and
subject, or per client address when anonymous). Refusals (\`400\`, \`401\`, \`429\`, \`503\`)
come before the stream starts, as problem details.

**When the registry ends a stream.** A client that stops reading is cut off once
\`CHANGE_STREAM_BUFFER_BYTES\` wait for it (one write's events always go out whole), and so is
one whose replay falls too far behind the live changes; a stream opened with a token ends
when the token expires (with a closing comment). In every case the client reconnects with
\`Last-Event-ID\` (and a fresh token) and loses nothing.`;

/**
 * `GET /changes`: the change feed (src/registry/change-feed.ts) as a text/event-stream,
 * resumable with Last-Event-ID (or `?since=`), heartbeats every 15 s, closed cleanly on shutdown.
 */
const changesRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const streams = eventStreams(fastify, { heartbeat: { everyMs: HEARTBEAT_MS, text: ': heartbeat\n\n' }, endOnClose: true });
  /**
   * A live write's text, made once for every stream with the same view (the feed hands them the
   * same array): an import of 5,000 services to 24 admin streams was 120,000 serialisations.
   */
  const liveTexts = new WeakMap<readonly ViewChange[], string>();
  const liveText = (events: readonly ViewChange[]): string => {
    let text = liveTexts.get(events);
    if (text === undefined) {
      text = sseChanges(events);
      liveTexts.set(events, text);
    }
    return text;
  };

  // No automatic HEAD route: it would hold a stream slot with nothing to send.
  app.get(
    '/changes',
    {
      exposeHeadRoute: false,
      // The view's refusal (401 under ANONYMOUS_DISCOVERY=none) comes before a bad index's 400.
      attachValidation: true,
      config: { invalidRequest: 'Last-Event-ID (or since) must be a registry index from this feed' },
      schema: {
        tags: ['discovery'],
        operationId: 'streamChanges',
        summary: "Follow the changes to the caller's view (server-sent events)",
        description: DESCRIPTION,
        security: ANYONE,
        querystring: ChangesQuerySchema,
        headers: ChangesHeadersSchema,
        response: {
          200: {
            description: 'The stream of changes; it stays open.',
            headers: {
              'Cache-Control': { description: 'Never stored.', required: true, schema: z.literal('no-cache') },
              'X-Registry-Index': headers['X-Registry-Index'],
            },
            content: {
              'text/event-stream': {
                schema: ChangeStreamSchema,
                events: { change: ChangeEventSchema },
                example:
                  ': connected\n\nevent: change\ndata: {"index":7,"op":"upsert","kind":"tool","name":"calculator"}\n\nid: 7\nevent: change\ndata: {"index":7,"op":"delete","kind":"tool","name":"weather_forecast"}\n\n: heartbeat\n\n',
              },
            },
          },
          400: problem(
            '`Last-Event-ID` (or `since`) is not a registry index, that is a non-negative integer (`TR_ERR_BAD_REQUEST`), or the `Authorization` header is malformed (`TR_ERR_INVALID_REQUEST`, with a `WWW-Authenticate` challenge).',
            {
              headers: { 'WWW-Authenticate': headers.MalformedAuthorizationChallenge },
              example: {
                type: 'urn:tool-registry:error:bad-request',
                title: 'Bad request',
                status: 400,
                detail: 'Last-Event-ID (or since) must be a registry index from this feed',
                code: 'TR_ERR_BAD_REQUEST',
                errors: [{ path: 'last-event-id', message: 'must be a registry index' }],
              },
            },
          ),
          401: problems.ViewUnauthorized,
          429: problems.TooManyRequests,
          503: problem(
            '`MAX_WAITERS` blocking queries and change streams are held already, or `MAX_WAITERS_PER_CALLER` by this caller (`TR_ERR_UNAVAILABLE`); `Retry-After` says when to retry.',
            {
              headers: { 'Retry-After': headers['Retry-After'] },
              example: waitersFullExample,
            },
          ),
        },
      },
    },
    async (request, reply) => {
      const key = viewKeyFor(request.caller, config.visibility, app.catalog.knownScopeNames);
      if (request.validationError) throw request.validationError;
      const admin = isAdmin(request.caller, config);
      const from = request.headers['last-event-id'] ?? request.query.since;
      const caller = callerKey(request);
      const stream = streams.open(request, reply, {
        hold: {
          slots: app.waiters,
          holder: caller,
          expiresAt: tokenExpiresAt(request, config.jwt.clockToleranceS),
          onExpired: (expired) =>
            expired.end(': the token has expired; reconnect with a fresh token and Last-Event-ID to resume\n\n', 1000),
        },
        // A write's events go out whole, so the bound is the larger of this and one write's events.
        maxBufferedBytes: config.changeStreamBufferBytes,
      });
      try {
        stream.start({ 'x-registry-index': String(app.catalog.index) });
        stream.write(': connected\n\n');
        // Dropped at once: a client that fell this far behind resumes from its Last-Event-ID.
        const onFellBehind = () => stream.cut();
        const subscription = app.changeFeed.subscribe({ from, key, admin, caller, onFellBehind }, async (events, phase, complete) => {
          if (phase === 'live') {
            stream.write(liveText(events));
            return;
          }
          // During the replay the registry waits for the client instead of cutting it off.
          await stream.drained();
          stream.write(sseChanges(events, complete));
        });
        stream.onEnd(subscription.close);
        // An index from the future (a reset or restored registry): the client must start over.
        if (subscription.reset) stream.write(sseEvent('reset', { index: subscription.index }));
        await subscription.caughtUp;
      } catch (err) {
        request.log.error({ err }, 'change stream failed');
        stream.cut();
      }
      return reply;
    },
  );
};

export default changesRoutes;
