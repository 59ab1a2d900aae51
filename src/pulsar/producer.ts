/**
 * A producer on one topic over the reconnecting socket: each publish frame carries a `context`
 * that the broker's answer repeats, so answers are matched to publishes however many are in
 * flight. Publishes waiting on a connection that drops fail at once rather than waiting out
 * their caller's timeout.
 */
import { ReconnectingSocket, type SocketEvents, type SocketOptions } from './socket.js';
import { BrokerUnavailableError } from './wire.js';

/** The broker's answer to one publish. */
export interface Ack {
  /** The broker took (and, on a persistent topic, persisted) the message. */
  ok: boolean;
  messageId: string | undefined;
  result: string;
  errorMsg: string;
}

export class Producer {
  readonly socket: ReconnectingSocket;
  readonly #acks = new Map<string, { resolve: (ack: Ack) => void; reject: (err: Error) => void }>();
  #context = 0;

  constructor(options: SocketOptions, events: Omit<SocketEvents, 'frame'> = {}) {
    this.socket = new ReconnectingSocket(options, {
      ...events,
      frame: (frame) => this.#answered(frame),
      drop: (err) => {
        this.#failAll(err);
        events.drop?.(err);
      },
    });
  }

  /** The context for the next publish frame (sizes are checked with it: it is part of the frame). */
  nextContext(): string {
    return String(++this.#context);
  }

  /**
   * Sends a publish frame (wire.ts publishFrame) made with `context`. Resolves with the broker's
   * answer; rejects at once when the socket is not open, or when it drops before the answer.
   */
  send(frame: string, context: string): Promise<Ack> {
    return new Promise<Ack>((resolve, reject) => {
      this.#acks.set(context, { resolve, reject });
      if (!this.socket.send(frame)) {
        this.#acks.delete(context);
        reject(new BrokerUnavailableError('not connected to the broker'));
      }
    });
  }

  close(): void {
    this.socket.close();
    this.#failAll(new BrokerUnavailableError('the connection to the broker is closed'));
  }

  /** Closes politely (see ReconnectingSocket.closeGently); unanswered publishes fail first. */
  closeGently(timeoutMs: number): Promise<void> {
    this.#failAll(new BrokerUnavailableError('the connection to the broker is closed'));
    return this.socket.closeGently(timeoutMs);
  }

  #answered(frame: Record<string, unknown>): void {
    const context = frame['context'];
    const ack = typeof context === 'string' ? this.#acks.get(context) : undefined;
    if (!ack) return;
    this.#acks.delete(context as string);
    const messageId = frame['messageId'];
    ack.resolve({
      ok: frame['result'] === 'ok',
      messageId: typeof messageId === 'string' ? messageId : undefined,
      result: String(frame['result']),
      errorMsg: String(frame['errorMsg'] ?? ''),
    });
  }

  #failAll(err: Error): void {
    for (const ack of this.#acks.values()) ack.reject(err);
    this.#acks.clear();
  }
}
