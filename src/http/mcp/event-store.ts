/**
 * Resumable MCP streams (issue 31): the SDK transport's `EventStore`, one per session, holding
 * the session's recent events in memory so that a client that lost a stream and comes back
 * with `Last-Event-ID` is sent what it missed (the Streamable HTTP transport's resumability).
 *
 * Bounded three ways, per session: at most `maxEvents` events, none older than `maxAgeMs`, and
 * at most `maxBytes` of their JSON; the oldest go first. An event id is `<stream>/<sequence>`
 * and means something only to the store of the session that made it: a session's transport
 * asks its own store, so no id replays another session's events (and sessions already answer
 * their own caller only). An id older than what is still held replays what is held of its
 * stream; a client that was away longer than the window misses the rest (for
 * `notifications/tools/list_changed`, its next `tools/list` catches up anyway).
 */
import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

export interface McpEventHistoryLimits {
  /** Events kept per session, over all its streams. */
  maxEvents: number;
  /** How long an event stays replayable. */
  maxAgeMs: number;
  /** Bytes of event JSON kept per session. */
  maxBytes: number;
}

/**
 * Streams a session's store remembers: each POST answered as a stream is one (its ids end with
 * it), the GET stream another, refreshed by every event on it and every reconnect's priming.
 */
const KNOWN_STREAMS = 256;

interface StoredEvent {
  readonly streamId: StreamId;
  readonly sequence: number;
  /** The message, or a JSON-RPC response kept as the bytes it was sent as (storeAnswer). */
  readonly message: JSONRPCMessage | SplicedAnswer;
  readonly bytes: number;
  readonly at: number;
}

/** A response sent from precomputed bytes: `{"result":`, the shared `result` bytes, then `tail`. */
class SplicedAnswer {
  constructor(
    readonly result: Buffer,
    readonly tail: string,
  ) {}

  get bytes(): number {
    return RESULT_HEAD.length + this.result.length + Buffer.byteLength(this.tail);
  }

  /** Parsed only when replayed, which is rare: the answer was sent as bytes. */
  message(): JSONRPCMessage {
    return JSON.parse(`${RESULT_HEAD}${this.result.toString('utf8')}${this.tail}`) as JSONRPCMessage;
  }
}

/** How a JSON-RPC response the SDK serialises begins (it builds `{ result, jsonrpc, id }`). */
const RESULT_HEAD = '{"result":';

const messageOf = (event: StoredEvent): JSONRPCMessage =>
  event.message instanceof SplicedAnswer ? event.message.message() : event.message;

/** The SDK's priming events: an empty object that carries no message, never replayed. */
function isPriming(message: JSONRPCMessage): boolean {
  return Object.keys(message).length === 0;
}

export class SessionEventStore implements EventStore {
  readonly #limits: McpEventHistoryLimits;
  readonly #now: () => number;
  /** Oldest first; sequences rise by one across the session's streams. */
  readonly #events: StoredEvent[] = [];
  /**
   * Streams this store has given ids for, least recently used first (at most KNOWN_STREAMS): an
   * id naming another is not this session's, or too old, and the SDK answers it 400.
   */
  readonly #streams = new Set<StreamId>();
  /** Streams a JSON-RPC response was stored on: POST answers that have nothing more to come. */
  readonly #answered = new Set<StreamId>();
  #sequence = 0;
  #bytes = 0;

  constructor(limits: McpEventHistoryLimits, now: () => number = Date.now) {
    this.#limits = limits;
    this.#now = now;
  }

  /** Events held now (for tests and limits). */
  get size(): number {
    return this.#events.length;
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    // A priming event gets an id (the client's cursor) but holds nothing worth replaying.
    const answer = 'id' in message && ('result' in message || 'error' in message);
    return this.#store(streamId, isPriming(message) ? undefined : message, answer);
  }

  /** A priming event (an id, no message), as the SDK's transport stores one with storeEvent(id, {}). */
  storePriming(streamId: StreamId): EventId {
    return this.#store(streamId, undefined, false);
  }

  /**
   * A JSON-RPC response sent as `{"result":`, the `result` bytes and `tail`
   * (src/http/mcp/list-answer.ts): kept as those bytes (the result shared with every answer
   * made of it), counted by their length, never serialised again.
   */
  storeAnswer(streamId: StreamId, result: Buffer, tail: string): EventId {
    return this.#store(streamId, new SplicedAnswer(result, tail), true);
  }

  #store(streamId: StreamId, message: JSONRPCMessage | SplicedAnswer | undefined, answer: boolean): EventId {
    const sequence = ++this.#sequence;
    this.#streams.delete(streamId);
    this.#streams.add(streamId);
    if (this.#streams.size > KNOWN_STREAMS) {
      const oldest = this.#streams.values().next().value;
      if (oldest !== undefined) {
        this.#streams.delete(oldest);
        this.#answered.delete(oldest);
      }
    }
    if (answer) this.#answered.add(streamId);
    if (message !== undefined) {
      const bytes = message instanceof SplicedAnswer ? message.bytes : Buffer.byteLength(JSON.stringify(message));
      this.#events.push({ streamId, sequence, message, bytes, at: this.#now() });
      this.#bytes += bytes;
    }
    this.#evict();
    return `${streamId}/${sequence}`;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.#parse(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }) {
    const cursor = this.#parse(lastEventId);
    // The SDK asks getStreamIdForEventId first and refuses ids it does not know (400).
    if (cursor === undefined) throw new Error('unknown event id');
    this.#evict();
    for (const event of [...this.#events]) {
      if (event.streamId === cursor.streamId && event.sequence > cursor.sequence)
        await send(`${event.streamId}/${event.sequence}`, messageOf(event));
    }
    return cursor.streamId;
  }

  /**
   * For a cursor on a POST stream that has been answered, the held events after it (empty when
   * the client has them all): such a stream ends once they are sent, where the SDK would keep a
   * resumed stream open. Undefined for the GET stream, a stream still being answered, or an id
   * this store does not know.
   */
  answeredAfter(lastEventId: EventId): { id: EventId; message: JSONRPCMessage }[] | undefined {
    const cursor = this.#parse(lastEventId);
    if (cursor === undefined || !this.#answered.has(cursor.streamId)) return undefined;
    this.#evict();
    return this.#events
      .filter((event) => event.streamId === cursor.streamId && event.sequence > cursor.sequence)
      .map((event) => ({ id: `${event.streamId}/${event.sequence}`, message: messageOf(event) }));
  }

  /** `<stream>/<sequence>` for a stream of this store and a sequence it has given; else undefined. */
  #parse(eventId: EventId): { streamId: StreamId; sequence: number } | undefined {
    const slash = eventId.lastIndexOf('/');
    if (slash <= 0) return undefined;
    const streamId = eventId.slice(0, slash);
    const digits = eventId.slice(slash + 1);
    if (!/^[0-9]{1,15}$/.test(digits) || !this.#streams.has(streamId)) return undefined;
    const sequence = Number(digits);
    return sequence <= this.#sequence ? { streamId, sequence } : undefined;
  }

  #evict(): void {
    const { maxEvents, maxAgeMs, maxBytes } = this.#limits;
    const oldest = this.#now() - maxAgeMs;
    let drop = 0;
    let bytes = this.#bytes;
    while (drop < this.#events.length) {
      const event = this.#events[drop];
      if (event === undefined) break;
      if (this.#events.length - drop <= maxEvents && bytes <= maxBytes && event.at >= oldest) break;
      bytes -= event.bytes;
      drop++;
    }
    if (drop > 0) this.#events.splice(0, drop);
    this.#bytes = bytes;
  }
}
