/**
 * Calls an HTTP tool the way the discovery article's agents do: POST the arguments as JSON to
 * http://{host}:{port}{endpoint}, forwarding the caller's Authorization header (the article's
 * tool services check the same tokens) unless the descriptor turns that off.
 */
import { TargetRefusedError, ToolServiceError } from './errors.js';
import { refusalOf, type OutboundFetch } from './outbound-fetch.js';
import { annotateActive, traceTransport } from './tracing.js';
import type { ToolTransport, TransportCall } from './transport.js';

export interface HttpCall {
  host: string;
  port: number;
  endpoint: string;
  arguments: Record<string, unknown>;
  /** The caller's Authorization header, when it is to be forwarded. */
  authorization: string | undefined;
  maxResponseBytes: number;
  /** W3C trace context of the call's span (`traceparent`), empty when tracing is off. */
  traceHeaders: Record<string, string>;
}

function toolUrl(call: HttpCall): URL {
  const host = call.host.includes(':') && !call.host.startsWith('[') ? `[${call.host}]` : call.host;
  return new URL(`http://${host}:${call.port}${call.endpoint}`);
}

/** Returns the observation text: a JSON string as is, any other JSON as JSON text. */
async function callHttpTool(fetch: OutboundFetch, call: HttpCall, signal: AbortSignal): Promise<string> {
  const headers: Record<string, string> = {
    ...call.traceHeaders,
    'content-type': 'application/json',
    accept: 'application/json, text/plain;q=0.9',
  };
  if (call.authorization !== undefined) headers['authorization'] = call.authorization;
  let response: Response;
  try {
    response = await fetch(toolUrl(call), { method: 'POST', headers, body: JSON.stringify(call.arguments), signal, redirect: 'manual' });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const refused = refusalOf(err);
    if (refused) throw new TargetRefusedError(refused.message);
    const code = (err as { cause?: { code?: string } }).cause?.code;
    throw new ToolServiceError('tool-unreachable', `the tool's endpoint cannot be reached${code ? ` (${code})` : ''}`);
  }
  annotateActive('http.response.status_code', response.status);
  let text: string;
  try {
    text = await readLimited(response, call.maxResponseBytes);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (err instanceof ToolServiceError) throw err;
    // The tool dropped the connection mid-answer: as unreachable as not answering at all.
    throw new ToolServiceError('tool-unreachable', 'the tool closed the connection before its answer was complete');
  }
  // The tool's own refusal or failure is a bad gateway answer for the agent (502), with its status.
  if (response.status >= 400) throw new ToolServiceError(`http-${response.status}`, text.slice(0, 1000) || response.statusText);
  if (response.status >= 300)
    throw new ToolServiceError(`http-${response.status}`, 'the tool answered with a redirect, which the registry does not follow');
  if ((response.headers.get('content-type') ?? '').includes('json')) {
    try {
      const value: unknown = JSON.parse(text);
      return typeof value === 'string' ? value : JSON.stringify(value);
    } catch {
      throw new ToolServiceError('invalid-response', 'the tool sent a JSON content type with a body that is not JSON');
    }
  }
  return text;
}

async function readLimited(response: Response, max: number): Promise<string> {
  if (!response.body) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (bytes > max) throw new ToolServiceError('response-too-large', 'the tool sent more than the registry keeps for one call');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** HTTP tools: a POST of the arguments to the tool's own endpoint; the answer is one chunk. */
export class HttpTransport implements ToolTransport {
  readonly state = 'connected' as const;
  readonly #maxResponseBytes: number;
  readonly #fetch: OutboundFetch;

  /** `fetch`: the outbound address policy's (src/bridge/outbound-fetch.ts), which checks every connection's address. */
  constructor(maxResponseBytes: number, fetch: OutboundFetch) {
    this.#maxResponseBytes = maxResponseBytes;
    this.#fetch = fetch;
  }

  async call(call: TransportCall): Promise<string> {
    const http = call.tool.http;
    if (!http) throw new TypeError(`${call.tool.name} is not an HTTP tool`);
    // The HTTP client span (OpenTelemetry's conventions: named after the method; no query in
    // its attributes, which a descriptor's endpoint could carry a credential in).
    const attributes = {
      'http.request.method': 'POST',
      'server.address': http.host,
      'server.port': http.port,
      'url.path': http.endpoint.split('?')[0] ?? '',
    };
    const result = await traceTransport('POST', attributes, (traceHeaders) =>
      callHttpTool(
        this.#fetch,
        { ...http, arguments: call.arguments, authorization: call.authorization, maxResponseBytes: this.#maxResponseBytes, traceHeaders },
        call.signal,
      ),
    );
    call.onChunk?.(result);
    return result;
  }

  close(): void {}
}
