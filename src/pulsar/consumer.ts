/**
 * A consumer or reader on one topic over the reconnecting socket. Every message is acknowledged,
 * even on non-persistent topics: the broker stops delivering after receiverQueueSize
 * unacknowledged messages.
 */
import { ReconnectingSocket, type SocketEvents, type SocketOptions } from './socket.js';
import { ReceivedMessage } from './wire.js';

export interface ConsumerOptions extends SocketOptions {
  /**
   * 'on-receipt' (the default): acknowledged before it is handled. 'after-handling': once the
   * handler's promise settles, on the connection it came on, so that at most the receiver queue
   * waits unhandled (a reader that reconnects reads again from where its owner says).
   */
  ack?: 'on-receipt' | 'after-handling';
}

export class Consumer {
  readonly socket: ReconnectingSocket;

  constructor(
    options: ConsumerOptions,
    onMessage: (message: ReceivedMessage) => void | Promise<void>,
    events: Omit<SocketEvents, 'frame'> = {},
  ) {
    const afterHandling = options.ack === 'after-handling';
    this.socket = new ReconnectingSocket(options, {
      ...events,
      frame: (frame) => {
        const messageId = frame['messageId'];
        if (typeof messageId !== 'string') return;
        const ack = JSON.stringify({ messageId });
        const message = new ReceivedMessage(messageId, frame);
        if (!afterHandling) {
          this.socket.send(ack);
          void onMessage(message);
          return;
        }
        const generation = this.socket.generation;
        const settle = () => void this.socket.send(ack, generation);
        Promise.resolve(onMessage(message)).then(settle, settle);
      },
    });
  }
}
