/**
 * A POST's response ends once each of its requests is answered or cancelled. MCP's
 * cancellation rules say a cancelled request gets no answer, and the SDK's server keeps to
 * that; but its Streamable HTTP transport ends a POST's event stream only when every request
 * of the POST has been answered (`send`, SDK 1.32), so a POST with a cancelled request never
 * ended: it held its connection until the client gave up, and the transport kept its record of
 * the stream for the session's life.
 *
 * Installed between the transport and the SDK's server (after `connect`), this keeps, for each
 * POST, the requests not yet answered nor cancelled. A request cancelled in its own POST (a
 * batch of 2025-03-26, the cancellation anywhere in it) never reaches the server: nothing
 * runs. One cancelled from another POST reaches the server's own cancellation, which stops its
 * handler. When the rest of a POST are answered, its stream is closed, and the transport is
 * told an answer to each cancelled request after that: it writes it nowhere, the stream being
 * closed, and forgets the stream as it does one whose client went away. A POST whose requests
 * are all cancelled gets an event stream that ends at once with nothing in it: its input held
 * requests, which the transport rules (2025-03-26, "Sending Messages to the Server", 5) answer
 * with a stream or a JSON object, never `202 Accepted`; and JSON-RPC forbids an empty batch.
 *
 * Relies on two things the transport does: it hands a POST's messages to `onmessage` one after
 * another in one synchronous pass, each with the POST's one `requestInfo` object; and it answers
 * with an event stream (not `enableJsonResponse`, whose pending JSON answer closing a stream
 * does not settle).
 */
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';

/** The requests one POST carried, until each is answered or cancelled. */
interface Post {
  /** Not answered yet, nor cancelled: by id key. */
  readonly open: Set<string>;
  /** Cancelled, so never to be answered: id key -> id. */
  readonly cancelled: Map<string, RequestId>;
}

interface Arrival {
  message: JSONRPCMessage;
  extra: MessageExtraInfo | undefined;
}

/** JSON-RPC ids 1 and "1" are two ids. */
const keyOf = (id: RequestId): string => JSON.stringify(id);

/** The id a `notifications/cancelled` names, if the message is one. */
function cancelledBy(message: JSONRPCMessage): RequestId | undefined {
  if (!isJSONRPCNotification(message) || message.method !== 'notifications/cancelled') return undefined;
  const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

export function endResponsesOfCancelledRequests(transport: WebStandardStreamableHTTPServerTransport): void {
  const receive = transport.onmessage;
  const send = transport.send.bind(transport);
  /** Each request being answered, by id key: the POST it came in (the route keeps ids unique while in flight). */
  const posts = new Map<string, Post>();
  /** The messages of POSTs being handed over, by the POST's `requestInfo`. */
  const arriving = new Map<object, Arrival[]>();

  /** Ends a POST's stream once all its requests but the cancelled ones are answered. */
  const settle = (post: Post) => {
    if (post.open.size > 0 || post.cancelled.size === 0) return;
    const ids = [...post.cancelled.values()];
    for (const key of post.cancelled.keys()) posts.delete(key);
    post.cancelled.clear();
    // Every answer is written to the stream already: closing it ends the HTTP response after them.
    transport.closeSSEStream(ids[0] as RequestId);
    for (const id of ids) {
      // The transport throws once it has forgotten the stream ("No connection established"): expected.
      send({ jsonrpc: '2.0', id, error: { code: ErrorCode.ConnectionClosed, message: 'cancelled by the client' } }).catch(() => undefined);
    }
  };

  const deliver = (batch: readonly Arrival[]) => {
    const requested = new Set(batch.flatMap(({ message }) => (isJSONRPCRequest(message) ? [keyOf(message.id)] : [])));
    const cancelledHere = new Set(
      batch.flatMap(({ message }) => {
        const id = cancelledBy(message);
        return id !== undefined && requested.has(keyOf(id)) ? [keyOf(id)] : [];
      }),
    );
    // All of the POST's requests are counted before any is delivered, so that an answer given
    // while the rest are being delivered cannot end the response early.
    const post: Post = { open: new Set(), cancelled: new Map() };
    for (const { message } of batch) {
      if (!isJSONRPCRequest(message)) continue;
      const key = keyOf(message.id);
      if (cancelledHere.has(key)) post.cancelled.set(key, message.id);
      else post.open.add(key);
      posts.set(key, post);
    }
    const others = new Set<Post>();
    for (const { message, extra } of batch) {
      if (isJSONRPCRequest(message) && cancelledHere.has(keyOf(message.id))) continue;
      const cancelled = cancelledBy(message);
      if (cancelled !== undefined) {
        const key = keyOf(cancelled);
        // Its request never reached the server: there is nothing for the server to stop.
        if (cancelledHere.has(key)) continue;
        const other = posts.get(key);
        if (other?.open.delete(key)) {
          other.cancelled.set(key, cancelled);
          others.add(other);
        }
      }
      receive?.(message, extra);
    }
    settle(post);
    for (const other of others) settle(other);
  };

  transport.onmessage = (message, extra) => {
    const info = extra?.requestInfo;
    if (info === undefined) return deliver([{ message, extra }]);
    let batch = arriving.get(info);
    if (!batch) {
      arriving.set(info, (batch = []));
      const whole = batch;
      // By the next microtask the transport has handed over the whole POST.
      queueMicrotask(() => {
        arriving.delete(info);
        try {
          deliver(whole);
        } catch (err) {
          // Out of the transport's own call now: reported where it reports its errors.
          transport.onerror?.(err instanceof Error ? err : new Error(String(err)));
        }
      });
    }
    batch.push({ message, extra });
  };

  transport.send = async (message, options) => {
    if (!(isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) || message.id === undefined) return send(message, options);
    const key = keyOf(message.id);
    const post = posts.get(key);
    // A handler that ended before it heard of its cancellation: its answer is not sent either.
    if (post?.cancelled.has(key)) return;
    posts.delete(key);
    post?.open.delete(key);
    try {
      await send(message, options);
    } finally {
      if (post) settle(post);
    }
  };
}
