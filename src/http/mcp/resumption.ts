/**
 * `GET /mcp` with a `Last-Event-ID` on a POST stream whose request has been answered (issue 31).
 * The SDK's transport would replay what follows the id and then hold the stream open for good;
 * such a stream has nothing more to come, so it is answered here: the events the client missed
 * (its answer among them), then the end. With nothing missed, 405, the transport spec's "no
 * stream here": the TypeScript SDK 1.32 resumes a POST stream whose answer was a JSON-RPC
 * error (it counts only results as answers), and stops quietly at a 405, where a 2xx that ends
 * at once would have it reconnect every second and any other refusal retry and report errors.
 */
import type { FastifyReply } from 'fastify';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { RegistryError } from '../../model/errors.js';

export function replayAnswered(
  reply: FastifyReply,
  sessionId: string,
  lastEventId: string,
  events: readonly { id: string; message: JSONRPCMessage }[],
): FastifyReply {
  if (events.length === 0) {
    throw new RegistryError(
      'TR_ERR_METHOD_NOT_ALLOWED',
      `the stream of event ${lastEventId.slice(0, 200)} has answered its request and sent you everything: nothing is left to resume`,
    );
  }
  const body = events.map(({ id, message }) => `event: message\nid: ${id}\ndata: ${JSON.stringify(message)}\n\n`).join('');
  return reply
    .code(200)
    .header('content-type', 'text/event-stream')
    .header('cache-control', 'no-cache, no-transform')
    .header('mcp-session-id', sessionId)
    .send(body);
}
