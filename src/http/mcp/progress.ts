/**
 * An upstream MCP server's progress during a call, relayed to the client's progress token
 * (issue 31), bounded so that an upstream cannot flood the client through the registry: at
 * most one notification per `minIntervalMs` (the latest held back is sent when the interval
 * ends, or before the call's result, so the client sees the newest state) and at most `max`
 * per call. A value that does not
 * increase is dropped: MCP requires each progress to be greater than the one before.
 */
import type { CallProgress } from '../../bridge/transport.js';

/** Defaults 100 ms and 1,000: 10 a second is more than a person reads and far less than a loop can send. */
export interface ProgressLimits {
  minIntervalMs: number;
  max: number;
}

export interface ProgressRelay {
  relay(progress: CallProgress): void;
  /** The call ended: what is held back is sent now, before its result, and nothing after. */
  end(): void;
}

export function progressRelay(send: (progress: CallProgress) => void, limits: ProgressLimits): ProgressRelay {
  let sent = 0;
  let lastAt = -Infinity;
  let lastProgress = -Infinity;
  let held: CallProgress | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;

  const flush = (progress: CallProgress) => {
    held = undefined;
    sent++;
    lastAt = performance.now();
    lastProgress = progress.progress;
    send(progress);
  };

  return {
    relay(progress) {
      if (ended || sent >= limits.max || !(progress.progress > lastProgress)) return;
      const wait = lastAt + limits.minIntervalMs - performance.now();
      if (wait <= 0 && timer === undefined) return flush(progress);
      held = progress;
      timer ??= setTimeout(
        () => {
          timer = undefined;
          if (held !== undefined && !ended && sent < limits.max) flush(held);
        },
        Math.max(0, wait),
      );
    },
    end() {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      timer = undefined;
      if (held !== undefined && sent < limits.max) flush(held);
    },
  };
}
