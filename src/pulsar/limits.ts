/**
 * What one message can carry. A payload travels base64-encoded inside a JSON text frame, and the
 * broker parses text frames up to its `webSocketMaxTextFrameSize` (1 MiB by default), closing the
 * socket on a larger one; its producer then refuses a message past `maxMessageSize`. So a
 * message's JSON is checked, exactly, against what one frame of `maxFrameBytes` can carry (about
 * 786 KB at 1 MiB), lowered to the broker's own limits when they could be read
 * (src/pulsar/broker-limits.ts), and refused before anything is sent.
 */
import type { BrokerLimits } from './broker-limits.js';

/** Pulsar's default webSocketMaxTextFrameSize. */
export const DEFAULT_MAX_FRAME_BYTES = 1024 * 1024;

/**
 * Room kept beside the payload under the broker's maxMessageSize, which its producer compares
 * with the message's header and payload together. Measured on Pulsar 4.0.8 with maxMessageSize
 * 5242880: a payload of 5242880 bytes was refused as 5242919 with its header (a one-character
 * `id` property), 50 bytes less went through; a uuid `id` and a `traceparent` add under 150.
 */
const MESSAGE_HEADER_ALLOWANCE = 1024;

/** The limits one publish meets. */
export interface BusLimits {
  /** The largest text frame: the setting, or the broker's webSocketMaxTextFrameSize when lower. */
  maxFrameBytes: number;
  frameFrom: 'setting' | 'broker';
  /** The broker's maxMessageSize, when read from it. */
  maxMessageBytes: number | undefined;
}

/** What bounds one message on the bus, and by how much a message missed it. */
export interface MessageSizeFacts extends BusLimits {
  /** The message's payload: bytes of JSON. */
  bytes: number;
  /** The most bytes of JSON one message can carry here. */
  limitBytes: number;
  /** What sets that limit: the WebSocket text frame (base64 inside), or the broker's maxMessageSize. */
  boundBy: 'frame' | 'message';
}

/** The frame limit in force: the setting, lowered to the broker's when it is lower. */
export function effectiveLimits(maxFrameBytes: number, broker: BrokerLimits | undefined): BusLimits {
  if (broker && broker.maxTextFrameBytes < maxFrameBytes) {
    return { maxFrameBytes: broker.maxTextFrameBytes, frameFrom: 'broker', maxMessageBytes: broker.maxMessageBytes };
  }
  return { maxFrameBytes, frameFrom: 'setting', maxMessageBytes: broker?.maxMessageBytes };
}

/**
 * The most bytes of payload one publish frame can carry with these properties and context:
 * the frame less everything but the base64 text, of which every 4 characters hold 3 bytes
 * (base64 characters need no escaping in JSON, so this is exact); then the broker's
 * maxMessageSize, less room for the message header, when known.
 */
export function payloadLimit(
  limits: BusLimits,
  properties: Record<string, string>,
  context: string,
): { bytes: number; boundBy: 'frame' | 'message' } {
  const envelope = Buffer.byteLength(JSON.stringify({ payload: '', properties, context }));
  const byFrame = Math.max(0, Math.floor((limits.maxFrameBytes - envelope) / 4) * 3);
  const byMessage = limits.maxMessageBytes === undefined ? Infinity : Math.max(0, limits.maxMessageBytes - MESSAGE_HEADER_ALLOWANCE);
  return byMessage < byFrame ? { bytes: byMessage, boundBy: 'message' } : { bytes: byFrame, boundBy: 'frame' };
}

/** The facts of a payload too large for one message, or undefined when it fits. */
export function oversize(
  payload: string,
  limits: BusLimits,
  properties: Record<string, string>,
  context: string,
): MessageSizeFacts | undefined {
  const bytes = Buffer.byteLength(payload);
  const limit = payloadLimit(limits, properties, context);
  if (bytes <= limit.bytes) return undefined;
  return { bytes, limitBytes: limit.bytes, boundBy: limit.boundBy, ...limits };
}

/** A library-neutral account of a payload too large; the registry's bridge words its own. */
export function oversizeMessage(facts: MessageSizeFacts): string {
  const bound =
    facts.boundBy === 'frame'
      ? `base64-encoded in a WebSocket text frame of at most ${facts.maxFrameBytes} bytes`
      : `under the broker's maxMessageSize of ${String(facts.maxMessageBytes)} bytes`;
  return `the message is ${facts.bytes} bytes of JSON, more than the ${facts.limitBytes} one message on the bus carries (${bound})`;
}
