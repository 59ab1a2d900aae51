import type { FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError, HTTPMethods } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { ERRORS, RegistryError, problemType, type BearerChallenge, type ErrorCode, type FieldError } from '../../model/errors.js';
import { MAX_FIELD_ERRORS } from '../../model/resolve.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** The Content-Type of problems written outside Fastify, as Fastify writes it for the others. */
export const PROBLEM_CONTENT_TYPE_HEADER = `${PROBLEM_CONTENT_TYPE}; charset=utf-8`;

/** Realm for every Bearer challenge. */
const REALM = 'tool-registry';

function quote(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** RFC 6750 section 3 challenge, with RFC 9728's resource_metadata so clients find the AS. */
function bearerChallenge(challenge: BearerChallenge, resourceMetadata?: string): string {
  const params = [`realm=${quote(REALM)}`];
  if (resourceMetadata !== undefined) params.push(`resource_metadata=${quote(resourceMetadata)}`);
  if (challenge.error) params.push(`error=${quote(challenge.error)}`);
  if (challenge.description) params.push(`error_description=${quote(challenge.description)}`);
  if (challenge.scope && challenge.scope.length > 0) params.push(`scope=${quote(challenge.scope.join(' '))}`);
  return `Bearer ${params.join(', ')}`;
}

/** Fastify's own errors, by code, onto the catalogue. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'TR_ERR_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'TR_ERR_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'TR_ERR_BAD_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'TR_ERR_INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'TR_ERR_INVALID_JSON',
  FST_ERR_BAD_URL: 'TR_ERR_BAD_REQUEST',
  FST_ERR_VALIDATION: 'TR_ERR_BAD_REQUEST',
  FST_ERR_ASYNC_CONSTRAINT: 'TR_ERR_BAD_REQUEST',
};

const DETAILS: Partial<Record<ErrorCode, string>> = {
  TR_ERR_UNSUPPORTED_MEDIA_TYPE: 'send the body as application/json',
  TR_ERR_INVALID_JSON: 'the request body is not valid JSON',
};

/** Field errors of a zod issue, as resolve.ts words them for bodies: dotted paths, one per unknown key at its own path. */
function fieldErrorsOf(issue: FastifySchemaValidationError, noun: string): FieldError[] {
  const path = issue.instancePath.split('/').filter((segment) => segment !== '');
  const keys = issue.params['keys'];
  if (issue.keyword === 'unrecognized_keys' && Array.isArray(keys)) {
    return keys.map((key) => ({ path: [...path, String(key)].join('.'), message: `unknown ${noun} "${String(key)}"` }));
  }
  return [{ path: path.join('.'), message: issue.message ?? 'is invalid' }];
}

/** The issues a query parameter given more than once raises where one value is expected. */
const REPEAT_HIDDEN_BY = new Set(['invalid_type', 'invalid_value', 'invalid_union', 'invalid_format']);

/**
 * A request that failed its route's zod schemas: 400 with one field error per issue, named
 * `TR_ERR_BAD_REQUEST` for the query string, path and headers. Bodies are validated by the
 * services (src/http/validation.ts); a body schema that refuses is `TR_ERR_VALIDATION`.
 */
function validationProblem(err: FastifyError & { validation: FastifySchemaValidationError[] }, request: FastifyRequest): RegistryError {
  const query = err.validationContext === 'querystring' ? (request.query as Record<string, unknown>) : undefined;
  const noun = query ? 'query parameter' : 'field';
  const fieldErrors = err.validation.slice(0, MAX_FIELD_ERRORS).flatMap((issue) =>
    fieldErrorsOf(issue, noun).map((error) => {
      // `?limit=1&limit=2` reaches the schema as an array: "expected number, received NaN" (or,
      // for `?format=a&format=b`, "expected one of ...") hid that.
      const given = query?.[error.path];
      return Array.isArray(given) && REPEAT_HIDDEN_BY.has(issue.keyword)
        ? { path: error.path, message: `is given ${given.length} times; give it once` }
        : error;
    }),
  );
  const invalidRequest = request.routeOptions.config.invalidRequest;
  if (err.validationContext === 'body') {
    const first = fieldErrors[0];
    const where = `${first?.path || '(body)'}: ${first?.message ?? 'invalid'}`;
    // A body that is not a descriptor (POST /ag-ui's run input) says so in its route's words.
    if (invalidRequest !== undefined) return new RegistryError('TR_ERR_BAD_REQUEST', `${invalidRequest}: ${where}`, { fieldErrors });
    return new RegistryError('TR_ERR_VALIDATION', `invalid body: ${where}`, { fieldErrors });
  }
  const detail = invalidRequest ?? `invalid ${err.validationContext === 'querystring' ? 'query' : (err.validationContext ?? 'request')}`;
  return new RegistryError('TR_ERR_BAD_REQUEST', detail, { fieldErrors });
}

/** The message of what caused a refusal (`connect ECONNREFUSED ...`), for the log. */
function causeOf(error: RegistryError | undefined): string | undefined {
  const cause = error?.cause;
  return cause instanceof Error ? cause.message : undefined;
}

/** A 413's detail: the limit, and the setting that raises it (a route may name its own). */
function bodyTooLarge(request: FastifyRequest): string {
  const { bodyLimit } = request.routeOptions.config;
  const bytes = bodyLimit?.bytes ?? request.server.initialConfig.bodyLimit;
  return `the request body is larger than the ${bytes ?? 'configured'} bytes this route accepts (${bodyLimit?.setting ?? 'BODY_LIMIT'})`;
}

/** Turns any thrown value into a catalogue code and a safe detail (5xx details stay hidden). */
export function problemOf(err: unknown, request?: FastifyRequest): { code: ErrorCode; detail: string; error?: RegistryError } {
  if (request && hasZodFastifySchemaValidationErrors(err))
    err = validationProblem(err as FastifyError & { validation: FastifySchemaValidationError[] }, request);
  if (err instanceof RegistryError) return { code: err.code, detail: err.message, error: err };
  const fastifyError = err as Partial<FastifyError> | undefined;
  const mapped = fastifyError?.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (mapped === 'TR_ERR_BODY_TOO_LARGE' && request) return { code: mapped, detail: bodyTooLarge(request) };
  if (mapped) return { code: mapped, detail: DETAILS[mapped] ?? fastifyError?.message ?? ERRORS[mapped].title };
  if (err instanceof SyntaxError && fastifyError?.statusCode === 400) {
    return { code: 'TR_ERR_INVALID_JSON', detail: 'the request body is not valid JSON' };
  }
  const status = fastifyError?.statusCode;
  if (status === 429) return { code: 'TR_ERR_TOO_MANY_REQUESTS', detail: fastifyError?.message ?? 'too many requests' };
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { code: 'TR_ERR_BAD_REQUEST', detail: fastifyError?.message ?? 'bad request' };
  }
  return { code: 'TR_ERR_INTERNAL', detail: 'an internal error occurred; it has been logged' };
}

/** The problem-details body for an error (also sent as an SSE `error` event). */
export function problemBody(code: ErrorCode, detail: string, error?: RegistryError): Record<string, unknown> {
  const { status, title } = ERRORS[code];
  const body: Record<string, unknown> = { type: problemType(code), title, status, detail, code };
  if (error?.fieldErrors) body['errors'] = error.fieldErrors;
  if (error?.extra) Object.assign(body, error.extra);
  return body;
}

export function sendProblem(reply: FastifyReply, code: ErrorCode, detail: string, error?: RegistryError) {
  reply.request.problemCode = code;
  if (error?.retryAfterS !== undefined) reply.header('retry-after', String(error.retryAfterS));
  if (error?.challenge) {
    const resourceMetadata = reply.request.routeOptions.config.resourceMetadataUrl ?? reply.server.resourceMetadataUrl;
    reply.header('www-authenticate', bearerChallenge(error.challenge, resourceMetadata));
  }
  // The same body either way; a JSON-RPC answer is typed as the protocol's transport requires.
  return reply
    .code(ERRORS[code].status)
    .type(error?.rpcAnswer ? 'application/json' : PROBLEM_CONTENT_TYPE)
    .send(problemBody(code, detail, error));
}

/**
 * One error shape for every 4xx/5xx (RFC 9457 problem details), from one handler that logs
 * with request context. No stack trace or internal message reaches a client.
 */
declare module 'fastify' {
  interface FastifyInstance {
    /** Where this resource's RFC 9728 metadata is served; named in every Bearer challenge. */
    resourceMetadataUrl: string | undefined;
  }
  interface FastifyContextConfig {
    /** The problem detail when the route's query string, path, headers or (not a descriptor) body fail their schema. */
    invalidRequest?: string;
    /** A route whose body limit is not BODY_LIMIT: its size and setting, named in its 413. */
    bodyLimit?: { bytes: number; setting: string };
    /** Where the RFC 9728 metadata of a route with its own resource identifier is (`/mcp`). */
    resourceMetadataUrl?: string;
  }
}

/** Up to this much of a path is echoed in a 404's detail. */
const ECHOED_PATH = 200;

export default fp<{ resourceMetadataUrl?: string }>(
  async (app, options) => {
    app.decorate('resourceMetadataUrl', options.resourceMetadataUrl);
    // RFC 9110 section 15.5.6: a path that exists answers a method it does not take with 405 and
    // an `Allow` header, where Fastify answers 404. Fastify's own router says which methods the
    // path takes; only the methods some route declares are asked (HEAD ones for GET come here too).
    const methods = new Set<HTTPMethods>();
    app.addHook('onRoute', (route) => {
      for (const method of Array.isArray(route.method) ? route.method : [route.method]) methods.add(method);
    });
    /** The methods the path takes, sorted; empty when no route has it. */
    const allowedMethods = (url: string): string[] =>
      [...methods]
        .filter((method) => {
          const found = app.findRoute({ method, url });
          // A catch-all (swagger-ui's /docs*, @fastify/cors's under /mcp) does not make a path exist.
          return found !== null && !('*' in found.params);
        })
        .sort();
    app.setErrorHandler((err, request: FastifyRequest, reply) => {
      const { code, detail, error } = problemOf(err, request);
      const status = ERRORS[code].status;
      if (code === 'TR_ERR_INTERNAL') request.log.error({ err }, 'request failed');
      // The registry's own refusals of 5xx kind (a tool service down or slow, the bus
      // unreachable, too many calls, a full database): expected in operation, so a warning
      // with what went wrong below, without a stack.
      else if (status >= 500) request.log.warn({ code, detail, cause: causeOf(error) }, 'request failed');
      else request.log.info({ code, detail }, 'request refused');
      return sendProblem(reply, code, detail, error);
    });
    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0] ?? '';
      const allowed = allowedMethods(path);
      if (allowed.length > 0 && !allowed.includes(request.method)) {
        reply.header('allow', allowed.join(', '));
        return sendProblem(
          reply,
          'TR_ERR_METHOD_NOT_ALLOWED',
          `${request.method} is not a method of this path; it takes ${allowed.join(', ')}`,
        );
      }
      const shown = path.length > ECHOED_PATH ? `${path.slice(0, ECHOED_PATH)}…` : path;
      return sendProblem(reply, 'TR_ERR_ROUTE_NOT_FOUND', `no route ${request.method} ${shown}`);
    });
  },
  { name: 'errors' },
);
