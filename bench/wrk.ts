/**
 * wrk (https://github.com/wg/wrk, Debian's package) as the load generator of the HTTP read rows
 * (issue 33). Written in C on epoll, it spends a few microseconds of CPU on a request where
 * autocannon, in Node on the same cores, spent more than the servers it measured, so every
 * ratio came out near 1. Its own CPU is read from /proc (the shell that runs it, once it has
 * waited for it: `cutime` and `cstime`) and shown beside the server's.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { treeCpuMs, type RunResult } from './lib.js';

const WRK = process.env['WRK'] ?? 'wrk';

/** Null when wrk runs; else what to do about it. */
export function wrkMissing(): string | null {
  const probe = spawnSync(WRK, ['--version'], { encoding: 'utf8' });
  if (probe.error === undefined) return null;
  return `the load generator wrk is not installed (${probe.error.message}): run \`apt-get install -y wrk\` as root (Debian and Ubuntu), or set WRK to its path`;
}

export interface WrkRequest {
  path: string;
  headers?: Record<string, string>;
}

export interface WrkOptions {
  base: string;
  /** Requests sent in turn, each thread starting at its own place; one is sent as it is. */
  requests: WrkRequest[];
  /** The status every answer should have; any other is counted as an error (checked in Lua for 3xx rows). */
  expectStatus: number;
  durationS: number;
  threads: number;
  connections: number;
  /** The server's pid, for its CPU per request (its children's too). */
  serverPid: number;
  /** Where the Lua script is written. */
  dir: string;
}

/** Lua's long string: no escape sequences, whatever the bytes. */
const luaString = (s: string) => {
  let eq = '';
  while (s.includes(`]${eq}]`)) eq += '=';
  return `[${eq}[${s}]${eq}]`;
};

let scripts = 0;

function script(o: WrkOptions): string {
  const formatted = o.requests.map((r) => {
    const headers = Object.entries(r.headers ?? {})
      .map(([k, v]) => `[ ${luaString(k)} ] = ${luaString(v)}`)
      .join(', ');
    return `wrk.format("GET", ${luaString(r.path)}, { ${headers} })`;
  });
  // A 2xx or 3xx other than the expected one is not an error to wrk; a `response` callback
  // counts it (only on rows expecting a 3xx: the callback costs wrk a Lua call per answer).
  const check3xx = o.expectStatus >= 300;
  return `
local requests = nil
local i = 0
-- A global: done() reads it from each thread with thread:get.
unexpected = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args)
  requests = { ${formatted.join(',\n')} }
  i = math.random(#requests)
end
function request()
  i = i + 1
  if i > #requests then i = 1 end
  return requests[i]
end
${check3xx ? `function response(status, headers, body) if status ~= ${o.expectStatus} then unexpected = unexpected + 1 end end` : ''}
function done(summary, latency, _requests)
  local u = 0
  for _, t in ipairs(threads) do u = u + (t:get("unexpected") or 0) end
  local e = summary.errors
  io.write(string.format('WRK_RESULT {"requests":%d,"durationUs":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"unexpected":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout, u, latency:percentile(50), latency:percentile(99)))
end
`;
}

interface WrkSummary {
  requests: number;
  durationUs: number;
  connect: number;
  read: number;
  write: number;
  status: number;
  timeout: number;
  unexpected: number;
  p50Us: number;
  p99Us: number;
}

/** One wrk run; the same RunResult as the autocannon runs, the load generator's CPU being wrk's. */
export async function wrkLoad(o: WrkOptions): Promise<RunResult> {
  const file = join(o.dir, `wrk-${process.pid}-${scripts++}.lua`);
  writeFileSync(file, script(o));
  const args = [`-t${o.threads}`, `-c${o.connections}`, `-d${o.durationS}s`, '--timeout', '30s', '-s', file, `${o.base}/`];
  const serverBefore = treeCpuMs(o.serverPid);
  // The shell waits for wrk, then reads its own stat, whose cutime and cstime are wrk's CPU.
  const child = spawn('sh', ['-c', `"$0" "$@"; rc=$?; echo; echo "WRK_SHELL_STAT $(cat /proc/$$/stat)"; exit $rc`, WRK, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const serverMs = treeCpuMs(o.serverPid) - serverBefore;
  const result = /^WRK_RESULT (.*)$/m.exec(out)?.[1];
  if (code !== 0 || result === undefined) throw new Error(`wrk exited ${code}: ${err || out}`);
  const s = JSON.parse(result) as WrkSummary;
  const stat = /^WRK_SHELL_STAT (.*)$/m.exec(out)?.[1] ?? '';
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // /proc/<pid>/stat counts clock ticks of 10 ms; cutime and cstime are fields 16 and 17.
  const wrkMs = (Number(fields[13]) + Number(fields[14])) * 10;
  const errors = s.connect + s.read + s.write + s.status + s.timeout + s.unexpected;
  const good = s.requests - s.status - s.unexpected;
  const elapsedS = s.durationUs / 1e6;
  const answered = Math.max(1, s.requests);
  const statuses: Record<string, number> = { [String(o.expectStatus)]: good };
  if (s.status + s.unexpected > 0) statuses['other'] = s.status + s.unexpected;
  return {
    rps: good / elapsedS,
    p50: s.p50Us / 1000,
    p99: s.p99Us / 1000,
    errors,
    total: s.requests,
    statuses,
    cpuUsPerReq: (serverMs * 1000) / answered,
    loadCpuUsPerReq: (wrkMs * 1000) / answered,
    serverCpuShare: serverMs / 1000 / elapsedS,
    loadCpuShare: wrkMs / 1000 / elapsedS,
  };
}
