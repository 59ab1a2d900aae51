/**
 * How a call through the bridge can fail, independent of transport. The bridge maps these onto
 * the error catalogue (src/model/errors.ts) and records them as usage outcome classes.
 */
import type { MessageSizeFacts } from '../pulsar/limits.js';

/** The bus or the tool cannot be reached now (503), quickly, never after a long wait. */
export class BridgeUnavailableError extends Error {
  override readonly name = 'BridgeUnavailableError';
}

/** An mcp tool's upstream MCP server cannot be reached now (503): no message bus is involved. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
}

/** The service answered with an error (502), carrying its own type and message. */
export class ToolServiceError extends Error {
  override readonly name = 'ToolServiceError';
  readonly type: string;
  constructor(type: string, message: string) {
    super(message);
    this.type = type;
  }
}

/** No complete answer within the tool's timeout (504). */
export class CallTimeoutError extends Error {
  override readonly name = 'CallTimeoutError';
}

/** The request cannot be carried: too large for the bus (413). */
export class RequestTooLargeError extends Error {
  override readonly name = 'RequestTooLargeError';
  readonly facts: MessageSizeFacts | undefined;
  constructor(message: string, facts?: MessageSizeFacts) {
    super(message);
    this.facts = facts;
  }
}

/** The caller hung up before the answer came; the call is abandoned. */
export class CallerGoneError extends Error {
  override readonly name = 'CallerGoneError';
}

/**
 * The outbound address policy refused the call's target (src/bridge/outbound-policy.ts): the
 * address the tool's host resolved to, or the host as written, is one the registry does not
 * connect to.
 */
export class TargetRefusedError extends Error {
  override readonly name = 'TargetRefusedError';
}
