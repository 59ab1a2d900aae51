/**
 * Problem details for what Fastify and Node answer before any route or hook runs: a malformed
 * URL or too long a path parameter (Fastify's `frameworkErrors`), requests Node's parser
 * refuses outright, such as a header block over MAX_HEADER_SIZE, an invalid method or a bad
 * Content-Length (`clientErrorHandler`, which gets only the socket), and an `Expect` Node does
 * not meet (`answerExpectation`, on the server's `checkExpectation`). The first two are Fastify
 * options, set once in app.ts's fastifyOptions. Node's own answers to these had no body at all.
 *
 * Node's check for a missing `Host` is off (its 400 had no body either): `requestLineProblem`
 * refuses it, and a query string whose percent escapes do not decode, from the first hook.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, RegistryError, type ErrorCode } from '../model/errors.js';
import { PROBLEM_CONTENT_TYPE_HEADER, problemBody, sendProblem } from './plugins/errors.js';

/**
 * The headers of a problem answered outside Fastify, on a connection closed after it: what
 * security-headers.ts gives every other answer, and the problem's type and length.
 */
function rawProblemHeaders(body: string): Record<string, string> {
  return {
    'Content-Type': PROBLEM_CONTENT_TYPE_HEADER,
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Content-Type-Options': 'nosniff',
    'X-Request-Id': randomUUID(),
    Connection: 'close',
  };
}

/** Fastify's router errors (FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH, FST_ERR_ASYNC_CONSTRAINT). */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
  // The path is not echoed: it is what was wrong, and may hold anything.
  const detail = tooLong ? 'a path segment is longer than this registry accepts' : 'the request URL is malformed';
  request.log.info({ code: error.code }, 'request refused');
  void sendProblem(reply, tooLong ? 'TR_ERR_URI_TOO_LONG' : 'TR_ERR_BAD_REQUEST', detail);
}

function clientProblem(err: NodeJS.ErrnoException): { code: ErrorCode; detail: string } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'TR_ERR_REQUEST_TIMEOUT', detail: 'the request was not received in time' };
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'TR_ERR_HEADERS_TOO_LARGE', detail: 'the request headers are larger than this registry accepts (MAX_HEADER_SIZE)' };
    case 'HPE_INVALID_METHOD':
      return { code: 'TR_ERR_BAD_REQUEST', detail: 'the request method is not valid' };
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { code: 'TR_ERR_BAD_REQUEST', detail: 'the Content-Length header is not valid' };
    default:
      return { code: 'TR_ERR_BAD_REQUEST', detail: 'the request is not valid HTTP' };
  }
}

/** Node's `clientError`: answers on the raw socket, then closes it (as Node and Fastify do). */
export function clientErrorHandler(this: { log: FastifyRequest['log'] }, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const { code, detail } = clientProblem(err);
  this.log.debug({ code: err.code }, 'client error');
  if (socket.writable) {
    const { status } = ERRORS[code];
    const body = JSON.stringify(problemBody(code, detail));
    const head = Object.entries(rawProblemHeaders(body)).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head.join('')}\r\n${body}`);
  }
  socket.destroy(err);
}

/**
 * Node's `checkExpectation`: a request whose `Expect` is not `100-continue` (which Node meets
 * itself). RFC 9110 section 10.1.1: 417, here in the problem shape; the connection is closed, as
 * the body the client may still send is not read.
 */
export function answerExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const code = 'TR_ERR_EXPECTATION_FAILED';
  const body = JSON.stringify(problemBody(code, 'the registry meets no expectation but "Expect: 100-continue"'));
  response.writeHead(ERRORS[code].status, rawProblemHeaders(body));
  response.end(body);
}

/** A percent sign not followed by two hex digits, or escapes that are not UTF-8. */
function malformedEscapes(query: string): boolean {
  try {
    decodeURIComponent(query);
    return false;
  } catch {
    return true;
  }
}

/**
 * What is wrong with a request's line or Host before anything reads it: an HTTP/1.1 request
 * without `Host` (RFC 9112 section 3.2: 400), or a query string with percent escapes that do not
 * decode, which the router would pass on undecoded (RFC 3986 section 2.1). Undefined when fine;
 * costs an `indexOf` on requests without `%` in their query.
 */
export function requestLineProblem(request: FastifyRequest): RegistryError | undefined {
  const raw = request.raw;
  if (raw.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor === 1) {
    return new RegistryError('TR_ERR_BAD_REQUEST', 'an HTTP/1.1 request must carry a Host header');
  }
  const url = request.url;
  const query = url.indexOf('?');
  if (query >= 0 && url.indexOf('%', query) >= 0 && malformedEscapes(url.slice(query + 1))) {
    return new RegistryError('TR_ERR_BAD_REQUEST', 'the query string has a "%" that is not a valid percent-encoded UTF-8 sequence');
  }
  return undefined;
}
