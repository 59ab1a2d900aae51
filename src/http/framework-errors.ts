/**
 * Problem details for what Fastify and Node answer before any route or hook runs: a malformed
 * URL or too long a path parameter (Fastify's `frameworkErrors`), and requests Node's parser
 * refuses outright, such as a header block over MAX_HEADER_SIZE, an invalid method or a bad
 * Content-Length (`clientErrorHandler`, which gets only the socket). Both are Fastify options,
 * set once in app.ts's fastifyOptions.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { ERRORS, type ErrorCode } from '../model/errors.js';
import { PROBLEM_CONTENT_TYPE, problemBody, sendProblem } from './plugins/errors.js';

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
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
