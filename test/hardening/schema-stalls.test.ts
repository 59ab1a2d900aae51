/**
 * Issue 28: nothing a tool's schema, a call's arguments or an upstream's answer holds may stall
 * the registry. Over a real listening registry (loopback, port 0) this registers pathological
 * schemas (catastrophic regular expressions in `pattern`, `patternProperties` and
 * `propertyNames`; `uniqueItems` over 15,000 small arrays and objects; self- and
 * mutually-referring `$ref`s; schemas near the depth and size limits; an exponential `$ref`
 * DAG), calls the tools through POST /tools/{name}/invoke, /mcp (the SDK's Client) and /ag-ui
 * with hostile values, and calls the tools of an upstream MCP server whose output schemas hold
 * such patterns and whose answers are the hostile strings. While each case runs, /healthz is
 * polled: its worst answer must stay under 50 ms, and every answer must be a 2xx result or a 4xx
 * problem (the tool's own failure a 502), never a 500.
 *
 * The registry, its tool host and the upstream run in this process, so a stall of the
 * registry's event loop is a stall of the poller's: the poller takes its start time before it
 * waits to send, so every instant of a case lies inside some poll's measured interval and no
 * stall falls between two polls. What the test itself must encode (the 124 KB bodies) is
 * encoded before the watch starts, and what a process does once (the meta-schemas' compile, the
 * first call of each front) is done before the first watch. A case that misses the budget by
 * less than a stall would is tried again with fresh tools, up to three times.
 *
 * The upstream is the SDK's low-level `Server` (test/helpers/mcp-upstream.ts), not `McpServer`:
 * `McpServer` checks its own structured answers against their output schema with V8's regular
 * expressions, which in this process would stall the poller and be blamed on the registry.
 */
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pointerOf, type PathSegment } from '../../src/json-schema/check.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';
import { connect, type McpTestClient } from '../mcp/support.js';

const LOOPBACK = '127.0.0.1';
/** The worst /healthz answer allowed while a case runs (issue 28). */
const HEALTH_BUDGET_MS = 50;
/**
 * A worst answer at or above this is a stall, not a slow machine, and is not tried again: this
 * machine's CPU is at times several times slower for a while (see test/registry/import-slices.test.ts),
 * which turns a 50 ms budget's misses into a few hundred ms, never into seconds.
 */
const NOT_NOISE_MS = 500;
/** Attempts of a case that misses the budget by less than NOT_NOISE_MS (as test/registry/import-slices.test.ts tries three registries). */
const ATTEMPTS = 3;
/** A retry waits (up to QUIET_WAIT_MS) for a window of QUIET_WINDOW_MS whose worst idle /healthz answer is under QUIET_MS. */
const QUIET_MS = 15;
const QUIET_WINDOW_MS = 300;
const QUIET_WAIT_MS = 5_000;
/** Wall time one case may take; a backtracking engine takes seconds a call. */
const CASE_TIMEOUT_MS = 120_000;
/** One AG-UI run makes at most this many calls (src/model/ag-ui.ts). */
const AG_UI_CALLS = 32;

/**
 * Catastrophic regular expressions: `fits` matches, `hostile` does not, after about 2^29 steps of
 * a backtracking engine (V8's took 4 to 11 s a call in this test, on the code before issue 28).
 * A linear-time engine answers both in microseconds. Most `fits` fit no other pattern here, so
 * that a validator that ran one schema's pattern for another's refuses a fitting value.
 */
const CATASTROPHIC: { pattern: string; fits: string; hostile: string }[] = [
  { pattern: '^(a+)+$', fits: 'aaaa', hostile: `${'a'.repeat(29)}!` },
  { pattern: '^(a|a)*$', fits: '', hostile: `${'a'.repeat(29)}!` },
  { pattern: '^(a|aa)+$', fits: 'aaaa', hostile: `${'a'.repeat(40)}!` },
  { pattern: '(x+x+)+y', fits: 'xxy', hostile: 'x'.repeat(29) },
  { pattern: '^(\\w+\\s?)*$', fits: 'two words', hostile: `${'a'.repeat(29)}!` },
  {
    pattern: '^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$',
    fits: 'ada.lovelace@example.com',
    hostile: `${'a'.repeat(32)}!`,
  },
];
type Catastrophic = (typeof CATASTROPHIC)[number];
/** `^(a+)+$`, `^(a|a)*$` and `^(\\w+\\s?)*$`, used by name below. */
const [NESTED, ALTERNATION, , , WORDS] = CATASTROPHIC as [Catastrophic, Catastrophic, unknown, unknown, Catastrophic];

/** What a call must answer: `fits` a result, `refused` a 4xx, `either` one of the two, `tool-fails` a result or the tool's 502. */
type Outcome = 'fits' | 'refused' | 'either' | 'tool-fails';

interface Call {
  /** Named in failure messages. */
  what: string;
  tool: string;
  args: Record<string, unknown>;
  outcome: Outcome;
}

interface Answer {
  status: number;
  type: string;
  text: string;
}

let t: TestApp;
let base: string;
let port: number;
let toolHost: Server;
let toolPort: number;
let mcp: McpTestClient;
let admin: Record<string, string>;
let user: Record<string, string>;

beforeAll(async () => {
  // The HTTP tools' host: answers every POST with what it was sent.
  toolHost = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void res.writeHead(200, { 'content-type': 'application/json' }).end(Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => toolHost.listen(0, LOOPBACK, resolve));
  // Longer than any case: a kept-alive connection the host closes while the registry reuses it is a reset.
  toolHost.keepAliveTimeout = 120_000;
  toolPort = (toolHost.address() as AddressInfo).port;
  t = await createTestApp({ RATE_LIMIT_MAX: '0', RATE_LIMIT_WRITE_MAX: '0' });
  await t.app.listen({ port: 0, host: LOOPBACK });
  port = (t.app.server.address() as AddressInfo).port;
  base = `http://${LOOPBACK}:${port}`;
  admin = bearer(t.token(['registry:write']));
  user = bearer(t.token([], { sub: 'stalling-agent' }));
  mcp = await connect(new URL(`${base}/mcp`), t.token([], { sub: 'stalling-mcp-agent' }));
  // What each process does once, before any watch: the registration check compiles the
  // meta-schemas (about 200 ms, src/json-schema/dialects.ts), the first call starts the
  // validators' Ajv instances, and each front's first request warms its code. The first
  // registration and call measured 150 to 530 ms here; after them, a write or a call takes a few.
  // Their answers are the cases' business: here they are only made.
  await registered('warm_up', { type: 'object', properties: { s: { type: 'string', pattern: '^a+$', format: 'email' } } });
  const warmUp: Call[] = [
    { what: 'warming up', tool: 'warm_up', args: { s: 'a@b.co' }, outcome: 'refused' },
    { what: 'warming up', tool: 'warm_up', args: {}, outcome: 'fits' },
  ];
  for (const call of warmUp) {
    await send('POST', '/tools/warm_up/invoke', call.args);
    await mcp.client.callTool({ name: call.tool, arguments: call.args }).catch(() => undefined);
  }
  await agUiRun(warmUp);
}, 60_000);

afterAll(async () => {
  await mcp?.close();
  await t?.close();
  toolHost?.closeAllConnections();
  await new Promise<void>((resolve) => toolHost?.close(() => resolve()));
});

// ---------------------------------------------------------------------------------------------
// Watching /healthz

/** What the case is doing now, named in failure messages beside the worst /healthz answer. */
let step = 'nothing';

/** Runs `work` as the named step. */
async function during<T>(name: string, work: () => Promise<T>): Promise<T> {
  step = name;
  try {
    return await work();
  } finally {
    step = 'between steps';
  }
}

interface HealthWatch {
  /** The slowest /healthz answer so far, in ms. */
  readonly worstMs: number;
  /** Whether the budget is already missed (a case stops calling then: it has failed, or will be tried again). */
  readonly stalled: boolean;
  stop(): Promise<{ worstMs: number; worstDuring: string; longestGcMs: number; polls: number; notOk: number[] }>;
}

/** One GET /healthz on a kept-alive connection; resolves with its status. */
function probe(agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: LOOPBACK, port, path: '/healthz', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(60_000, () => req.destroy(new Error('no /healthz answer within 60 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Polls /healthz back to back (a millisecond apart) until stopped, measuring each answer. */
function watchHealth(): HealthWatch {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let running = true;
  let worstMs = 0;
  let worstDuring = 'no poll';
  let polls = 0;
  const notOk: number[] = [];
  // Garbage collection pauses this process (the registry's and the test's own garbage alike): named in failures.
  let longestGcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longestGcMs = Math.max(longestGcMs, entry.duration);
  });
  gc.observe({ entryTypes: ['gc'] });
  const loop = (async () => {
    while (running) {
      // Started before the pause, so that a stall during the pause is counted too.
      const started = performance.now();
      const stepAtStart = step;
      await new Promise((resolve) => setTimeout(resolve, 1));
      const status = await probe(agent);
      const ms = performance.now() - started;
      if (ms > worstMs) {
        worstMs = ms;
        worstDuring = stepAtStart === step ? step : `${stepAtStart}, then ${step}`;
      }
      polls++;
      if (status !== 200) notOk.push(status);
    }
  })();
  return {
    get worstMs() {
      return worstMs;
    },
    get stalled() {
      return worstMs >= HEALTH_BUDGET_MS;
    },
    async stop() {
      running = false;
      await loop;
      agent.destroy();
      gc.disconnect();
      return { worstMs, worstDuring, longestGcMs, polls, notOk };
    },
  };
}

/**
 * The worst /healthz answer while the registry does nothing else, over QUIET_WINDOW_MS windows,
 * until one is under QUIET_MS or QUIET_WAIT_MS have passed: a retry waits for a quieter moment
 * of the machine, and a failure says how busy the machine was.
 */
async function idleWorst(): Promise<number> {
  const deadline = performance.now() + QUIET_WAIT_MS;
  for (;;) {
    const watch = watchHealth();
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const { worstMs } = await watch.stop();
    if (worstMs < QUIET_MS || performance.now() > deadline) return worstMs;
  }
}

/**
 * Runs a case under a /healthz watch, up to ATTEMPTS times while an attempt misses the budget by
 * less than a stall would (a slow moment of the machine); a retry first waits for a quiet
 * moment (idleWorst). `attempt` names the case's tools afresh, so that each attempt compiles
 * its validators again. Asserts the best attempt's worst answer is under the budget, and that
 * /healthz answered 200 throughout.
 */
async function withinHealthBudget(label: string, run: (attempt: number, watch: HealthWatch) => Promise<void>): Promise<void> {
  const worst: number[] = [];
  const where: string[] = [];
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const idle = attempt === 0 ? undefined : await idleWorst();
    const watch = watchHealth();
    let failure: unknown;
    try {
      await run(attempt, watch);
    } catch (err) {
      failure = err;
    }
    const { worstMs, worstDuring, longestGcMs, polls, notOk } = await watch.stop();
    if (failure !== undefined) throw failure;
    expect(notOk, `${label}: /healthz answers other than 200`).toEqual([]);
    expect(polls, `${label}: /healthz polls`).toBeGreaterThan(0);
    worst.push(worstMs);
    const before = idle === undefined ? '' : `, idle worst just before ${idle.toFixed(1)} ms`;
    where.push(`${worstMs.toFixed(1)} ms during ${worstDuring} (longest GC pause ${longestGcMs.toFixed(1)} ms${before})`);
    if (worstMs < HEALTH_BUDGET_MS || worstMs >= NOT_NOISE_MS) break;
  }
  expect(Math.min(...worst), `${label}: worst /healthz answer of each attempt: ${where.join('; ')}`).toBeLessThan(HEALTH_BUDGET_MS);
}

// ---------------------------------------------------------------------------------------------
// Talking to the registry

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = user): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

const json = (answer: Answer) => JSON.parse(answer.text) as Record<string, unknown>;

/** Each argument object's JSON, and that JSON as a JSON string (AG-UI's `arguments`): encoded once. */
const encodings = new WeakMap<object, { json: string; quoted: string }>();
function encoded(args: Record<string, unknown>): { json: string; quoted: string } {
  let found = encodings.get(args);
  if (!found) {
    const text = JSON.stringify(args);
    encodings.set(args, (found = { json: text, quoted: JSON.stringify(text) }));
  }
  return found;
}

/** An HTTP tool on the echoing host, with these schemas. */
const registerTool = (name: string, inputSchema: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  send(
    'PUT',
    `/tools/${name}`,
    { description: `Issue 28 case ${name}`, endpoint: '/echo', host: LOOPBACK, port: toolPort, scopes: [], inputSchema, ...extra },
    admin,
  );

async function registered(name: string, inputSchema: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await during(`registering ${name}`, () => registerTool(name, inputSchema, extra));
  expect(res.status, `registering ${name}: ${res.text.slice(0, 500)}`).toBe(201);
}

/** Whether a problem's path names these segments, in the registry's dotted form or as a JSON pointer. */
const namesPath = (path: string, segments: readonly PathSegment[]) => path === segments.join('.') || path === pointerOf(segments);

/** A 400 problem with an `errors` entry whose path is one of `paths`. */
function expectRefusedAt(res: Answer, paths: readonly (readonly PathSegment[])[], what: string): void {
  expect(res.status, `${what}: ${res.text.slice(0, 500)}`).toBe(400);
  expect(res.type, what).toContain('application/problem+json');
  const given = (json(res)['errors'] as { path: string }[] | undefined)?.map((e) => e.path) ?? [];
  const wanted = paths.map((p) => p.join('.'));
  expect(
    given.some((p) => paths.some((segments) => namesPath(p, segments))),
    `${what}: error paths ${JSON.stringify(given)} name none of ${JSON.stringify(wanted)}`,
  ).toBe(true);
}

function expectInvokeAnswer(answer: Answer, call: Call): void {
  const what = `invoke ${call.what}: ${answer.status} ${answer.text.slice(0, 300)}`;
  expect(answer.status, what).not.toBe(500);
  const refusal = answer.status >= 400 && answer.status < 500;
  if (refusal) expect(answer.type, what).toContain('application/problem+json');
  if (call.outcome === 'fits') expect(answer.status, what).toBe(200);
  if (call.outcome === 'refused') expect(refusal, what).toBe(true);
  if (call.outcome === 'either') expect(answer.status === 200 || refusal, what).toBe(true);
  // The upstream's answer breaking its output schema is the tool's failure: a gateway code.
  if (call.outcome === 'tool-fails') expect([200, 502], what).toContain(answer.status);
}

async function expectMcpAnswer(call: Call): Promise<void> {
  // A 500 of ours is a JSON-RPC internal error (-32603), which makes callTool reject.
  let result: Awaited<ReturnType<McpTestClient['client']['callTool']>>;
  try {
    result = await mcp.client.callTool({ name: call.tool, arguments: call.args });
  } catch (err) {
    throw new Error(`/mcp ${call.what}: tools/call failed at the protocol level: ${(err as Error).message}`, { cause: err });
  }
  const text = (result.content as { text?: string }[] | undefined)?.[0]?.text ?? '';
  const what = `/mcp ${call.what}: ${result.isError ? 'isError ' : ''}${text.slice(0, 300)}`;
  expect(text, what).not.toMatch(/internal error/i);
  if (call.outcome === 'fits') expect(result.isError, what).toBeFalsy();
  if (call.outcome === 'refused' || call.outcome === 'tool-fails') expect(result.isError, what).toBe(true);
}

type AgUiEvent = { type: string } & Record<string, unknown>;

/** One AG-UI run making these calls, read to its end: its events. */
async function agUiRun(calls: readonly Call[]): Promise<AgUiEvent[]> {
  const PLACEHOLDER = 'the tool calls';
  const input = JSON.stringify({
    threadId: 'stalls',
    runId: `run-${Math.random().toString(36).slice(2)}`,
    messages: [
      { id: 'user-1', role: 'user', content: 'go' },
      { id: 'assistant-1', role: 'assistant', toolCalls: PLACEHOLDER },
    ],
    tools: [],
    context: [],
    // The client holds the arguments: no TOOL_CALL_ARGS echoing 124 KB back.
    forwardedProps: { 'tool-registry': { toolCallArgs: 'omit' } },
  });
  // The arguments as encoded ahead (encoded()), spliced in.
  const toolCalls = calls.map(
    (c, i) => `{"id":"call-${i}","type":"function","function":{"name":${JSON.stringify(c.tool)},"arguments":${encoded(c.args).quoted}}}`,
  );
  const body = input.replace(JSON.stringify(PLACEHOLDER), () => `[${toolCalls.join(',')}]`);
  const res = await send('POST', '/ag-ui', body, { ...user, accept: 'text/event-stream' });
  expect(res.status, `/ag-ui: ${res.text.slice(0, 500)}`).toBe(200);
  return res.text
    .split('\n\n')
    .filter((block) => block.startsWith('data: '))
    .map((block) => JSON.parse(block.slice('data: '.length)) as AgUiEvent);
}

function expectAgUiAnswers(events: readonly AgUiEvent[], calls: readonly Call[]): void {
  expect(events.at(-1)?.type, JSON.stringify(events.at(-1))).toBe('RUN_FINISHED');
  const results = new Map(events.filter((e) => e.type === 'TOOL_CALL_RESULT').map((e) => [e['toolCallId'] as string, e]));
  calls.forEach((call, i) => {
    const result = results.get(`call-${i}`);
    const error = (result?.['metadata'] as { 'tool-registry'?: { error?: { status: number; code: string } } } | undefined)?.[
      'tool-registry'
    ]?.error;
    const what = `/ag-ui ${call.what}: ${JSON.stringify(result).slice(0, 300)}`;
    expect(result, what).toBeDefined();
    expect(error?.status, what).not.toBe(500);
    const refusal = error !== undefined && error.status >= 400 && error.status < 500;
    if (call.outcome === 'fits') expect(error, what).toBeUndefined();
    if (call.outcome === 'refused') expect(refusal, what).toBe(true);
    if (call.outcome === 'either') expect(error === undefined || refusal, what).toBe(true);
    if (call.outcome === 'tool-fails') expect(error === undefined || error.status === 502, what).toBe(true);
  });
}

/**
 * Each call through invoke, then /mcp, then in AG-UI runs (the case's calls, the hostile ones
 * repeated up to the 32 calls one run makes unless `agUiCalls` says fewer). Stops at the first
 * miss of the budget: the case has failed, or will be tried again.
 */
async function callEverywhere(calls: readonly Call[], watch: HealthWatch, { agUiCalls = AG_UI_CALLS } = {}): Promise<void> {
  for (const call of calls) {
    if (watch.stalled) return;
    expectInvokeAnswer(
      await during(`invoke ${call.what}`, () => send('POST', `/tools/${call.tool}/invoke`, encoded(call.args).json)),
      call,
    );
  }
  for (const call of calls) {
    if (watch.stalled) return;
    await during(`/mcp ${call.what}`, () => expectMcpAnswer(call));
  }
  const hostile = calls.filter((c) => c.outcome !== 'fits');
  const run = [...calls];
  while (run.length < agUiCalls && hostile.length > 0) run.push(hostile[run.length % hostile.length] as Call);
  for (let start = 0; start < run.length; start += agUiCalls) {
    if (watch.stalled) return;
    const part = run.slice(start, start + agUiCalls);
    expectAgUiAnswers(await during(`an /ag-ui run of ${part.length} calls`, () => agUiRun(part)), part);
  }
}

// ---------------------------------------------------------------------------------------------

describe('issue 28: no schema, argument or upstream answer stalls the registry', () => {
  it(
    'refuses patterns a linear-time engine cannot run and $ref cycles that consume no input, with 400s naming the path',
    async () => {
      await withinHealthBudget('refusals', async (attempt) => {
        const object = (properties: Record<string, unknown>) => ({ type: 'object', properties });
        const unrunnable: [string, Record<string, unknown>, PathSegment[]][] = [
          [
            'a backreference in pattern',
            object({ s: { type: 'string', pattern: '(a)\\1' } }),
            ['inputSchema', 'properties', 's', 'pattern'],
          ],
          ['a lookahead in pattern', object({ s: { type: 'string', pattern: '(?=a)a' } }), ['inputSchema', 'properties', 's', 'pattern']],
          ['a lookbehind in pattern', object({ s: { type: 'string', pattern: '(?<!a)b' } }), ['inputSchema', 'properties', 's', 'pattern']],
          [
            'a backreference in patternProperties',
            { type: 'object', patternProperties: { '(a)\\1': { type: 'string' } } },
            ['inputSchema', 'patternProperties', '(a)\\1'],
          ],
          [
            'a lookahead in propertyNames',
            { type: 'object', propertyNames: { pattern: '^(?=x)' } },
            ['inputSchema', 'propertyNames', 'pattern'],
          ],
        ];
        for (const [what, inputSchema, path] of unrunnable)
          expectRefusedAt(await during(`registering ${what}`, () => registerTool(`refused_${attempt}`, inputSchema)), [path], what);
        const output = await registerTool(
          `refused_${attempt}`,
          { type: 'object' },
          { outputSchema: object({ s: { type: 'string', pattern: '(?<=a)b' } }) },
        );
        expectRefusedAt(output, [['outputSchema', 'properties', 's', 'pattern']], 'a lookbehind in an output schema');
        // The article's `parameters` form holds JSON Schema in `items`.
        const parameters = {
          description: 'x',
          endpoint: '/echo',
          host: LOOPBACK,
          port: toolPort,
          parameters: { tags: { type: 'array', items: { type: 'string', pattern: '(a)\\1' } } },
        };
        expectRefusedAt(
          await send('PUT', `/tools/refused_${attempt}`, parameters, admin),
          [['parameters', 'tags', 'items', 'pattern']],
          'a backreference in parameters',
        );

        const cycles: [string, Record<string, unknown>, PathSegment[][]][] = [
          ['a schema that refers to itself', { type: 'object', $ref: '#' }, [['inputSchema', '$ref']]],
          [
            'two $defs that refer to each other',
            { type: 'object', $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, properties: { x: { $ref: '#/$defs/a' } } },
            [
              ['inputSchema', '$defs', 'a', '$ref'],
              ['inputSchema', '$defs', 'b', '$ref'],
              ['inputSchema', 'properties', 'x', '$ref'],
            ],
          ],
          [
            'a loop through allOf',
            {
              type: 'object',
              $defs: { a: { allOf: [{ type: 'object' }, { $ref: '#/$defs/a' }] } },
              properties: { x: { $ref: '#/$defs/a' } },
            },
            [
              ['inputSchema', '$defs', 'a', 'allOf', 1, '$ref'],
              ['inputSchema', 'properties', 'x', '$ref'],
            ],
          ],
          [
            'a loop through anyOf',
            {
              type: 'object',
              $defs: {
                a: { anyOf: [{ $ref: '#/$defs/b' }, { type: 'string' }] },
                b: { anyOf: [{ type: 'number' }, { $ref: '#/$defs/a' }] },
              },
              properties: { x: { $ref: '#/$defs/a' } },
            },
            [
              ['inputSchema', '$defs', 'a', 'anyOf', 0, '$ref'],
              ['inputSchema', '$defs', 'b', 'anyOf', 1, '$ref'],
              ['inputSchema', 'properties', 'x', '$ref'],
            ],
          ],
        ];
        for (const [what, inputSchema, paths] of cycles)
          expectRefusedAt(await during(`registering ${what}`, () => registerTool(`refused_${attempt}`, inputSchema)), paths, what);
        expect((await send('GET', `/tools/refused_${attempt}`, undefined, admin)).status).toBe(404);

        // An import is held to the same rules: nothing of such a tool is stored.
        const imported = await send(
          'POST',
          '/import',
          {
            tools: [
              {
                name: `imp_backref_${attempt}`,
                description: 'x',
                endpoint: '/echo',
                host: LOOPBACK,
                port: toolPort,
                inputSchema: object({ s: { type: 'string', pattern: '(a)\\1' } }),
              },
              {
                name: `imp_cycle_${attempt}`,
                description: 'x',
                endpoint: '/echo',
                host: LOOPBACK,
                port: toolPort,
                inputSchema: { type: 'object', $ref: '#' },
              },
            ],
          },
          admin,
        );
        expect(imported.status, imported.text.slice(0, 500)).not.toBe(500);
        if (imported.status === 400)
          expectRefusedAt(
            imported,
            [
              ['tools', 0, 'inputSchema', 'properties', 's', 'pattern'],
              ['tools', 1, 'inputSchema', '$ref'],
            ],
            'an import',
          );
        else expect(imported.status, imported.text.slice(0, 500)).toBe(200);
        for (const name of [`imp_backref_${attempt}`, `imp_cycle_${attempt}`])
          expect((await send('GET', `/tools/${name}`, undefined, admin)).status, name).toBe(404);
      });
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'takes recursion that descends into the value, and checks a deep tree with it',
    async () => {
      await withinHealthBudget('recursive tree', async (attempt, watch) => {
        const tool = `tree_${attempt}`;
        await registered(tool, {
          type: 'object',
          properties: { label: { type: 'string', pattern: NESTED.pattern }, children: { type: 'array', items: { $ref: '#' } } },
        });
        const tree = (levels: number, leaf: string): Record<string, unknown> =>
          levels === 0 ? { label: leaf } : { label: 'a', children: [tree(levels - 1, leaf)] };
        await callEverywhere(
          [
            { what: 'a tree 30 deep', tool, args: tree(30, 'aa'), outcome: 'fits' },
            { what: 'a tree 30 deep with a hostile leaf', tool, args: tree(30, NESTED.hostile), outcome: 'refused' },
          ],
          watch,
        );
      });
    },
    CASE_TIMEOUT_MS,
  );

  describe.each(CATASTROPHIC)('the catastrophic pattern $pattern', ({ pattern, fits, hostile }) => {
    it(
      'is taken at registration and checks hostile values in pattern, patternProperties and propertyNames without a stall',
      async () => {
        await withinHealthBudget(pattern, async (attempt, watch) => {
          const id = `${CATASTROPHIC.findIndex((c) => c.pattern === pattern)}_${attempt}`;
          await registered(`re${id}_pattern`, { type: 'object', properties: { s: { type: 'string', pattern } }, required: ['s'] });
          await registered(`re${id}_props`, {
            type: 'object',
            patternProperties: { [pattern]: { type: 'string' } },
            additionalProperties: false,
          });
          await registered(`re${id}_names`, { type: 'object', propertyNames: { pattern } });
          await callEverywhere(
            [
              { what: 'pattern, fitting', tool: `re${id}_pattern`, args: { s: fits }, outcome: 'fits' },
              { what: 'pattern, hostile', tool: `re${id}_pattern`, args: { s: hostile }, outcome: 'refused' },
              { what: 'patternProperties, fitting', tool: `re${id}_props`, args: { [fits]: 'x' }, outcome: 'fits' },
              { what: 'patternProperties, hostile', tool: `re${id}_props`, args: { [hostile]: 'x' }, outcome: 'refused' },
              { what: 'propertyNames, fitting', tool: `re${id}_names`, args: { [fits]: 1 }, outcome: 'fits' },
              { what: 'propertyNames, hostile', tool: `re${id}_names`, args: { [hostile]: 1 }, outcome: 'refused' },
            ],
            watch,
          );
        });
      },
      CASE_TIMEOUT_MS,
    );
  });

  it(
    'checks uniqueItems over 15,000 small arrays and objects (about 124 KB) at a hash an item',
    async () => {
      const arrays = Array.from({ length: 15_000 }, (_, i) => [i % 150, Math.floor(i / 150)]);
      const objects = Array.from({ length: 15_000 }, (_, i) => ({ k: i }));
      const last = (xs: unknown[]) => [...xs.slice(0, -1), xs[0]];
      const args = {
        arrays: { xs: arrays },
        arraysRepeat: { xs: last(arrays) },
        objects: { xs: objects },
        objectsRepeat: { xs: last(objects) },
      };
      // Encoded before the watch: this process is the client too.
      for (const value of Object.values(args)) encoded(value);
      expect(encoded(args.arrays).json.length).toBeGreaterThan(100_000);
      await withinHealthBudget('uniqueItems', async (attempt, watch) => {
        await registered(`uniq_arrays_${attempt}`, {
          type: 'object',
          properties: { xs: { type: 'array', uniqueItems: true, items: { type: 'array', items: { type: 'integer' } } } },
          required: ['xs'],
        });
        await registered(`uniq_objects_${attempt}`, {
          type: 'object',
          properties: { xs: { type: 'array', uniqueItems: true, items: { type: 'object' } } },
          required: ['xs'],
        });
        await callEverywhere(
          [
            { what: '15,000 distinct arrays', tool: `uniq_arrays_${attempt}`, args: args.arrays, outcome: 'fits' },
            {
              what: '15,000 arrays, the last a repeat of the first',
              tool: `uniq_arrays_${attempt}`,
              args: args.arraysRepeat,
              outcome: 'refused',
            },
            { what: '15,000 distinct objects', tool: `uniq_objects_${attempt}`, args: args.objects, outcome: 'fits' },
            {
              what: '15,000 objects, the last a repeat of the first',
              tool: `uniq_objects_${attempt}`,
              args: args.objectsRepeat,
              outcome: 'refused',
            },
          ],
          watch,
          // Four such calls are one run of about 700 KB, within BODY_LIMIT.
          { agUiCalls: 4 },
        );
      });
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'checks a schema 32 deep with a catastrophic pattern at its bottom',
    async () => {
      // The root is at depth 1, its property at 2: 30 objects between them and the pattern put it at 32.
      let leaf: Record<string, unknown> = { type: 'string', pattern: NESTED.pattern };
      for (let i = 0; i < 30; i++) leaf = { type: 'object', properties: { n: leaf }, required: ['n'] };
      const schema = { type: 'object', properties: { n: leaf }, required: ['n'] };
      const value = (s: string) => {
        let v: unknown = s;
        for (let i = 0; i < 31; i++) v = { n: v };
        return v as Record<string, unknown>;
      };
      await withinHealthBudget('deep schema', async (attempt, watch) => {
        await registered(`deep_${attempt}`, schema);
        await callEverywhere(
          [
            { what: 'a fitting value 31 deep', tool: `deep_${attempt}`, args: value(NESTED.fits), outcome: 'fits' },
            { what: 'a hostile value 31 deep', tool: `deep_${attempt}`, args: value(NESTED.hostile), outcome: 'refused' },
          ],
          watch,
        );
      });
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'checks a schema of nearly 64 KiB, a catastrophic pattern a property, without a stall',
    async () => {
      const properties: Record<string, unknown> = {};
      const fitting: Record<string, string> = {};
      for (let i = 0; JSON.stringify({ type: 'object', properties }).length < 63 * 1024; i++) {
        const { pattern, fits } = CATASTROPHIC[i % CATASTROPHIC.length] as Catastrophic;
        properties[`p${i}`] = { type: 'string', pattern };
        fitting[`p${i}`] = fits;
      }
      const count = Object.keys(properties).length;
      await withinHealthBudget(`wide schema (${count} patterns)`, async (attempt, watch) => {
        await registered(`wide_${attempt}`, { type: 'object', properties });
        await callEverywhere(
          [
            // Value size times schema size is large here: a work budget may refuse it, with a 4xx.
            { what: `a value for all ${count} properties`, tool: `wide_${attempt}`, args: fitting, outcome: 'either' },
            {
              what: 'one hostile property among them',
              tool: `wide_${attempt}`,
              args: { ...fitting, p0: NESTED.hostile },
              outcome: 'refused',
            },
          ],
          watch,
          { agUiCalls: 8 },
        );
      });
    },
    CASE_TIMEOUT_MS,
  );

  it(
    "carries an upstream MCP server's hostile answers and schemas without a stall: skipped, refused, or the tool's failure",
    async () => {
      const hostileOut = { s: NESTED.hostile };
      const tools: UpstreamToolDef[] = [
        ['hostile_out', { type: 'object', properties: { s: { type: 'string', pattern: NESTED.pattern } }, required: ['s'] }, hostileOut],
        ['hostile_out_names', { type: 'object', propertyNames: { pattern: ALTERNATION.pattern } }, { [ALTERNATION.hostile]: 1 }],
        [
          'hostile_out_props',
          { type: 'object', patternProperties: { [WORDS.pattern]: { type: 'string' } }, additionalProperties: false },
          { [WORDS.hostile]: 'x' },
        ],
        [
          'fine_out',
          { type: 'object', properties: { s: { type: 'string', pattern: NESTED.pattern } }, required: ['s'] },
          { s: NESTED.fits },
        ],
      ].map(([name, outputSchema, answer]) => ({
        tool: {
          name: name as string,
          description: `Answers ${JSON.stringify(answer).slice(0, 40)}`,
          inputSchema: { type: 'object' as const },
          outputSchema: outputSchema as { type: 'object' },
        },
        handler: () => ({
          content: [{ type: 'text' as const, text: JSON.stringify(answer) }],
          structuredContent: answer as Record<string, unknown>,
        }),
      }));
      const never = () => ({ content: [{ type: 'text' as const, text: 'never called' }] });
      tools.push(
        {
          tool: {
            name: 'hostile_in',
            description: 'A catastrophic input pattern.',
            inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: NESTED.pattern } } },
          },
          handler: never,
        },
        {
          tool: {
            name: 'backref_in',
            description: 'Cannot run in linear time.',
            inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '(a)\\1' } } },
          },
          handler: never,
        },
        {
          tool: {
            name: 'lookbehind_out',
            description: 'Cannot run in linear time.',
            inputSchema: { type: 'object' },
            outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '(?<!a)b' } } },
          },
          handler: never,
        },
        { tool: { name: 'cyclic_in', description: 'Refers to itself.', inputSchema: { type: 'object', $ref: '#' } }, handler: never },
      );
      await withinHealthBudget('upstream MCP server', async (attempt, watch) => {
        const upstream: McpUpstream = await startMcpUpstream({ tools });
        try {
          const id = `hostile-${attempt}`;
          const prefix = `u${attempt}_`;
          const put = await during('registering the upstream', () =>
            send('PUT', `/mcp-servers/${id}`, { url: upstream.url, policy: 'auto', prefix }, admin),
          );
          expect(put.status, put.text).toBe(201);
          const status = async () =>
            json(await send('GET', `/mcp-servers/${id}`, undefined, admin))['upstream'] as {
              state: string;
              tools: number;
              lastSyncAt: string | null;
              skipped: { name: string; reason: string }[];
            };
          await during("syncing the upstream's tools", () =>
            vi.waitFor(
              async () => {
                const now = await status();
                expect(now.lastSyncAt, `the upstream's tools never synced: ${JSON.stringify(now)}`).not.toBeNull();
              },
              { timeout: 10_000, interval: 20 },
            ),
          );
          const { tools: listed, skipped } = await status();
          const reasons = new Map(skipped.map((s) => [s.name, s.reason]));
          const skippedAt = (name: string, segments: PathSegment[]) => {
            const reason = reasons.get(name) ?? '';
            expect(
              reason.startsWith(`${segments.join('.')}:`) || reason.startsWith(`${pointerOf(segments)}:`),
              `${name} skipped with a reason naming ${segments.join('.')}: ${JSON.stringify(skipped)}`,
            ).toBe(true);
          };
          skippedAt('backref_in', ['inputSchema', 'properties', 's', 'pattern']);
          skippedAt('lookbehind_out', ['outputSchema', 'properties', 's', 'pattern']);
          skippedAt('cyclic_in', ['inputSchema', '$ref']);
          expect(listed).toBe(5);

          const calls: Call[] = [
            { what: 'an answer hostile to its output pattern', tool: `${prefix}hostile_out`, args: {}, outcome: 'tool-fails' },
            { what: 'an answer hostile to its output propertyNames', tool: `${prefix}hostile_out_names`, args: {}, outcome: 'tool-fails' },
            {
              what: 'an answer hostile to its output patternProperties',
              tool: `${prefix}hostile_out_props`,
              args: {},
              outcome: 'tool-fails',
            },
            { what: 'an answer that fits its output pattern', tool: `${prefix}fine_out`, args: {}, outcome: 'fits' },
            {
              what: 'hostile arguments for its input pattern',
              tool: `${prefix}hostile_in`,
              args: { s: NESTED.hostile },
              outcome: 'refused',
            },
          ];
          await callEverywhere(calls, watch);
          if (watch.stalled) return;
          // Refused arguments never reach the upstream.
          expect(upstream.calls.filter((c) => c.name === 'hostile_in')).toEqual([]);
          // A structured answer that fits is passed on as such.
          const fine = await mcp.client.callTool({ name: `${prefix}fine_out`, arguments: {} });
          expect(fine.structuredContent).toEqual({ s: NESTED.fits });
        } finally {
          await send('DELETE', `/mcp-servers/hostile-${attempt}`, undefined, admin);
          await upstream.stop();
        }
      });
    },
    CASE_TIMEOUT_MS,
  );

  it(
    'bounds an exponential $ref DAG (30 levels, each anyOf of two refs to the next): refused by the work budget, or checked fast',
    async () => {
      const $defs: Record<string, unknown> = {};
      for (let i = 0; i < 30; i++) $defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
      $defs['d30'] = { type: 'string' };
      const schema = { type: 'object', $defs, properties: { s: { $ref: '#/$defs/d0' } }, required: ['s'] };
      await withinHealthBudget('exponential $ref DAG', async (attempt, watch) => {
        const tool = `dag_${attempt}`;
        // No cycle: taken, unless the registration check also bounds a schema's expanded size.
        const res = await during(`registering ${tool}`, () => registerTool(tool, schema));
        expect([201, 400], res.text.slice(0, 500)).toContain(res.status);
        if (res.status === 400) {
          const paths = (json(res)['errors'] as { path: string }[]).map((e) => e.path);
          expect(
            paths.some((p) => p.startsWith('inputSchema') || p.startsWith('/inputSchema')),
            JSON.stringify(paths),
          ).toBe(true);
          return;
        }
        await callEverywhere(
          [
            // Its first branch all the way down fits: quick for a checker that stops at a fitting branch.
            { what: 'a string, fitting the first branch of every level', tool, args: { s: 'x' }, outcome: 'either' },
            // Fits no branch: 2^30 branches for a checker that tries them all.
            { what: 'a number, fitting no branch', tool, args: { s: 1 }, outcome: 'refused' },
            { what: 'a list of numbers', tool, args: { s: Array.from({ length: 1000 }, (_, i) => i) }, outcome: 'refused' },
          ],
          watch,
        );
      });
    },
    CASE_TIMEOUT_MS,
  );
});
