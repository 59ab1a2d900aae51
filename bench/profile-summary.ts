/**
 * Where a read's microseconds go, from a V8 CPU profile of the registry under one row of load
 * (bench/wrk-reads.ts --wrk-profile, or any .cpuprofile):
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> <requests answered>
 *
 * Prints, in microseconds per request: the busy time by whose code was running (the registry's
 * src/, Fastify, other packages, Node's internals, native code, GC), then each hook, handler,
 * serializer and other callback Fastify called into (a frame outside Fastify whose caller is
 * Fastify's: the onRequest/preHandler/onSend/onResponse hooks, route handlers, genReqId, ...)
 * and a few of Node's own steps (header block, socket write), each sample charged to the
 * innermost of them on its stack. Frames are named by function, file, line and column of the
 * code V8 ran (tsx's output: anonymous hooks show as line 1 and their column).
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { CpuProfile } from './profiler.js';
import { f0, f1, table } from './report.js';

export interface ProfileSummary {
  row: string;
  n: number;
  requests: number;
  file: string;
  /** Microseconds per request, busy (not idle) time. */
  busyUs: number;
  categories: { name: string; us: number }[];
  /** Microseconds per request in each callback Fastify called (up to the next callback or step), largest first. */
  callbacks: { name: string; us: number }[];
  /** Microseconds per request in Node's own steps (with what they call). */
  steps: { name: string; us: number }[];
}

const FASTIFY =
  /\/node_modules\/(fastify|avvio|find-my-way|light-my-request|@fastify\/(?:error|ajv-compiler|fast-json-stringify-compiler|merge-json-schemas))\//;
const NODE_STEPS: readonly [string, RegExp][] = [
  ['node: header block (_storeHeader)', /^_storeHeader$/],
  ['node: setHeader/getHeader', /^(setHeader|getHeader|removeHeader|hasHeader)$/],
  ['node: socket write (writeGeneric, writevGeneric)', /^(writeGeneric|writevGeneric|handleWriteReq)$/],
  ['node: HTTP parser (parserOnHeadersComplete)', /^parserOnHeadersComplete$/],
];

const shortUrl = (url: string) => {
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + '/node_modules/'.length);
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  const bench = url.indexOf('/bench/');
  if (bench >= 0) return url.slice(bench + 1);
  return url.replace(/^file:\/\//, '');
};

export function summariseProfile(profile: CpuProfile, meta: { row: string; n: number; requests: number; file: string }): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const perReq = (us: number) => us / Math.max(1, meta.requests);

  const categories = new Map<string, number>();
  const callbacks = new Map<string, number>();
  const steps = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, us: number) => m.set(k, (m.get(k) ?? 0) + us);
  let busy = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // A sample stands for the time until the next one.
    const us = profile.timeDeltas[i + 1] ?? 0;
    const leaf = byId.get(profile.samples[i] ?? -1);
    if (!leaf) continue;
    const fn = leaf.callFrame.functionName;
    if (fn === '(idle)') {
      add(categories, 'idle', us);
      continue;
    }
    busy += us;
    // Whose code: the leaf's, or for native code the nearest caller with a script.
    let owner = leaf;
    while (owner.callFrame.url === '' && parent.has(owner.id)) owner = byId.get(parent.get(owner.id) ?? -1) ?? owner;
    const url = owner.callFrame.url;
    const native = leaf.callFrame.url === '' ? ' (native code under it)' : '';
    const category =
      fn === '(garbage collector)'
        ? 'GC'
        : fn === '(program)'
          ? 'V8/Node outside JavaScript (program)'
          : url.startsWith('node:')
            ? `Node internals${native}`
            : FASTIFY.test(url)
              ? `Fastify${native}`
              : url.includes('/node_modules/')
                ? `package ${shortUrl(url).split('/')[0]?.startsWith('@') ? shortUrl(url).split('/').slice(0, 2).join('/') : shortUrl(url).split('/')[0]}${native}`
                : url.includes('/src/')
                  ? `registry src/${native}`
                  : `other${native}`;
    add(categories, category, us);

    // Innermost: the sample goes to the nearest of Node's steps or of the callbacks Fastify
    // called, walking up from the leaf. A callback-style hook's done() runs the next hook and
    // the handler on its stack, so inclusive time would charge every later step to the first hook.
    let owned = false;
    for (let node: typeof leaf | undefined = leaf; node && !owned; node = byId.get(parent.get(node.id) ?? -1)) {
      const frame = node.callFrame;
      if (frame.url.startsWith('node:')) {
        const step = NODE_STEPS.find(([, re]) => re.test(frame.functionName));
        if (step) {
          add(steps, step[0], us);
          owned = true;
        }
        continue;
      }
      const up = byId.get(parent.get(node.id) ?? -1);
      if (!up || frame.url === '' || FASTIFY.test(frame.url) || !FASTIFY.test(up.callFrame.url)) continue;
      add(callbacks, `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}:${frame.lineNumber + 1}:${frame.columnNumber + 1}`, us);
      owned = true;
    }
    if (!owned) add(steps, 'Fastify and Node outside any callback (routing, request and reply objects, parsing)', us);
  }
  const sorted = (m: Map<string, number>) => [...m.entries()].map(([name, us]) => ({ name, us: perReq(us) })).sort((a, b) => b.us - a.us);
  return {
    ...meta,
    busyUs: perReq(busy),
    categories: sorted(categories),
    callbacks: sorted(callbacks),
    steps: sorted(steps),
  };
}

/** The summary as one table: what ran, microseconds per request, share of busy time. */
export function profileTable(p: ProfileSummary, top = 14): { text: string; markdown: string } {
  const share = (us: number) => `${f0((us / p.busyUs) * 100)}%`;
  const rows = [
    ['busy (all but idle)', f1(p.busyUs), '100%'],
    ...p.categories.filter((c) => c.name !== 'idle').map((c) => [`  ${c.name}`, f1(c.us), share(c.us)]),
    ['split by step and callback (each sample to the innermost)', '', ''],
    ...p.steps.map((c) => [`  ${c.name}`, f1(c.us), share(c.us)]),
    ...p.callbacks.slice(0, top).map((c) => [`  called by Fastify: ${c.name}`, f1(c.us), share(c.us)]),
  ];
  return table(['what ran', 'us/request', 'of busy'], rows, 1, ['what ran']);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [file, requests] = process.argv.slice(2);
  if (file === undefined || requests === undefined || !(Number(requests) > 0)) {
    process.stderr.write('usage: node --import tsx bench/profile-summary.ts <file.cpuprofile> <requests answered>\n');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const summary = summariseProfile(profile, { row: file, n: 0, requests: Number(requests), file });
  process.stdout.write(`${profileTable(summary, 30).text}\n`);
}
