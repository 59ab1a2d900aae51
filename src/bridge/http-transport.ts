/**
 * Calls an HTTP tool: the article's POST of the arguments as JSON to
 * http://{host}:{port}{endpoint}, or a full target's method, URL and argument placement
 * (src/bridge/http-request.ts, issue 30), over the outbound address policy's fetch (TLS
 * verified, with OUTBOUND_CA_FILE's CAs beside Node's). The caller's Authorization header goes
 * along only where the descriptor turns that on. Redirects are never followed: a 3xx answer is
 * a failed call. The answer becomes the observation by its content type: JSON as JSON text (a
 * JSON string as is), text as is, an image or any other bytes as base64 with its media type.
 */
import { TargetRefusedError, ToolServiceError } from './errors.js';
import { httpRequestOf, type HttpRequestPlan } from './http-request.js';
import { refusalOf, type OutboundFetch } from './outbound-fetch.js';
import { annotateActive, traceTransport } from './tracing.js';
import type { ToolTransport, TransportAnswer, TransportCall } from './transport.js';
import type { CredentialParts, OutboundCredentials } from './outbound-credentials.js';
import type { OutboundCredential } from '../model/outbound-credential.js';

/** The registry's own credentials for tool hosts (issue 30): which one an owner's tools carry, and how it becomes request parts. */
export interface HostCredentials {
  /**
   * The credential a call to `tool` (of `owner`, null for an operator's) at `origin` carries: its
   * OpenAPI source's, or the tool's own; with the key its fetched tokens are cached under.
   * Undefined for none; throws when the tool's own credential was set for another origin.
   */
  credentialOf(owner: string | null, tool: string, origin: string): { key: string; credential: OutboundCredential } | undefined;
  parts: OutboundCredentials;
}

interface HttpCall {
  request: HttpRequestPlan;
  /** The caller's Authorization header, when it is to be forwarded. */
  authorization: string | undefined;
  maxResponseBytes: number;
  /** W3C trace context of the call's span (`traceparent`), empty when tracing is off. */
  traceHeaders: Record<string, string>;
  /** What the registry's own credential adds (never together with `authorization`). */
  credential: CredentialParts | undefined;
}

/** The request with the credential's header, query parameter or cookie added. */
function withCredential(request: HttpRequestPlan, parts: CredentialParts | undefined): HttpRequestPlan {
  if (parts === undefined) return request;
  const url = new URL(request.url);
  for (const [name, value] of Object.entries(parts.query)) url.searchParams.set(name, value);
  const headers = { ...request.headers, ...parts.headers };
  const cookies = Object.entries(parts.cookies).map(([name, value]) => `${name}=${encodeURIComponent(value)}`);
  if (cookies.length > 0) headers['cookie'] = [request.headers['cookie'], ...cookies].filter(Boolean).join('; ');
  return { ...request, url, headers };
}

/** OpenSSL's and Node's codes for a certificate that does not verify. */
const TLS_FAILURE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS|ERR_SSL/;

/** Media types whose bytes are text (beside text/*). */
const TEXT_TYPES: ReadonlySet<string> = new Set(['application/xml', 'application/javascript', 'application/x-www-form-urlencoded']);

async function callHttpTool(fetch: OutboundFetch, call: HttpCall, signal: AbortSignal): Promise<TransportAnswer> {
  const request = withCredential(call.request, call.credential);
  // An argument placed in the Accept header (an API's version negotiation) replaces the default.
  const headers: Record<string, string> = {
    accept: 'application/json, text/plain;q=0.9, */*;q=0.8',
    ...request.headers,
    ...call.traceHeaders,
  };
  if (request.body !== undefined) headers['content-type'] = 'application/json';
  // The registry's credential replaces any passthrough: the caller's token never goes with it.
  if (call.authorization !== undefined && call.credential === undefined) headers['authorization'] = call.authorization;
  let response: Response;
  try {
    response = await fetch(request.url, { method: request.method, headers, body: request.body, signal, redirect: 'manual' });
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    const refused = refusalOf(err);
    if (refused) throw new TargetRefusedError(refused.message);
    const code = (err as { cause?: { code?: string } }).cause?.code;
    if (code !== undefined && TLS_FAILURE.test(code))
      throw new ToolServiceError(
        'tls-unverified',
        `the tool's TLS certificate does not verify (${code}); a private CA is trusted once OUTBOUND_CA_FILE names it`,
      );
    throw new ToolServiceError('tool-unreachable', `the tool's endpoint cannot be reached${code ? ` (${code})` : ''}`);
  }
  annotateActive('http.response.status_code', response.status);
  let bytes: Buffer;
  try {
    bytes = await readLimited(response, call.maxResponseBytes);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (err instanceof ToolServiceError) throw err;
    // The tool dropped the connection mid-answer: as unreachable as not answering at all.
    throw new ToolServiceError('tool-unreachable', 'the tool closed the connection before its answer was complete');
  }
  // The tool's own refusal or failure is a bad gateway answer for the agent (502), with its status.
  if (response.status >= 400)
    throw new ToolServiceError(`http-${response.status}`, bytes.toString('utf8').slice(0, 1000) || response.statusText);
  if (response.status >= 300)
    throw new ToolServiceError(
      `http-${response.status}`,
      `the tool answered with a redirect (${response.status}), which the registry does not follow; register the tool at its final URL`,
    );
  return answerOf(response.headers.get('content-type'), bytes);
}

/** The observation of an answer, by its media type. */
function answerOf(contentType: string | null, bytes: Buffer): TransportAnswer {
  const mediaType = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (mediaType.includes('json')) {
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch {
      throw new ToolServiceError('invalid-response', 'the tool sent a JSON content type with a body that is not JSON');
    }
    return { text: typeof value === 'string' ? value : JSON.stringify(value) };
  }
  // No content type, or an empty answer: text, as the article's tools have always been read.
  if (
    mediaType === '' ||
    bytes.byteLength === 0 ||
    mediaType.startsWith('text/') ||
    mediaType.endsWith('+xml') ||
    TEXT_TYPES.has(mediaType)
  )
    return { text: bytes.toString('utf8') };
  const type = mediaType.startsWith('image/') ? 'image' : 'resource';
  return {
    text: `[${type === 'image' ? 'image' : 'binary'} ${mediaType}, ${bytes.byteLength} bytes]`,
    binary: { type, mimeType: mediaType, data: bytes.toString('base64') },
  };
}

async function readLimited(response: Response, max: number): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    if (bytes > max) throw new ToolServiceError('response-too-large', 'the tool sent more than the registry keeps for one call');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** HTTP tools: one request to the tool's target; the answer is one chunk. */
export class HttpTransport implements ToolTransport {
  readonly state = 'connected' as const;
  readonly #maxResponseBytes: number;
  readonly #fetch: OutboundFetch;
  readonly #credentials: HostCredentials | undefined;

  /** `fetch`: the outbound address policy's (src/bridge/outbound-fetch.ts), which checks every connection's address. */
  constructor(maxResponseBytes: number, fetch: OutboundFetch, credentials?: HostCredentials) {
    this.#maxResponseBytes = maxResponseBytes;
    this.#fetch = fetch;
    this.#credentials = credentials;
  }

  /** The owner's credential as request parts, fetched (client credentials, token exchange) if need be. */
  async #credentialParts(call: TransportCall, origin: string): Promise<CredentialParts | undefined> {
    if (this.#credentials === undefined) return undefined;
    const found = this.#credentials.credentialOf(call.owner, call.tool.name, origin);
    if (found === undefined) return undefined;
    return this.#credentials.parts.partsFor(found.key, found.credential, call.callerToken);
  }

  async call(call: TransportCall): Promise<TransportAnswer> {
    const http = call.tool.http;
    if (!http) throw new TypeError(`${call.tool.name} is not an HTTP tool`);
    const request = httpRequestOf(http, call.arguments);
    // The HTTP client span (OpenTelemetry's conventions: named after the method; the path as its
    // template, no query: arguments and a descriptor's endpoint could carry secrets).
    const port = request.url.port !== '' ? Number(request.url.port) : request.url.protocol === 'https:' ? 443 : 80;
    const attributes = {
      'http.request.method': request.method,
      'server.address': request.url.hostname.replace(/^\[|\]$/g, ''),
      'server.port': port,
      'url.path': request.pathTemplate,
    };
    const credential = await this.#credentialParts(call, request.url.origin);
    const answer = await traceTransport(request.method, attributes, (traceHeaders) =>
      callHttpTool(
        this.#fetch,
        { request, authorization: call.authorization, maxResponseBytes: this.#maxResponseBytes, traceHeaders, credential },
        call.signal,
      ),
    );
    call.onChunk?.(answer.text);
    return answer;
  }

  close(): void {}
}
