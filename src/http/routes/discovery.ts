import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CatalogView, ViewPlan } from '../../catalog/catalog.js';
import { exportOf, exportPageOf, type ExportBody } from '../../catalog/exports.js';
import type { Config } from '../../config.js';
import {
  DiscoveryPageSchema,
  DiscoveryQuerySchema,
  DiscoveryResponseSchema,
  MAX_CURSOR_LENGTH,
  MAX_PAGE_SIZE,
  MAX_WAIT_MS,
} from '../../model/api.js';
import {
  AgUiToolSchema,
  AnthropicToolSchema,
  McpExportSchema,
  OpenAiChatToolSchema,
  OpenAiResponsesToolSchema,
  OpenAiStrictExportSchema,
  type ExportFormat,
} from '../../model/exports.js';
import { viewKeyFor, type ViewKey } from '../../model/visibility.js';
import { callerKey } from '../caller-key.js';
import { answerBlocks, CallerKindBlocks, ifNoneMatch, viewCachePolicy, type AnswerBlocks } from '../conditional.js';
import { exemptFromIdleTimeout } from '../plugins/connections.js';
import { ANYONE, empty, headers, problem, problems, waitersFullExample } from '../openapi/responses.js';
import { tokenExpiresAt } from '../token-expiry.js';
import { documentedOnly, withFastPath } from '../validation.js';

const viewHeaders = {
  ETag: headers.ViewETag,
  Link: {
    description:
      'Exports (`format`) with `limit`, `cursor`, `q`, `scope` or `updated_since` only, and not on the last page: the next page\'s URL, `<...>; rel="next"` (RFC 8288).',
    required: false,
    schema: z.string().regex(/^<[^>]+>; rel="next"$/),
  },
  'X-Registry-Index': headers['X-Registry-Index'],
  'X-Hidden-Tools': headers['X-Hidden-Tools'],
  'Cache-Control': headers.DiscoveryCacheControl,
  Vary: headers.VaryAuthorization,
};

const DiscoveryHeadersSchema = z.object({
  'If-None-Match': z
    .string()
    .optional()
    .describe(
      "Entity tags from earlier answers (comma-separated), or `*`. A `W/` prefix is ignored (weak comparison). When one matches the current view's `ETag`, the answer is `304`.",
    ),
});

/** A page's size as zod's `z.coerce.number().int().min(1).max(MAX_PAGE_SIZE)` takes it, written plainly. */
const PLAIN_LIMIT = /^[1-9][0-9]{0,3}$/;

/**
 * The query of a page walk (`limit` and `cursor`, nothing else), as DiscoveryQuerySchema parses
 * it; anything else (other parameters, repeats, odd spellings, refusals) goes to zod.
 */
const DiscoveryQueryChecked = withFastPath(DiscoveryQuerySchema, (query) => {
  let value: { limit?: number; cursor?: string } | undefined;
  for (const key in query) {
    const given = query[key];
    if (typeof given !== 'string') return undefined;
    if (key === 'limit') {
      const limit = PLAIN_LIMIT.test(given) ? Number(given) : Infinity;
      if (limit > MAX_PAGE_SIZE) return undefined;
      (value ??= {}).limit = limit;
    } else if (key === 'cursor' && given.length <= MAX_CURSOR_LENGTH) (value ??= {}).cursor = given;
    else return undefined;
  }
  return value;
});

const DESCRIPTION = `Without query parameters, returns the article's discovery document: the registry's name,
the protocol, and every live tool in the caller's view, sorted by name. The body is
precomputed per view and carries a strong \`ETag\`; send it back in \`If-None-Match\` to get
\`304 Not Modified\`.

**Blocking queries** (Consul's semantics). With \`index\` set to the \`X-Registry-Index\` of
an earlier answer, the request is held until the caller's view changes after that index
(a write that leaves the view's bytes alone does not count) or until \`wait\` ends, then
answered as above with the registry's current \`X-Registry-Index\` (pass it as the next
\`index\`). \`If-None-Match\` still applies, so a wait that ends without a change can answer
\`304\`. The answer comes at once when the view already changed after \`index\`, and when
\`index\` is ahead of the registry (a reset or restored registry: start again from the index
answered). An answer may also come early without a change (for instance for a view the
registry has not built since it started), so compare the \`ETag\`. A held query counts
against \`MAX_WAITERS\` (with the open \`GET /changes\` streams) and against the caller's own
\`MAX_WAITERS_PER_CALLER\` (per token issuer and subject, or per client address when
anonymous); past either the answer is \`503\` with \`Retry-After\`. A query made with a token
is answered by the time the token expires. On shutdown held queries are answered at once.

**Pages, search and filters.** With any of \`limit\`, \`cursor\`, \`q\`, \`scope\` or
\`updated_since\`, the answer is built for the request (\`DiscoveryPage\`: the same fields
plus \`nextCursor\`). It carries \`X-Registry-Index\` (the registry's current index),
\`Cache-Control\` and \`Vary\`, but no \`ETag\` or \`X-Hidden-Tools\`; \`If-None-Match\`, \`index\`
and \`wait\` are ignored (not so with \`format\`: see *Exports*).

- *Pages*: up to \`limit\` tools (default 100) in name order, and \`nextCursor\`, the
  \`cursor\` for the next page (\`null\` on the last). A walk is pinned to the registry index
  of its first page, so writes during the walk neither skip nor repeat a tool: tools
  created after page one are left out, tools deleted since are still listed, as
  tombstones (\`status: deleted\`), and tools changed since are listed as they are now. This
  holds for names deleted and registered again any number of times, and across restarts of
  the registry. A page costs what it holds, whatever the size of the catalogue.
- *Search* (\`q\`): live tools ranked by how well they match the words of \`q\` (its
  first 16): a tool named exactly \`q\` first, then tools matching more of the words, then
  by relevance (BM25, a word in the name weighing five times one in the description).
  Words match their inflections (\`add\` finds "adds", "adding"), names are split into
  their words (\`fetch_weather\`, \`fetchWeather\`), and the last word also matches as the
  start of a longer one (\`weath\`). The first \`limit\` results in the caller's view; no
  cursor (\`nextCursor\` is \`null\`, \`cursor\` is ignored); a \`q\` with no words finds
  nothing. A tool written by a large import is found within about a second of it.
- *Changes* (\`updated_since\`): the tools created, replaced or deleted at or after that
  time (tombstones of deleted tools included), in the order the changes were made, each
  once, as it is now. The walk follows writes made during it: a tool changed again after it
  was served comes again, later, with its new content, so a mirror that applies pages in
  order ends up current. Its cursor is not interchangeable with a name-order cursor (\`400\`).
- *Filters*: \`scope\` keeps the tools that list that scope among theirs. Filters combine
  with each other, with pages and with \`q\` (which finds live tools only), and never widen
  the caller's view.

**Exports** (\`format\`). The caller's view in the shape a model vendor's SDK or a protocol
takes, to pass on as it comes: \`openai\` (Chat Completions \`tools\`:
\`{type: "function", function: {name, description, parameters}}\`; also what LangChain's
\`bindTools\` takes), \`openai-responses\` (the Responses API's \`{type: "function", name,
description, parameters, strict: false}\`), \`openai-strict\` (\`{tools, skipped}\`: the tools
whose input schema meets OpenAI's strict mode, with \`strict: true\`, an optional property made
required with \`null\` allowed; \`skipped\` names the others with the reason), \`anthropic\`
(Messages API \`{name, description, input_schema}\`), \`mcp\` (an MCP \`tools/list\` result,
\`{tools}\`), \`ag-ui\` (AG-UI \`{name, description, parameters}\`) and \`prompt\` (the article's
"Available tools:" text, one \`- name(parameters): description\` line per tool, as
\`text/plain\`). The full view in a format is built once per view and carries its own strong
\`ETag\` (never the plain document's), with \`If-None-Match\` and blocking queries as above.
With \`limit\`, \`cursor\`, \`q\`, \`scope\` or \`updated_since\`, an export holds the same
tools in the same order as the plain answer (pinned walks and cursors alike), less tombstones,
which no format can express; the next page's URL is in \`Link: <...>; rel="next"\` (and
\`nextCursor\` in the body for \`mcp\`, absent on the last page, and \`openai-strict\`, \`null\`
on the last). Such an answer is built for the request, costs what the page holds, and has a
strong \`ETag\` of its own (\`304\` with \`If-None-Match\`); with \`index\` it is a blocking
query, held until the caller's view changes (a change elsewhere in the view also answers it:
compare the \`ETag\`). An unknown format is \`400\`, naming the formats.

A malformed query parameter is \`400\`, after the view's own refusal (\`401\` under
\`ANONYMOUS_DISCOVERY=none\`).`;

/**
 * `GET /`: the caller's view, served as precomputed bytes with a strong ETag. With `index`
 * (and `wait`), a blocking query; with `limit`/`cursor`, `q`, `scope` or `updated_since`, a
 * page, a search or a filter built for the request; with `format`, any of these in another
 * vendor's or protocol's shape (src/catalog/exports.ts).
 */
const discoveryRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const cachePolicy = viewCachePolicy(config.anonymousMaxAgeS);
  const cacheHeaders = (reply: FastifyReply, tokenView: boolean) => reply.headers(tokenView ? cachePolicy.token : cachePolicy.anonymous);
  /**
   * The headers of a full view's answers (plain or in a format), built on its first answer to
   * each kind of caller and kept as long as the view: its ETag, index and hidden count never
   * change, so the hot read and its 304 write one block with no strings built per request.
   */
  const viewBlocks = new CallerKindBlocks<ViewPlan | ExportBody>();
  const blocksOf = (view: ViewPlan, sent: ViewPlan | ExportBody, contentType: string, tokenView: boolean): AnswerBlocks =>
    viewBlocks.get(sent, tokenView) ??
    viewBlocks.keep(
      sent,
      tokenView,
      // In the order these were set one by one before (issue 33), the 304's being the 200's but
      // Content-Type: RFC 9110 section 15.4.5 asks a 304 for the ETag, Cache-Control and Vary.
      answerBlocks(
        {
          etag: sent.etag,
          'x-registry-index': String(view.index),
          // Tells an agent its token hides tools, so it knows to ask for more scopes.
          ...(tokenView && { 'x-hidden-tools': String(view.hidden) }),
          ...(tokenView ? cachePolicy.token : cachePolicy.anonymous),
        },
        contentType,
      ),
    );
  /** `GET /` as agents reach it: PUBLIC_URL's origin and path. */
  const rootUrl = `${config.publicUrl.origin}${config.publicUrl.pathname.replace(/\/+$/, '')}/`;

  app.get(
    '/',
    {
      // The view's refusal (401 under ANONYMOUS_DISCOVERY=none) comes before a bad query's 400.
      attachValidation: true,
      config: { invalidRequest: 'invalid discovery query' },
      schema: {
        tags: ['discovery'],
        operationId: 'discoverTools',
        summary: "Discover the tools in the caller's view",
        description: DESCRIPTION,
        security: ANYONE,
        querystring: DiscoveryQueryChecked,
        // Read by the handler as it came: the hot path parses no headers.
        headers: documentedOnly(DiscoveryHeadersSchema),
        response: {
          200: {
            description:
              "The caller's view of the catalogue (`DiscoveryResponse`, sent as precomputed bytes), a page, search or filter result (`DiscoveryPage`), or either in the shape `format` names.",
            headers: viewHeaders,
            content: {
              'application/json': {
                schema: z.union([
                  DiscoveryResponseSchema,
                  DiscoveryPageSchema,
                  z.array(OpenAiChatToolSchema).describe('`format=openai`'),
                  z.array(OpenAiResponsesToolSchema).describe('`format=openai-responses`'),
                  OpenAiStrictExportSchema,
                  z.array(AnthropicToolSchema).describe('`format=anthropic`'),
                  McpExportSchema,
                  z.array(AgUiToolSchema).describe('`format=ag-ui`'),
                ]),
              },
              'text/plain': {
                schema: z
                  .string()
                  .describe('`format=prompt`: "Available tools:", then one `- name(parameters): description` line per tool.'),
              },
            },
          },
          304: empty('The view still matches an entity tag given in `If-None-Match`; no body.', { ...viewHeaders, ETag: headers.ETag }),
          400: problem(
            'A query parameter is malformed or out of range (`TR_ERR_BAD_REQUEST`, with one entry in `errors` per parameter, `path` being its name), the cursor is not one this registry gave out or comes from a registry index ahead of the current one (`TR_ERR_BAD_REQUEST`; start the walk again), or the `Authorization` header is malformed (`TR_ERR_INVALID_REQUEST`, with a `WWW-Authenticate` challenge).',
            {
              headers: { 'WWW-Authenticate': headers.MalformedAuthorizationChallenge },
              example: {
                type: 'urn:tool-registry:error:bad-request',
                title: 'Bad request',
                status: 400,
                detail: 'invalid discovery query',
                code: 'TR_ERR_BAD_REQUEST',
                errors: [{ path: 'wait', message: 'must look like 30s, 5m or 1500ms' }],
              },
            },
          ),
          401: problems.ViewUnauthorized,
          429: problems.TooManyRequests,
          503: problem(
            'A blocking query would be held while `MAX_WAITERS` blocking queries and change streams are held already, or `MAX_WAITERS_PER_CALLER` by this caller (`TR_ERR_UNAVAILABLE`, with `Retry-After`).',
            {
              headers: {
                'Retry-After': {
                  ...headers['Retry-After'],
                  required: false,
                  description: 'Seconds to wait before retrying; sent when `MAX_WAITERS` or `MAX_WAITERS_PER_CALLER` was reached.',
                },
              },
              example: waitersFullExample,
            },
          ),
        },
      },
    },
    // Not async: the plain `GET /` (and its 304) is answered before the handler returns, with no
    // promise for Fastify to wait on (an async handler's promise, resolved with the reply, cost
    // the hot path a microtask round and a `then` lookup); only a blocking query returns one.
    (request, reply) => {
      const key = viewKeyFor(request.caller, config.visibility, app.catalog.knownScopeNames);
      if (request.validationError) throw request.validationError;
      const tokenView = request.caller.kind === 'token';
      const query = request.query;
      const format = query.format;
      const listed =
        query.limit !== undefined ||
        query.cursor !== undefined ||
        query.q !== undefined ||
        query.scope !== undefined ||
        query.updated_since !== undefined ||
        query.passing === true;
      if (listed && format === undefined) {
        return whenSearchable(query, () => {
          // The entries' bytes as they were serialised once per write, the body kept until the
          // next write (src/catalog/listing.ts): nothing is serialised here.
          const listing = app.listing.body(key, listingQuery(query));
          cacheHeaders(reply, tokenView);
          reply.header('x-registry-index', String(listing.index));
          return reply.type('application/json; charset=utf-8').send(listing.body);
        });
      }
      if (query.index !== undefined) return heldQuery(request, reply, key, query, query.index, tokenView, listed);
      if (listed && format !== undefined)
        return whenSearchable(query, () => sendExportPage(reply, key, query, format, tokenView, request.headers['if-none-match']));
      // Without `index`, the plain rediscovery call: the hot path.
      sendView(reply, app.catalog.view(key), key.kind, tokenView, request.headers['if-none-match'], format);
    },
  );

  /**
   * Answers at once, or, for a search, once every tool written before it is searchable: a big
   * write is indexed in slices after it (Catalog.searchable), and a search should find
   * what was written before it was asked. A second or two at most.
   */
  function whenSearchable<T>(query: DiscoveryQuery, answer: () => T): T | Promise<T> {
    const pending = query.q === undefined ? null : app.catalog.searchable();
    return pending === null ? answer() : pending.then(answer);
  }

  /** A blocking query (`index`): held until the caller's view changes after it, or `wait` ends. */
  async function heldQuery(
    request: FastifyRequest,
    reply: FastifyReply,
    key: ViewKey,
    query: DiscoveryQuery,
    index: number,
    tokenView: boolean,
    listed: boolean,
  ) {
    // Consul adds up to wait/16 of jitter so that many clients do not return in step.
    const waitMs = (query.wait ?? 5 * 60_000) * (1 + Math.random() / 16);
    // A held query is answered by the time the caller's token stops being accepted.
    const expiresAt = tokenExpiresAt(request, config.jwt.clockToleranceS);
    const untilExpiry = expiresAt === undefined ? Infinity : Math.max(0, expiresAt - Date.now());
    const wait = app.waiters.wait(key, index, Math.min(waitMs, MAX_WAIT_MS * (1 + 1 / 16), untilExpiry), callerKey(request));
    exemptFromIdleTimeout(request);
    const onClose = () => wait.cancel();
    reply.raw.once('close', onClose);
    let view: CatalogView;
    try {
      // Resolved with the view as it is when the waiter is answered: the current index.
      view = await wait.view;
    } finally {
      reply.raw.off('close', onClose);
    }
    const format = query.format;
    if (listed && format !== undefined) return sendExportPage(reply, key, query, format, tokenView, request.headers['if-none-match']);
    sendView(reply, view, key.kind, tokenView, request.headers['if-none-match'], format);
    return reply;
  }

  /**
   * A page, search or filter in a format: the same listing as the plain answer's (src/catalog/
   * listing.ts), its tools in the format's shape, built for the request, with an ETag of its own.
   */
  function sendExportPage(
    reply: FastifyReply,
    key: ViewKey,
    query: DiscoveryQuery,
    format: ExportFormat,
    tokenView: boolean,
    ifNoneMatchHeader: string | undefined,
  ) {
    const listing = app.listing.list(key, listingQuery(query));
    // What chose the page, as the next page's URL repeats it (never `index` or `wait`).
    const chosen = new URLSearchParams({ format });
    if (query.limit !== undefined) chosen.set('limit', String(query.limit));
    if (query.q !== undefined) chosen.set('q', query.q);
    if (query.scope !== undefined) chosen.set('scope', query.scope);
    if (query.updated_since !== undefined) chosen.set('updated_since', query.updated_since);
    if (query.passing === true) chosen.set('passing', 'true');
    const sent = exportPageOf(listing, format, `${chosen.toString()}\u0000${query.cursor ?? ''}`);
    reply.header('etag', sent.etag).header('x-registry-index', String(listing.index));
    if (listing.nextCursor !== null) {
      chosen.set('cursor', listing.nextCursor);
      reply.header('link', `<${rootUrl}?${chosen.toString()}>; rel="next"`);
    }
    cacheHeaders(reply, tokenView);
    if (ifNoneMatch(ifNoneMatchHeader, sent.etag)) return reply.code(304).send();
    return reply.type(sent.contentType).send(sent.body);
  }

  function sendView(
    reply: FastifyReply,
    view: CatalogView,
    kind: ViewKey['kind'],
    tokenView: boolean,
    ifNoneMatchHeader: string | undefined,
    format: ExportFormat | undefined,
  ) {
    // An export's bytes are built once per view and format (src/catalog/exports.ts), from its
    // plan, which outlives a body pushed out of the byte budget; so do the header blocks.
    const exported = format === undefined ? undefined : exportOf(view.plan, format);
    const sent = exported ?? view.plan;
    const notModified = ifNoneMatch(ifNoneMatchHeader, sent.etag);
    app.metrics.viewServed(kind, notModified);
    const blocks = blocksOf(view.plan, sent, exported?.contentType ?? JSON_TYPE, tokenView);
    if (notModified) reply.code(304).headers(blocks.notModified).send();
    // Bytes, which Fastify sends as they are: no serialisation on the hot path.
    else reply.headers(blocks.ok).send(exported?.body ?? view.body);
  }
};

const JSON_TYPE = 'application/json; charset=utf-8';

type DiscoveryQuery = z.infer<typeof DiscoveryQuerySchema>;

const listingQuery = (query: DiscoveryQuery) => ({
  limit: query.limit,
  cursor: query.cursor,
  q: query.q,
  scope: query.scope,
  updatedSince: query.updated_since,
  passing: query.passing === true,
});

export default discoveryRoutes;
