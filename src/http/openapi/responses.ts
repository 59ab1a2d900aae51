/**
 * The pieces route schemas build their `response` maps from, in Fastify's own form
 * (`{ description, headers, content: { [mediaType]: { schema, example } } }`), so that the zod
 * schemas type each handler's answers and the document says which media type, headers and
 * prose go with each status. Responses and headers defined here once are shared: the document
 * lists them under `components` and operations refer to them.
 */
import { z } from 'zod';
import { ProblemSchema, type Problem } from '../../model/api.js';
import { PROBLEM_CONTENT_TYPE } from '../plugins/errors.js';

/** An OpenAPI Header Object, its value's schema in zod. */
export interface HeaderDoc {
  description: string;
  required?: boolean;
  schema: z.ZodType;
}

export interface MediaDoc<S extends z.ZodType = z.ZodType> {
  schema: S;
  example?: unknown;
  /** For `text/event-stream`: each event's name and the schema of its JSON `data` (`x-events`). */
  events?: Record<string, z.ZodType>;
}

export interface ResponseDoc<C extends Record<string, MediaDoc> = Record<string, MediaDoc>> {
  description: string;
  headers?: Record<string, HeaderDoc>;
  content?: C;
}

/** A response without a body (304). */
export interface EmptyResponseDoc {
  description: string;
  headers?: Record<string, HeaderDoc>;
}

const Digits = z.string().regex(/^[0-9]+$/);
const EntityTag = z.string().regex(/^"[A-Za-z0-9_-]+"$/);

/** Headers, by the name `components.headers` gives them. */
export const headers = {
  Deprecation: {
    description: 'On a deprecated tool only (issue 34, RFC 9745): `@` and the Unix time in seconds the deprecation was set.',
    required: false,
    schema: z.string().regex(/^@-?[0-9]+$/),
  },
  Sunset: {
    description: 'On a deprecated tool with a sunset only (RFC 8594): when it stops working, as an HTTP date.',
    required: false,
    schema: z.string(),
  },
  DeprecationLink: {
    description: 'On a deprecated tool with a replacement only: `<{PUBLIC_URL}/tools/{replacement}>; rel="successor-version"`.',
    required: false,
    schema: z.string(),
  },
  ETag: {
    description: 'Strong entity tag over the exact body of this view (a quoted base64url string).',
    required: true,
    schema: EntityTag,
  },
  RecordETag: {
    description:
      "Strong entity tag of the stored record as written (what an admin's `GET /tools/{name}`, or `GET /tool-services/{id}`, answers with): send it in `If-Match` to make the next write conditional on it.",
    required: true,
    schema: EntityTag,
  },
  ViewETag: {
    description:
      'Strong entity tag over the exact body of this view (a quoted base64url string). Sent with the full view, and with exports (`format`) whether paged, searched or filtered or not; not with plain pages, search or filter results.',
    required: false,
    schema: EntityTag,
  },
  'X-Registry-Index': {
    description:
      'The registry index: for `GET /`, the index the answer was built at (the current one; for a page, not the index the walk is pinned to); for `GET /changes`, the index when the stream opened; for writes, the index of the write.',
    required: true,
    schema: Digits,
  },
  DiscoveryCacheControl: {
    description:
      '`private, no-cache` for callers with a token; for anonymous callers `public, no-cache`, or `public, max-age=N` when `ANONYMOUS_MAX_AGE_S` is set (shared caches may then keep the anonymous view for that many seconds).',
    required: true,
    schema: z.string().regex(/^(private, no-cache|public, no-cache|public, max-age=[0-9]+)$/),
  },
  'X-Hidden-Tools': {
    description:
      "Callers with a token only: how many live tools the token's scopes hide from this view, so an agent knows to ask for more scopes.",
    required: false,
    schema: Digits,
  },
  VaryAuthorization: { description: "The view depends on the caller's token.", required: true, schema: z.literal('Authorization') },
  ToolLocation: { description: "The tool's URL, `/tools/{name}`.", required: true, schema: z.string().regex(/^\/tools\//) },
  'WWW-Authenticate': {
    description:
      'RFC 6750 Bearer challenge with `realm="tool-registry"`, `resource_metadata` (the URL of the RFC 9728 protected-resource metadata) and, as applicable, `error` (`invalid_request`, `invalid_token` or `insufficient_scope`), `error_description` and `scope` (the scopes that would do).',
    required: true,
    schema: z.string().regex(/^Bearer realm="tool-registry"/),
  },
  MalformedAuthorizationChallenge: {
    description: 'Present when the `Authorization` header was malformed (a Bearer challenge with `error="invalid_request"`).',
    required: false,
    schema: z.string().regex(/^Bearer realm="tool-registry"/),
  },
  'Retry-After': { description: 'Seconds to wait before retrying.', required: true, schema: Digits },
} as const satisfies Record<string, HeaderDoc>;

/** A JSON answer. */
export function json<S extends z.ZodType>(
  schema: S,
  description: string,
  options: { headers?: Record<string, HeaderDoc>; example?: unknown } = {},
) {
  return {
    description,
    ...(options.headers && { headers: options.headers }),
    content: { 'application/json': { schema, ...(options.example !== undefined && { example: options.example }) } },
  } satisfies ResponseDoc;
}

/** A problem-details answer (src/http/plugins/errors.ts writes every 4xx and 5xx this way). */
export function problem(description: string, options: { headers?: Record<string, HeaderDoc>; example?: Problem } = {}) {
  return {
    description,
    ...(options.headers && { headers: options.headers }),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: ProblemSchema, ...(options.example !== undefined && { example: options.example }) } },
  } satisfies ResponseDoc;
}

export function empty(description: string, responseHeaders?: Record<string, HeaderDoc>): EmptyResponseDoc {
  return { description, ...(responseHeaders && { headers: responseHeaders }) };
}

const malformedAuthorization = { 'WWW-Authenticate': headers.MalformedAuthorizationChallenge };
const challenge = { 'WWW-Authenticate': headers['WWW-Authenticate'] };

/** Problem responses, by the name `components.responses` gives them. */
export const problems = {
  BadRequest: problem(
    'The request is malformed: most often a malformed `Authorization` header (`TR_ERR_INVALID_REQUEST`, with a `WWW-Authenticate` challenge), or a path or query parameter that does not fit its schema (`TR_ERR_BAD_REQUEST`).',
    {
      headers: malformedAuthorization,
      example: {
        type: 'urn:tool-registry:error:invalid-request',
        title: 'Malformed Authorization header',
        status: 400,
        detail: 'only the Bearer authorization scheme is supported',
        code: 'TR_ERR_INVALID_REQUEST',
      },
    },
  ),
  ValidationFailed: problem(
    'The body is not a valid descriptor or bundle (`TR_ERR_VALIDATION`, with one entry in `errors` per problem), is not valid JSON (`TR_ERR_INVALID_JSON`), or the request is otherwise malformed (`TR_ERR_BAD_REQUEST`, `TR_ERR_INVALID_REQUEST` for a malformed `Authorization` header, which also carries a `WWW-Authenticate` challenge).',
    {
      headers: malformedAuthorization,
      example: {
        type: 'urn:tool-registry:error:validation',
        title: 'The request body is not a valid descriptor',
        status: 400,
        detail: 'invalid message-bus tool: service: unknown tool service "joke-service"',
        code: 'TR_ERR_VALIDATION',
        errors: [{ path: 'service', message: 'unknown tool service "joke-service"' }],
      },
    },
  ),
  Unauthorized: problem(
    'No bearer token (`TR_ERR_UNAUTHENTICATED`; the challenge names the admin scope), or the token is not valid (`TR_ERR_INVALID_TOKEN`, `error="invalid_token"`).',
    {
      headers: challenge,
      example: {
        type: 'urn:tool-registry:error:unauthenticated',
        title: 'A bearer token is required',
        status: 401,
        detail: 'registering a tool needs a bearer token with scope registry:write',
        code: 'TR_ERR_UNAUTHENTICATED',
      },
    },
  ),
  ViewUnauthorized: problem(
    "The token is not valid (`TR_ERR_INVALID_TOKEN`), or the caller is anonymous and `ANONYMOUS_DISCOVERY` is `none` (`TR_ERR_UNAUTHENTICATED`; the challenge's `scope` lists the scopes that show tools).",
    {
      headers: challenge,
      example: {
        type: 'urn:tool-registry:error:invalid-token',
        title: 'The bearer token is not valid',
        status: 401,
        detail: 'the token has expired',
        code: 'TR_ERR_INVALID_TOKEN',
      },
    },
  ),
  InvalidToken: problem('The token is not valid (`TR_ERR_INVALID_TOKEN`, `error="invalid_token"`).', { headers: challenge }),
  Forbidden: problem('The token lacks the admin scope (`TR_ERR_INSUFFICIENT_SCOPE`, `error="insufficient_scope"`).', {
    headers: challenge,
    example: {
      type: 'urn:tool-registry:error:insufficient-scope',
      title: 'The token lacks a required scope',
      status: 403,
      detail: 'registering a tool needs scope registry:write',
      code: 'TR_ERR_INSUFFICIENT_SCOPE',
    },
  }),
  NotFound: problem("No such live tool or tool service, or the tool is not in the caller's view (`TR_ERR_NOT_FOUND`).", {
    example: {
      type: 'urn:tool-registry:error:not-found',
      title: 'Not found',
      status: 404,
      detail: 'no tool "calculator"',
      code: 'TR_ERR_NOT_FOUND',
    },
  }),
  PreconditionFailed: problem(
    '`If-Match` or `If-None-Match` does not hold for the tool (or tool service) as stored now (`TR_ERR_PRECONDITION_FAILED`): it changed, does not exist, or exists. Nothing was written.',
    {
      example: {
        type: 'urn:tool-registry:error:precondition-failed',
        title: 'A precondition of the request does not hold',
        status: 412,
        detail: 'tool "calculator" has changed: its entity tag is "r4Zk0TqS3Qm3m3a4xq0S8FfS2wB" (If-Match)',
        code: 'TR_ERR_PRECONDITION_FAILED',
      },
    },
  ),
  WriteConflict: problem(
    "The write conflicts with the stored registry (`TR_ERR_CONFLICT`): a storage constraint, or a `DELETE` of a tool of an upstream MCP server, which only its sync removes, or an announcement over one (`mcpServer` names the server; an operator's register, `PUT` or import of such a name takes it over instead).",
    {
      example: {
        type: 'urn:tool-registry:error:conflict',
        title: 'Conflict',
        status: 409,
        detail: 'tool "gh_search" belongs to MCP server "github", which manages it: change or delete the server instead',
        code: 'TR_ERR_CONFLICT',
        mcpServer: 'github',
      },
    },
  ),
  PayloadTooLarge: problem(
    'The body is larger than `BODY_LIMIT` (`TR_ERR_BODY_TOO_LARGE`): refused before any route runs, on its `Content-Length` or as it is read. Fastify reads a body sent with any method but GET and HEAD, so a DELETE that carries one may get this too.',
    {
      example: {
        type: 'urn:tool-registry:error:body-too-large',
        title: 'The request body is too large',
        status: 413,
        detail: 'Request body is too large',
        code: 'TR_ERR_BODY_TOO_LARGE',
      },
    },
  ),
  UnsupportedMediaType: problem(
    'The body is not `application/json` (`TR_ERR_UNSUPPORTED_MEDIA_TYPE`): refused before any route runs. Fastify reads a body sent with any method but GET and HEAD, so a DELETE that carries one may get this too.',
    {
      example: {
        type: 'urn:tool-registry:error:unsupported-media-type',
        title: 'Unsupported content type',
        status: 415,
        detail: 'send the body as application/json',
        code: 'TR_ERR_UNSUPPORTED_MEDIA_TYPE',
      },
    },
  ),
  TooManyRequests: problem(
    'The caller (token subject, or client address when anonymous) went over its rate limit (`TR_ERR_TOO_MANY_REQUESTS`). `Retry-After` says when to retry; the IETF `RateLimit-*` headers give the limit, what is left and when the window resets.',
    {
      headers: {
        'Retry-After': { description: 'Seconds until the window resets.', required: true, schema: Digits },
        'RateLimit-Limit': { description: 'Requests allowed per window.', schema: Digits },
        'RateLimit-Remaining': { description: 'Requests left in this window.', schema: Digits },
        'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: Digits },
      },
      example: {
        type: 'urn:tool-registry:error:too-many-requests',
        title: 'Too many requests',
        status: 429,
        detail: 'rate limit of 1200 requests per 60 s exceeded; retry in 42 s',
        code: 'TR_ERR_TOO_MANY_REQUESTS',
      },
    },
  ),
  Unavailable: problem('The database is busy or does not take writes (`TR_ERR_UNAVAILABLE`); retry shortly.'),

  // Answered before any route runs (src/http/openapi/pre-route.ts puts them on the operations).
  MalformedRequest: problem(
    'Refused before any route runs: the request is not valid HTTP (an invalid method or `Content-Length`), or its URL is malformed (`TR_ERR_BAD_REQUEST`). What Node refuses is answered on the raw connection, which is then closed.',
    {
      example: {
        type: 'urn:tool-registry:error:bad-request',
        title: 'Bad request',
        status: 400,
        detail: 'the Content-Length header is not valid',
        code: 'TR_ERR_BAD_REQUEST',
      },
    },
  ),
  RequestTimeout: problem(
    'Refused before any route runs: the request line and headers did not arrive within `HEADERS_TIMEOUT_MS`, or the whole request, body included, within `REQUEST_TIMEOUT_MS` (`TR_ERR_REQUEST_TIMEOUT`). Answered on the raw connection, which is then closed.',
    {
      example: {
        type: 'urn:tool-registry:error:request-timeout',
        title: 'The request was not received in time',
        status: 408,
        detail: 'the request was not received in time',
        code: 'TR_ERR_REQUEST_TIMEOUT',
      },
    },
  ),
  PathSegmentTooLong: problem(
    'Refused before any route runs: a path parameter is longer than the router takes, 200 characters (`TR_ERR_URI_TOO_LONG`). A request line longer than `MAX_HEADER_SIZE` as a whole is `431`.',
    {
      example: {
        type: 'urn:tool-registry:error:uri-too-long',
        title: 'A path segment is too long',
        status: 414,
        detail: 'a path segment is longer than this registry accepts',
        code: 'TR_ERR_URI_TOO_LONG',
      },
    },
  ),
  HeadersTooLarge: problem(
    'Refused before any route runs: the request line and headers together are larger than `MAX_HEADER_SIZE` (`TR_ERR_HEADERS_TOO_LARGE`), a long URL included. Answered on the raw connection, which is then closed.',
    {
      example: {
        type: 'urn:tool-registry:error:headers-too-large',
        title: 'The request headers are too large',
        status: 431,
        detail: 'the request headers are larger than this registry accepts (MAX_HEADER_SIZE)',
        code: 'TR_ERR_HEADERS_TOO_LARGE',
      },
    },
  ),
  ProbeOnlyConnection: problem(
    'Refused before any route runs, credentials unread: the request came on a connection kept for health probes (`PROBE_CONNECTIONS`), which the registry gives a client address that already holds `MAX_CONNECTIONS_PER_ADDRESS` connections, or anyone once `MAX_CONNECTIONS` are open (`TR_ERR_UNAVAILABLE`, with `Retry-After`). Only `/healthz` and `/readyz` are answered on such a connection, and it is closed after one answer: close idle connections, or retry after the delay.',
    {
      headers: { 'Retry-After': headers['Retry-After'] },
      example: {
        type: 'urn:tool-registry:error:unavailable',
        title: 'Service unavailable',
        status: 503,
        detail:
          'this client address holds its share of connections, or the registry holds as many as it takes; only health probes are answered on this one',
        code: 'TR_ERR_UNAVAILABLE',
      },
    },
  ),
} as const satisfies Record<string, ResponseDoc>;

/** Every response of an admin read (the admin scope is checked before anything else). */
export const adminReadProblems = {
  400: problems.BadRequest,
  401: problems.Unauthorized,
  403: problems.Forbidden,
  429: problems.TooManyRequests,
} as const;

/** Every refusal a descriptor write may get besides the route's own. */
export const writeProblems = {
  400: problems.ValidationFailed,
  401: problems.Unauthorized,
  403: problems.Forbidden,
  409: problems.WriteConflict,
  413: problems.PayloadTooLarge,
  415: problems.UnsupportedMediaType,
  429: problems.TooManyRequests,
  503: problems.Unavailable,
} as const;

/** An operation's `security`: alternatives, each naming schemes and the scopes they need. */
type Security = ReadonlyArray<Readonly<Record<string, readonly string[]>>>;
/** The bearer scheme, anonymous callers allowed (their view follows `ANONYMOUS_DISCOVERY`). */
/** The 503 of a blocking query or change stream past MAX_WAITERS (or a caller's share of it). */
export const waitersFullExample = {
  type: 'urn:tool-registry:error:unavailable',
  title: 'Service unavailable',
  status: 503,
  detail: '20000 blocking queries and streams are open, the most this registry holds; retry shortly',
  code: 'TR_ERR_UNAVAILABLE' as const,
};

export const ANYONE: Security = [{}, { bearerAuth: [] }];
/** A bearer token of any scope. */
export const BEARER: Security = [{ bearerAuth: [] }];
/** A bearer token with the admin scope. */
export const adminOnly = (adminScope: string): Security => [{ bearerAuth: [adminScope] }];
