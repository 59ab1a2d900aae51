/**
 * The error catalogue: every error the registry answers with has a stable code here, mapped to
 * an HTTP status and a problem `type` in one place (house style 5). Domain and storage code
 * throw these; the central handler in src/http/plugins/errors.ts turns them into
 * `application/problem+json` and turns their facts (a retry delay, a challenge) into headers.
 * Nothing compares message strings.
 */

export interface FieldError {
  /** Dotted path into the request body, e.g. `arguments.0.name`; a call's arguments: a JSON pointer, `/items/0/name`. */
  path: string;
  message: string;
}

/** RFC 6750 section 3 challenge parameters. */
export interface BearerChallenge {
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  description?: string;
  /** Every scope that would do. */
  scope?: readonly string[];
}

export interface ErrorDefinition {
  status: number;
  title: string;
}

export const ERRORS = {
  TR_ERR_VALIDATION: { status: 400, title: 'The request body is not a valid descriptor' },
  TR_ERR_BAD_REQUEST: { status: 400, title: 'Bad request' },
  TR_ERR_INVALID_JSON: { status: 400, title: 'The request body is not valid JSON' },
  TR_ERR_INVALID_ARGUMENTS: { status: 400, title: "The arguments do not fit the tool's input schema" },
  TR_ERR_INVALID_REQUEST: { status: 400, title: 'Malformed Authorization header' },
  TR_ERR_UNAUTHENTICATED: { status: 401, title: 'A bearer token is required' },
  TR_ERR_INVALID_TOKEN: { status: 401, title: 'The bearer token is not valid' },
  TR_ERR_INSUFFICIENT_SCOPE: { status: 403, title: 'The token lacks a required scope' },
  TR_ERR_NOT_FOUND: { status: 404, title: 'Not found' },
  TR_ERR_ROUTE_NOT_FOUND: { status: 404, title: 'No such route' },
  TR_ERR_METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed' },
  TR_ERR_NOT_ACCEPTABLE: { status: 406, title: 'The answer cannot be given in an accepted media type' },
  TR_ERR_ORIGIN_NOT_ALLOWED: { status: 403, title: 'Requests from this browser origin are not allowed' },
  TR_ERR_CONFLICT: { status: 409, title: 'Conflict' },
  TR_ERR_GONE: { status: 410, title: 'The tool was deleted' },
  TR_ERR_IN_USE: { status: 409, title: 'The tool service is still used by tools' },
  TR_ERR_PRECONDITION_FAILED: { status: 412, title: 'A precondition of the request does not hold' },
  TR_ERR_BODY_TOO_LARGE: { status: 413, title: 'The request body is too large' },
  TR_ERR_REQUEST_TOO_LARGE: { status: 413, title: 'The call is too large for the message bus' },
  TR_ERR_REQUEST_TIMEOUT: { status: 408, title: 'The request was not received in time' },
  TR_ERR_URI_TOO_LONG: { status: 414, title: 'A path segment is too long' },
  TR_ERR_UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported content type' },
  TR_ERR_EXPECTATION_FAILED: { status: 417, title: 'The expectation cannot be met' },
  TR_ERR_HEADERS_TOO_LARGE: { status: 431, title: 'The request headers are too large' },
  TR_ERR_TOO_MANY_REQUESTS: { status: 429, title: 'Too many requests' },
  TR_ERR_INTERNAL: { status: 500, title: 'Internal server error' },
  TR_ERR_UNAVAILABLE: { status: 503, title: 'Service unavailable' },
  TR_ERR_TOOL_SERVICE: { status: 502, title: 'The tool service answered with an error' },
  /**
   * A 502, not a 403: the caller may call the tool; what is refused is where its descriptor
   * points (or where its name resolved), which only an operator can change.
   */
  TR_ERR_TARGET_REFUSED: { status: 502, title: "The tool's address is refused by the outbound address policy" },
  /** The registry could not get its own credential for the tool's host (token endpoint, secret file); the caller cannot fix it. */
  TR_ERR_UPSTREAM_CREDENTIAL: { status: 502, title: "The registry could not obtain its credential for the tool's host" },
  TR_ERR_BUS_UNAVAILABLE: { status: 503, title: 'The tool cannot be reached now' },
  /** Apart from the bus's code: an operator looks at the MCP server, not at the broker. */
  TR_ERR_UPSTREAM_UNAVAILABLE: { status: 503, title: "The tool's MCP server cannot be reached now" },
  TR_ERR_TOO_MANY_CALLS: { status: 503, title: 'Too many calls in flight' },
  TR_ERR_TIMEOUT: { status: 504, title: 'The tool did not answer in time' },
  /** Logged and audited only: nobody is left to receive it (nginx's 499). */
  TR_ERR_CLIENT_CLOSED: { status: 499, title: 'The caller closed the connection before the answer' },
} as const satisfies Record<string, ErrorDefinition>;

export type ErrorCode = keyof typeof ERRORS;

/** The problem `type` URI for a code: stable, so clients may switch on it. */
export function problemType(code: ErrorCode): string {
  return `urn:tool-registry:error:${code.slice('TR_ERR_'.length).toLowerCase().replaceAll('_', '-')}`;
}

export class RegistryError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly fieldErrors: FieldError[] | undefined;
  /** Extra members for the problem body (e.g. the tools that hold a service). */
  readonly extra: Record<string, unknown> | undefined;
  /** For 401/403/400 auth errors: what goes into the `WWW-Authenticate: Bearer` challenge. */
  readonly challenge: BearerChallenge | undefined;
  /** Seconds after which a retry may succeed (overload, a busy database, an unreachable bus). */
  readonly retryAfterS: number | undefined;
  /**
   * The body (with `extra`'s JSON-RPC members) is the JSON-RPC answer to a request of a protocol
   * whose transport allows only `application/json` for it (MCP 2026-07-28).
   */
  readonly rpcAnswer: boolean;

  constructor(
    code: ErrorCode,
    detail: string,
    options: {
      fieldErrors?: FieldError[];
      extra?: Record<string, unknown>;
      challenge?: BearerChallenge;
      retryAfterS?: number;
      rpcAnswer?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RegistryError';
    this.code = code;
    this.status = ERRORS[code].status;
    this.fieldErrors = options.fieldErrors;
    this.extra = options.extra;
    this.challenge = options.challenge;
    this.retryAfterS = options.retryAfterS;
    this.rpcAnswer = options.rpcAnswer ?? false;
  }
}
