/**
 * Writing tool services in TypeScript: the counterpart of the reference's Python
 * DynamicToolService. It subscribes to a request topic (Shared subscription `"{id}-request"`, so
 * replicas share the work), calls a handler `(user, config, arguments)` that returns a string
 * or streams strings, and publishes the response, or the chunks then an end-of-stream marker,
 * with the request's `id` property. A handler's exception becomes an error response.
 */
import WebSocket from 'ws';
import { topicPath } from '../bridge/pulsar-ws.js';

export type ToolHandler = (
  user: string,
  config: Record<string, unknown>,
  args: Record<string, unknown>,
) => string | Promise<string> | AsyncIterable<string>;

export interface ToolServiceOptions {
  /** Pulsar WebSocket API base URL, e.g. ws://127.0.0.1:8080. */
  url: string;
  /** Service id; the request subscription is `"{id}-request"`. */
  id: string;
  /** Short form: non-persistent://tg/request/{topic} and non-persistent://tg/response/{topic}. */
  topic?: string;
  requestQueue?: string;
  responseQueue?: string;
  token?: string;
  handler: ToolHandler;
  /** Error `type` for handler exceptions. */
  errorType?: string;
  onError?: (err: unknown) => void;
}

export interface RunningToolService {
  /** Resolves when both the subscription and the producer are open. */
  ready: Promise<void>;
  close(): Promise<void>;
}

interface ResponseMessage {
  error: { type: string; message: string } | null;
  response: string;
  end_of_stream: boolean;
}

function open(url: string, token: string | undefined): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`the broker refused ${url} with HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function isAsyncIterable(value: unknown): value is AsyncIterable<string> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

function parseJsonText(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string' || text === '') return {};
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** Starts a tool service. It does not reconnect: run it under a supervisor, as the reference does. */
export function runToolService(options: ToolServiceOptions): RunningToolService {
  const requestQueue = options.requestQueue ?? `non-persistent://tg/request/${options.topic ?? options.id}`;
  const responseQueue = options.responseQueue ?? `non-persistent://tg/response/${options.topic ?? options.id}`;
  const base = options.url.replace(/\/+$/, '');
  let consumer: WebSocket | undefined;
  let producer: WebSocket | undefined;
  let context = 0;

  const publish = (message: ResponseMessage, id: string) => {
    producer?.send(
      JSON.stringify({ payload: Buffer.from(JSON.stringify(message)).toString('base64'), properties: { id }, context: String(++context) }),
    );
  };

  const handle = async (frame: { payload?: string; properties?: Record<string, string> }) => {
    const id = frame.properties?.['id'] ?? 'unknown';
    try {
      const request = JSON.parse(Buffer.from(frame.payload ?? '', 'base64').toString('utf8')) as Record<string, unknown>;
      const user = typeof request['user'] === 'string' ? request['user'] : '';
      const result = options.handler(user, parseJsonText(request['config']), parseJsonText(request['arguments']));
      if (isAsyncIterable(result)) {
        for await (const chunk of result) publish({ error: null, response: chunk, end_of_stream: false }, id);
        publish({ error: null, response: '', end_of_stream: true }, id);
      } else {
        publish({ error: null, response: await result, end_of_stream: true }, id);
      }
    } catch (err) {
      options.onError?.(err);
      const message = err instanceof Error ? err.message : String(err);
      publish({ error: { type: options.errorType ?? 'tool-service-error', message }, response: '', end_of_stream: true }, id);
    }
  };

  const ready = (async () => {
    producer = await open(`${base}/ws/v2/producer/${topicPath(responseQueue)}`, options.token);
    consumer = await open(
      `${base}/ws/v2/consumer/${topicPath(requestQueue)}/${encodeURIComponent(`${options.id}-request`)}?subscriptionType=Shared`,
      options.token,
    );
    consumer.on('message', (data) => {
      let frame: { messageId?: string; payload?: string; properties?: Record<string, string> };
      try {
        frame = JSON.parse(data.toString()) as typeof frame;
      } catch {
        return;
      }
      if (frame.messageId !== undefined) consumer?.send(JSON.stringify({ messageId: frame.messageId }));
      void handle(frame);
    });
  })();

  return {
    ready,
    async close() {
      await ready.catch(() => undefined);
      for (const ws of [consumer, producer]) {
        if (ws && ws.readyState === WebSocket.OPEN) {
          await new Promise<void>((resolve) => {
            ws.once('close', () => resolve());
            ws.close();
            setTimeout(() => {
              ws.terminate();
              resolve();
            }, 2000).unref();
          });
        }
      }
    },
  };
}
