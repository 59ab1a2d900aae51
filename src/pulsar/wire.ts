/**
 * The frames of Pulsar's WebSocket API (pure JSON over `ws`): topic paths in the URLs, publish
 * frames with the payload in base64, and what a received frame carries. Pulsar 4.0's
 * ProducerHandler, ConsumerHandler and ReaderHandler; see ../shared/reference/pulsar-websocket.md.
 */

/** The broker cannot be reached, refused the socket, or the socket went away. */
export class BrokerUnavailableError extends Error {
  override readonly name = 'BrokerUnavailableError';
}

/** `non-persistent://tg/request/joke` -> `non-persistent/tg/request/joke`, local name encoded. */
export function topicPath(topic: string): string {
  const match = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/.exec(topic);
  if (!match) throw new Error(`not a Pulsar topic name: ${topic}`);
  const [, domain, tenant, namespace, local] = match as unknown as [string, string, string, string, string];
  return `${domain}/${tenant}/${namespace}/${encodeURIComponent(local)}`;
}

function base(url: string): string {
  return url.replace(/\/+$/, '');
}

function query(params: Record<string, string | number>): string {
  const entries = Object.entries(params);
  return entries.length === 0 ? '' : `?${entries.map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`).join('&')}`;
}

export function producerUrl(url: string, topic: string, params: Record<string, string | number> = {}): string {
  return `${base(url)}/ws/v2/producer/${topicPath(topic)}${query(params)}`;
}

export function consumerUrl(url: string, topic: string, subscription: string, params: Record<string, string | number> = {}): string {
  return `${base(url)}/ws/v2/consumer/${topicPath(topic)}/${encodeURIComponent(subscription)}${query(params)}`;
}

export function readerUrl(url: string, topic: string, params: Record<string, string | number>): string {
  return `${base(url)}/ws/v2/reader/${topicPath(topic)}${query(params)}`;
}

/** A publish frame: the payload's bytes in base64, the properties, the routing key if any, the ack's context. */
export function publishFrame(payload: string | Buffer, properties: Record<string, string>, context: string, key?: string): string {
  const base64 = (typeof payload === 'string' ? Buffer.from(payload) : payload).toString('base64');
  return JSON.stringify({ payload: base64, properties, ...(key !== undefined && { key }), context });
}

/** Strict UTF-8: bytes that are not valid UTF-8 throw instead of becoming U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function strictText(bytes: Buffer): string | undefined {
  try {
    return UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** A frame as a JSON object, or undefined when it is not one. */
export function parseFrame(text: string): Record<string, unknown> | undefined {
  try {
    const frame: unknown = JSON.parse(text);
    return typeof frame === 'object' && frame !== null && !Array.isArray(frame) ? (frame as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A frame's `properties`, its string values only, in a Map (the sender names the keys). */
function propertiesOf(value: unknown): ReadonlyMap<string, string> {
  const properties = new Map<string, string>();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return properties;
  for (const [key, v] of Object.entries(value)) if (typeof v === 'string') properties.set(key, v);
  return properties;
}

/**
 * A message as a consumer or reader receives it. The payload is decoded only when asked for:
 * every client on a shared response topic sees every response, and most are not its own.
 */
export class ReceivedMessage {
  readonly messageId: string;
  readonly properties: ReadonlyMap<string, string>;
  /** When the broker's WebSocket service took it (ISO 8601), the same for every reader. */
  readonly publishTime: string | undefined;
  readonly #base64: string;
  #payload: Buffer | undefined;

  constructor(messageId: string, frame: Record<string, unknown>) {
    this.messageId = messageId;
    this.properties = propertiesOf(frame['properties']);
    this.publishTime = typeof frame['publishTime'] === 'string' ? frame['publishTime'] : undefined;
    this.#base64 = String(frame['payload'] ?? '');
  }

  /** The payload's bytes, as published (what a MAC over it covers). */
  get payload(): Buffer {
    this.#payload ??= Buffer.from(this.#base64, 'base64');
    return this.#payload;
  }

  /** The payload as text; undefined when it is not UTF-8 (never U+FFFD for bytes nobody sent). */
  get text(): string | undefined {
    return strictText(this.payload);
  }
}
