/**
 * What the OpenAPI document says about the API as a whole; every operation comes from its
 * route's schema (src/http/routes), through src/http/openapi/transform.ts.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { stringify } from 'yaml';
import type { Config } from '../../config.js';

const DESCRIPTION = `Agents call \`GET /\` to discover the tools their token lets them use, and keep up with changes
through conditional requests, blocking queries or the \`GET /changes\` event stream (see
*Rediscovery*). Operators register tools at runtime, either HTTP tools (the discovery
article's form) or message-bus tools carried by a *tool service* (a pair of Pulsar queues).
Agents call tools of either kind through \`POST /tools/{name}/invoke\`; dashboards read
\`GET /stats\`.

This document is generated from the routes' schemas; the registry serves it at
\`/openapi.json\` and \`/openapi.yaml\`, and as pages to read and try at \`/docs\`.

**Authentication.** Credentials are an \`Authorization: Bearer <JWT>\` header. Scopes are read
from the \`scope\` (space-separated), \`scp\` and \`scopes\` claims. A request without the header
is anonymous; a request whose header is present but malformed gets \`400\`
(\`TR_ERR_INVALID_REQUEST\`), and one whose token does not verify gets \`401\`
(\`TR_ERR_INVALID_TOKEN\`) on every route except \`/healthz\`, \`/readyz\`, \`/openapi.json\`,
\`/openapi.yaml\`, \`/docs\` and \`/.well-known/oauth-protected-resource\`, which ignore
credentials. Tokens in an \`access_token\` query parameter are refused with \`401\` (with \`400\`,
\`invalid_request\`, when an \`Authorization\` header comes too). Clients find the authorization
server through the protected-resource metadata (RFC 9728), which every Bearer challenge names in
its \`resource_metadata\` parameter.

**Admin scope.** Every write, every \`/tool-services\` route, \`GET /export\`, \`POST /import\` and
\`GET /audit\` need a token carrying the admin scope, set by \`ADMIN_SCOPE\` (default
\`registry:write\`). Without a token such routes answer \`401\`; with a token lacking the scope,
\`403\`. Both carry a \`WWW-Authenticate: Bearer\` challenge (RFC 6750) naming the scope. These
refusals come before the body is read.

**Views.** What a caller sees in \`GET /\`, \`GET /changes\`, \`GET /stats\`, \`GET /tools/{name}\`
and \`GET /tools/{name}/access\` depends on the caller: a token sees the tools that need no
scope plus those any of whose scopes it holds; anonymous callers follow
\`ANONYMOUS_DISCOVERY\` (\`full\`: every tool, \`public\`: tools needing no scope, \`none\`: \`401\`).

**Errors.** Every 4xx and 5xx answer is \`application/problem+json\` (RFC 9457) with a stable
\`code\` and a \`type\` URI derived from it (\`urn:tool-registry:error:...\`). A query parameter,
path parameter or header that does not fit its schema is \`400\` (\`TR_ERR_BAD_REQUEST\`), with one
entry in \`errors\` per problem, its \`path\` the parameter's name. What is refused before any
route runs is listed on every operation it can reach: \`400\` for a request that is not valid
HTTP or has a malformed URL, \`408\` past \`HEADERS_TIMEOUT_MS\` or \`REQUEST_TIMEOUT_MS\`, \`414\`
for a path parameter over 200 characters, \`431\` past \`MAX_HEADER_SIZE\` (the request line
included), \`413\` past \`BODY_LIMIT\` and \`415\` for a body that is not JSON (with any method
but GET and HEAD), \`429\` where rate limiting counts, and \`503\` on a connection kept for
health probes (past \`MAX_CONNECTIONS_PER_ADDRESS\` or \`MAX_CONNECTIONS\`), where only
\`/healthz\` and \`/readyz\` are answered.

**Calling tools.** \`POST /tools/{name}/invoke\` needs a bearer token, and one of the tool's
own scopes when it has any (the admin scope plays no part). The answer is JSON, or a stream
of server-sent events when \`Accept\` includes \`text/event-stream\`.

**Rate limits.** Every route except \`/healthz\`, \`/readyz\`, \`/openapi.json\`, \`/openapi.yaml\`,
\`/docs\` and \`/.well-known/oauth-protected-resource\` counts requests per caller (token issuer
and subject, or client address when anonymous) per window of \`RATE_LIMIT_WINDOW_S\` seconds.
Reads and tool calls share one count, limited by \`RATE_LIMIT_MAX\`; each write route that needs
the admin scope (\`POST /tools/register\`, \`PUT\` and \`DELETE\` on \`/tools/{name}\` and
\`/tool-services/{id}\`, \`POST /import\`) keeps a count of its own, limited by
\`RATE_LIMIT_WRITE_MAX\`, which reads do not use up. A request past its limit is refused with
\`429\` (\`TR_ERR_TOO_MANY_REQUESTS\`, with \`Retry-After\`). \`RATE_LIMIT_MAX=0\` turns rate
limiting off.

**Registry index.** Every committed write increments one registry-wide counter; writes return
it in \`X-Registry-Index\` and stamp it on what they touched (\`index\`, \`createdIndex\`).

**Rediscovery.** Agents and mirrors keep their copy of the catalogue current without polling
in one of three ways: a conditional \`GET /\` (\`If-None-Match\` with the last \`ETag\`, answered
\`304\` while the view is unchanged); a blocking query (\`GET /?index=<X-Registry-Index>&wait=5m\`,
held until the caller's view changes); or the \`GET /changes\` event stream, resumable with
\`Last-Event-ID\`. Held blocking queries and open change streams together are limited to
\`MAX_WAITERS\`; past it both answer \`503\` with \`Retry-After\`. Large catalogues can be read in
pages pinned to one registry index, searched (\`q\`) and filtered (\`scope\`, \`updated_since\`).

Every response carries an \`X-Request-Id\` header (echoing a client-supplied \`X-Request-Id\`
or a generated UUID).
`;

const BEARER_DESCRIPTION = `A JWT access token (RFC 9068): HS256 with \`JWT_SECRET\`, RS256/ES256 with
\`JWT_PUBLIC_KEY\`, or keys from a JWKS (\`JWKS_URL\`, or discovered from \`JWT_ISSUER\`).
\`exp\` is required; the header \`typ\` must be one of \`JWT_TYP\` (default \`at+jwt\`); \`iss\`
and \`aud\` are checked when \`JWT_ISSUER\` / \`JWT_AUDIENCE\` are set (with a JWKS, \`aud\`
defaults to \`RESOURCE_URL\`). Scopes come from the \`scope\`, \`scp\` and \`scopes\` claims, plus
\`roles\`, \`groups\` and \`realm_access.roles\` values mapped by \`ROLE_SCOPES\`. The scope listed on
the admin operations is this registry's \`ADMIN_SCOPE\`.
`;

/** The document's fixed parts, for @fastify/swagger's `openapi` option. */
export function documentBase(config: Config, version: string): NonNullable<FastifyDynamicSwaggerOptions['openapi']> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'tool-registry',
      version,
      summary: 'An HTTP registry where AI agents discover the tools they may use.',
      description: DESCRIPTION,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: config.publicUrl.href.replace(/\/$/, ''), description: 'This registry (PUBLIC_URL)' }],
    tags: [
      { name: 'discovery', description: 'What agents read.' },
      { name: 'tools', description: 'Registering, replacing and deleting tools.' },
      { name: 'tool-services', description: 'Message-bus services that carry tool calls (admin only; they name queues).' },
      {
        name: 'mcp-servers',
        description: 'Upstream MCP servers whose tools the registry lists and calls (admin only; they hold credentials).',
      },
      { name: 'calls', description: 'Calling tools through the registry.' },
      { name: 'bulk', description: 'Import and export of the whole registry.' },
      { name: 'operations', description: 'Health checks, protected-resource metadata, the audit log and this document.' },
    ],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: BEARER_DESCRIPTION },
      },
    },
  };
}

/**
 * The document as YAML: prose as literal blocks, no line folding, and no anchors where the
 * document object shares a value between operations, so the file reads like a hand-written one.
 */
export function documentYaml(document: object): string {
  return stringify(document, { lineWidth: 0, aliasDuplicateObjects: false });
}
