import type { FastifyPluginAsync } from 'fastify';
import { problemBody, problemOf } from '../plugins/errors.js';

interface NameParams {
  name: string;
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * `POST /tools/{name}/invoke`: the body is the arguments object, as the article's agents POST
 * to a tool's endpoint. JSON answers with the whole observation; with
 * `Accept: text/event-stream` each chunk is an event as it arrives, then a `result` event, or
 * an `error` event if the call fails after it started.
 */
const invokeRoutes: FastifyPluginAsync = async (app) => {
  app.post<{ Params: NameParams }>('/tools/:name/invoke', { config: { audit: 'tool.invoke' } }, async (request, reply) => {
    const invoke = {
      toolName: request.params.name,
      arguments: request.body,
      caller: request.caller,
      authorization: request.headers.authorization,
    };
    if (!(request.headers.accept ?? '').includes('text/event-stream')) {
      const result = await app.bridge.invoke(invoke);
      return result;
    }

    // Streaming: chunks are written as they come; the response starts with the first chunk or
    // the end, so that refusals before the call (401, 403, 404) keep their status codes.
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      reply.hijack();
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'x-request-id': request.id,
        'x-accel-buffering': 'no',
      });
    };
    try {
      const result = await app.bridge.invoke({
        ...invoke,
        onChunk: (text) => {
          start();
          reply.raw.write(sse('chunk', { text }));
        },
      });
      start();
      reply.raw.end(sse('result', result));
    } catch (err) {
      if (!started) throw err;
      // Once streaming, the failure is an event in the one problem shape.
      const { code, detail, error } = problemOf(err);
      if (!error) request.log.error({ err }, 'streamed call failed');
      reply.raw.end(sse('error', problemBody(code, detail, error)));
    }
    return reply;
  });
};

export default invokeRoutes;
