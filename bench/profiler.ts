/**
 * V8's sampling profiler of a child started with `--inspect=127.0.0.1:<port>`, over the
 * inspector protocol: started and stopped around one row, so that each profile holds that
 * row's requests and nothing of the startup or the import (a `--cpu-prof` file covers the whole
 * process). The `ws` client is the one the Pulsar socket uses.
 */
import WebSocket from 'ws';

/** V8's `Profiler.Profile`: the parts bench/profile-summary.ts reads. */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
    children?: number[];
  }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Profiler {
  start(): Promise<void>;
  stop(): Promise<CpuProfile>;
  close(): Promise<void>;
}

export async function connectProfiler(inspectPort: number, samplingIntervalUs = 100): Promise<Profiler> {
  const list = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const url = list[0]?.webSocketDebuggerUrl;
  if (url === undefined) throw new Error(`no inspector target on port ${inspectPort}`);
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  let id = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  socket.on('message', (data: Buffer) => {
    const msg = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
    if (msg.id === undefined) return;
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p?.reject(new Error(msg.error.message));
    else p?.resolve(msg.result);
  });
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const k = ++id;
      pending.set(k, { resolve, reject });
      socket.send(JSON.stringify({ id: k, method, params }));
    });
  await send('Profiler.enable');
  await send('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
  return {
    start: async () => {
      await send('Profiler.start');
    },
    stop: async () => ((await send('Profiler.stop')) as { profile: CpuProfile }).profile,
    close: async () => {
      socket.close();
      await new Promise((resolve) => socket.once('close', resolve));
    },
  };
}
