/**
 * The limits a message meets on its way through Pulsar's WebSocket API, read from the broker.
 *
 * The broker's WebSocket service parses each text frame up to `webSocketMaxTextFrameSize` bytes
 * (Jetty's maxTextMessageSize, set by the producer, consumer and reader servlets; a frame of
 * exactly that size passes, one byte more closes the socket with 1009), and its producer refuses
 * a message whose header and payload exceed `maxMessageSize`. Both are broker settings
 * (broker.conf or standalone.conf, read at startup). The admin API serves them, as strings, in
 * `GET /admin/v2/brokers/configuration/runtime` (checked on Pulsar 4.0.8; the endpoint needs a
 * superuser token when authentication is on). A separate WebSocket proxy has no admin API: the
 * read fails there, and the caller keeps its own setting.
 */

/** What the broker says of its message limits. */
export interface BrokerLimits {
  /** `webSocketMaxTextFrameSize`: the largest text frame its WebSocket API parses. */
  maxTextFrameBytes: number;
  /** `maxMessageSize`: the largest message (header and payload) it takes, when it says. */
  maxMessageBytes: number | undefined;
}

/** The admin API's base URL on the host and port that serve the WebSocket API. */
function adminBase(wsUrl: string): string {
  const url = new URL(wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  return url.href.replace(/\/+$/, '');
}

function positive(value: unknown): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : typeof value === 'number' ? value : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/**
 * Reads the broker's message limits through its admin API. Rejects with an Error saying why
 * when they cannot be read (no admin API there, no permission, timeout).
 */
export async function readBrokerLimits(
  wsUrl: string,
  token: string | undefined,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<BrokerLimits> {
  // A plain timer over the request and its body: an AbortSignal.timeout inside AbortSignal.any
  // can be collected before it fires (nodejs/node#57736), and a body that stalls would then
  // hold every bus call behind it (PulsarWsClient.limits in src/bridge/pulsar-ws.ts waits for this).
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await readWithin(wsUrl, token, timeoutMs, controller.signal, () => timedOut);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

async function readWithin(
  wsUrl: string,
  token: string | undefined,
  timeoutMs: number,
  signal: AbortSignal,
  timedOut: () => boolean,
): Promise<BrokerLimits> {
  const url = `${adminBase(wsUrl)}/admin/v2/brokers/configuration/runtime`;
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: 'application/json', ...(token !== undefined && { authorization: `Bearer ${token}` }) },
      redirect: 'error',
      signal,
    });
  } catch (err) {
    throw new Error(
      timedOut()
        ? `no answer from ${new URL(url).host} within ${timeoutMs} ms`
        : `cannot reach ${new URL(url).host}: ${(err as Error).message}`,
    );
  }
  if (!res.ok) {
    await res.body?.cancel();
    const hint =
      res.status === 401 || res.status === 403
        ? ' (the endpoint needs a superuser token)'
        : res.status === 404
          ? ' (no broker admin API there, e.g. a WebSocket proxy)'
          : '';
    throw new Error(`GET /admin/v2/brokers/configuration/runtime answered HTTP ${res.status}${hint}`);
  }
  let config: unknown;
  try {
    config = await res.json();
  } catch {
    throw new Error(
      timedOut()
        ? `no whole answer from ${new URL(url).host} within ${timeoutMs} ms`
        : 'GET /admin/v2/brokers/configuration/runtime did not answer JSON',
    );
  }
  const values = typeof config === 'object' && config !== null ? (config as Record<string, unknown>) : {};
  const maxTextFrameBytes = positive(values['webSocketMaxTextFrameSize']);
  if (maxTextFrameBytes === undefined) throw new Error('the broker configuration has no webSocketMaxTextFrameSize');
  return { maxTextFrameBytes, maxMessageBytes: positive(values['maxMessageSize']) };
}
