/**
 * Issue 31, "Conformance in CI": the official MCP conformance suite
 * (`@modelcontextprotocol/conformance`, pinned below twice: the release for the revisions up to
 * 2025-11-25, and the 0.2.0 pre-release for 2026-07-28) runs its server scenarios against a real
 * registry: `tool-registry serve` in a child process on a SQLite file, with an upstream MCP server
 * (the SDK's, test/helpers/mcp-upstream.ts) registered through `PUT /mcp-servers/{id}` that
 * backs the tools the scenarios call (`test_simple_text`, `test_image_content`, ...). Every
 * scenario that applies to a server offering tools must pass; the others are listed in
 * NOT_APPLICABLE with the reason (the same table is in docs/conformance.md).
 *
 * The suite needs Node 22 or later. Under an older Node (CI runs the tests on Node 20 too) the
 * test fetches Node 26 from the npm registry with scripts/node.sh and runs the suite's child
 * under it; the package itself comes through `npx` into .cache/npm (git-ignored), so a second
 * run fetches nothing. Where either cannot be had the test skips with the reason, except under
 * CI=true, where it fails.
 *
 * The suite connects without a token, and the registry never lets an anonymous caller call a
 * tool (src/bridge/bridge.ts `admit`), so an anonymous run "passes" the call scenarios on the
 * refusal's text alone. The suite therefore talks to a loopback proxy that adds one bearer token
 * to each request and passes everything else through byte for byte (Host and Origin too, which
 * dns-rebinding-protection needs to reach the registry unchanged).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';
import { killAll, mintTokenWithCli, REPO_ROOT, removeTempDirs, startServer, stopProcess, type ServerProcess } from '../helpers/process.js';
import { connect } from './support.js';

const run = promisify(execFile);

/** The suite's version: newest release on npm when this was written (0.2.0 was still alpha). */
const CONFORMANCE = '@modelcontextprotocol/conformance@0.1.16';
/** The pre-release with revision 2026-07-28's scenarios, run at that revision only. */
const CONFORMANCE_2026 = '@modelcontextprotocol/conformance@0.2.0-alpha.12';
const REVISION_2026 = '2026-07-28';
/** The Node fetched when this one is older than the suite needs (scripts/node.sh). */
const NODE_FOR_SUITE = '26.12.1';
const NPM_CACHE = join(REPO_ROOT, '.cache', 'npm');
const ci = process.env['CI'] === 'true';

/** Scenarios that apply to a server offering tools over Streamable HTTP: each must pass. */
const APPLICABLE = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'tools-call-with-progress',
  'json-schema-2020-12',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
] as const;

const NO_PROMPTS = 'the registry offers no prompts (capabilities: tools only)';
const NO_RESOURCES = 'the registry offers no resources (capabilities: tools only)';
const NO_SERVER_REQUESTS =
  "the registry sends no requests to its clients: an upstream tool's sampling and elicitation requests are not relayed";
/** The suite's other server scenarios, and why they do not apply. */
const NOT_APPLICABLE = new Map<string, string>([
  ['logging-set-level', 'the registry offers no logging capability'],
  ['tools-call-with-logging', 'the registry offers no logging capability, so it relays no upstream log notifications'],
  ['completion-complete', 'the registry offers no completions (it has no prompts or resource templates to complete)'],
  ['tools-call-sampling', NO_SERVER_REQUESTS],
  ['tools-call-elicitation', NO_SERVER_REQUESTS],
  ['elicitation-sep1034-defaults', NO_SERVER_REQUESTS],
  ['elicitation-sep1330-enums', NO_SERVER_REQUESTS],
  ['resources-list', NO_RESOURCES],
  ['resources-read-text', NO_RESOURCES],
  ['resources-read-binary', NO_RESOURCES],
  ['resources-templates-read', NO_RESOURCES],
  ['resources-subscribe', NO_RESOURCES],
  ['resources-unsubscribe', NO_RESOURCES],
  [
    'server-sse-polling',
    "calls a test_reconnection tool on which the server closes the POST stream mid-call (SEP-1699 polling); the registry keeps a call's stream open until its answer and has no such tool (resumption with Last-Event-ID: test/mcp/issue-31-reconnect.test.ts)",
  ],
  ['prompts-list', NO_PROMPTS],
  ['prompts-get-simple', NO_PROMPTS],
  ['prompts-get-with-args', NO_PROMPTS],
  ['prompts-get-embedded-resource', NO_PROMPTS],
  ['prompts-get-with-image', NO_PROMPTS],
]);

/** The pre-release's scenarios of revision 2026-07-28 that apply to a server offering tools: each must pass. */
const APPLICABLE_2026 = [
  'server-stateless',
  'http-header-validation',
  'caching',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'tools-call-with-progress',
  'json-schema-2020-12',
  'server-sse-multiple-streams',
  'dns-rebinding-protection',
] as const;

const NO_INPUT_REQUESTS =
  "the registry asks its clients for nothing: no input_required results (an upstream tool's sampling, elicitation and roots requests are not relayed)";
/** Its other 2026-07-28 server scenarios, and why they do not apply. */
const NOT_APPLICABLE_2026 = new Map<string, string>([
  ['completion-complete', 'the registry offers no completions (it has no prompts or resource templates to complete)'],
  ['resources-list', NO_RESOURCES],
  ['resources-read-text', NO_RESOURCES],
  ['resources-read-binary', NO_RESOURCES],
  ['resources-templates-read', NO_RESOURCES],
  ['sep-2164-resource-not-found', NO_RESOURCES],
  ['prompts-list', NO_PROMPTS],
  ['prompts-get-simple', NO_PROMPTS],
  ['prompts-get-with-args', NO_PROMPTS],
  ['prompts-get-embedded-resource', NO_PROMPTS],
  ['prompts-get-with-image', NO_PROMPTS],
  [
    'http-custom-header-server-validation',
    "needs a tool whose inputSchema has x-mcp-header annotations; the registry passes an upstream's schema through but validates no Mcp-Param-* headers (optional for servers)",
  ],
  ['input-required-result-basic-elicitation', NO_INPUT_REQUESTS],
  ['input-required-result-basic-sampling', NO_INPUT_REQUESTS],
  ['input-required-result-basic-list-roots', NO_INPUT_REQUESTS],
  ['input-required-result-request-state', NO_INPUT_REQUESTS],
  ['input-required-result-multiple-input-requests', NO_INPUT_REQUESTS],
  ['input-required-result-multi-round', NO_INPUT_REQUESTS],
  ['input-required-result-missing-input-response', NO_INPUT_REQUESTS],
  ['input-required-result-non-tool-request', NO_INPUT_REQUESTS],
  ['input-required-result-result-type', NO_INPUT_REQUESTS],
  ['input-required-result-unsupported-methods', NO_INPUT_REQUESTS],
  ['input-required-result-tampered-state', NO_INPUT_REQUESTS],
  ['input-required-result-capability-check', NO_INPUT_REQUESTS],
  ['input-required-result-ignore-extra-params', NO_INPUT_REQUESTS],
  ['input-required-result-validate-input', NO_INPUT_REQUESTS],
]);

const NEEDS_DIAGNOSTIC_TOOL = (tool: string, what: string) =>
  `calls the suite's diagnostic tool ${tool} (${what}), which a registry of real tools does not have`;
/**
 * Checks of applicable 2026-07-28 scenarios that cannot pass here (`scenario / check id`), and
 * why: each is printed when it fails, and every other check must not fail.
 */
const NOT_APPLICABLE_CHECKS_2026 = new Map<string, string>([
  [
    'server-stateless / sep-2575-server-rejects-undeclared-capability',
    NEEDS_DIAGNOSTIC_TOOL(
      'test_missing_capability',
      'one that needs the client to declare sampling; no registry tool needs a client capability',
    ),
  ],
  ['server-stateless / sep-2575-missing-capability-http-400', NEEDS_DIAGNOSTIC_TOOL('test_missing_capability', 'as above')],
  [
    'server-stateless / sep-2575-http-server-no-independent-requests-on-stream',
    NEEDS_DIAGNOSTIC_TOOL('test_streaming_elicitation', 'one that elicits; the registry sends its clients no requests'),
  ],
  [
    'server-stateless / sep-2575-server-no-log-without-loglevel',
    NEEDS_DIAGNOSTIC_TOOL('test_logging_tool', 'one that logs; the registry offers no logging'),
  ],
  [
    'caching / sep-2549-prompts-list-caching-hints',
    'prompts/list is answered 404 with -32601, as the revision says for a method not offered (the registry has no prompts)',
  ],
  [
    'caching / sep-2549-resources-list-caching-hints',
    'resources/list is answered 404 with -32601, as the revision says for a method not offered (the registry has no resources)',
  ],
  [
    'caching / sep-2549-resources-templates-list-caching-hints',
    'resources/templates/list is answered 404 with -32601, as the revision says for a method not offered (the registry has no resources)',
  ],
]);

// What the scenarios' descriptions ask the server's tools to return (the suite checks the shapes).
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const WAV = Buffer.from('RIFF$\u0000\u0000\u0000WAVEfmt ').toString('base64');
const NO_ARGUMENTS = { type: 'object' as const };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * What `test_trigger_tool_change` writes to: the registry's address and an admin token, set once
 * it runs. The pre-release's server-stateless calls it with a `subscriptions/listen` stream open.
 */
const writer = { url: '', token: '', changes: 0 };

/** Served as `test_<name>` (the MCP server `test`, prefix `test_`). */
const TEST_TOOLS: UpstreamToolDef[] = [
  {
    tool: {
      name: 'trigger_tool_change',
      description: 'Registers one more tool (a write an operator would make).',
      inputSchema: NO_ARGUMENTS,
    },
    handler: async () => {
      writer.changes += 1;
      const res = await fetch(`${writer.url}/tools/register`, {
        method: 'POST',
        headers: { authorization: `Bearer ${writer.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: `changed_${writer.changes}`,
          endpoint: '/changed',
          description: 'A tool registered by test_trigger_tool_change',
          host: '127.0.0.1',
          port: 9,
        }),
      });
      return { content: [{ type: 'text', text: `registered changed_${writer.changes}: ${res.status}` }], isError: res.status !== 201 };
    },
  },
  {
    tool: { name: 'simple_text', description: 'Returns simple text.', inputSchema: NO_ARGUMENTS },
    handler: () => ({ content: [{ type: 'text', text: 'This is a simple text response for testing.' }] }),
  },
  {
    tool: { name: 'image_content', description: 'Returns an image.', inputSchema: NO_ARGUMENTS },
    handler: () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
  },
  {
    tool: { name: 'audio_content', description: 'Returns audio.', inputSchema: NO_ARGUMENTS },
    handler: () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
  },
  {
    tool: { name: 'embedded_resource', description: 'Returns an embedded resource.', inputSchema: NO_ARGUMENTS },
    handler: () => ({
      content: [
        {
          type: 'resource',
          resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
        },
      ],
    }),
  },
  {
    tool: { name: 'multiple_content_types', description: 'Returns text, an image and a resource.', inputSchema: NO_ARGUMENTS },
    handler: () => ({
      content: [
        { type: 'text', text: 'Multiple content types test:' },
        { type: 'image', data: PNG, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' },
        },
      ],
    }),
  },
  {
    tool: { name: 'error_handling', description: 'Always fails.', inputSchema: NO_ARGUMENTS },
    handler: () => ({ isError: true, content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }] }),
  },
  {
    tool: { name: 'tool_with_progress', description: 'Reports progress 0, 50 and 100 of 100.', inputSchema: NO_ARGUMENTS },
    handler: async (_args, _signal, _meta, progress) => {
      await progress(0, 100);
      await sleep(50);
      await progress(50, 100);
      await sleep(50);
      await progress(100, 100);
      return { content: [{ type: 'text', text: 'Progress test completed' }] };
    },
  },
];

/** Served as `json_schema_2020_12_tool` (the MCP server `json-schema`, prefix `json_schema_2020_12_`). */
const SCHEMA_TOOLS: UpstreamToolDef[] = [
  {
    tool: {
      name: 'tool',
      description: 'Tool with JSON Schema 2020-12 features',
      // The pre-release's as it is (SEP-2106 adds allOf/anyOf, if/then/else and $anchor to the
      // release's): its `$anchor: "addressDef"` in $defs.address is kept (src/json-schema/anchors.ts).
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { $anchor: 'addressDef', type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: {
          name: { type: 'string' },
          address: { $ref: '#/$defs/address' },
          contactMethod: { type: 'string', enum: ['phone', 'email'] },
          phone: { type: 'string' },
          email: { type: 'string' },
        },
        allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
        if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
        then: { required: ['phone'] },
        else: { required: ['email'] },
        additionalProperties: false,
      },
    },
    handler: () => ({ content: [{ type: 'text', text: 'ok' }] }),
  },
];

/** The folder of a Node >= 22 to run the suite with: this one, or Node 26 from scripts/node.sh. */
async function nodeForSuite(): Promise<string> {
  if (Number(process.versions.node.split('.')[0]) >= 22) return dirname(process.execPath);
  const { stdout } = await run(join(REPO_ROOT, 'scripts', 'node.sh'), [NODE_FOR_SUITE], { timeout: 300_000 });
  return join(stdout.trim(), 'bin');
}

/** Runs a suite's CLI under that Node (npx from this machine's npm, the package cached in .cache/npm). */
function conformance(nodeBin: string, args: string[], suite = CONFORMANCE): Promise<{ stdout: string; stderr: string }> {
  return run('npx', ['--yes', suite, ...args], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      PATH: `${nodeBin}${delimiter}${process.env['PATH'] ?? ''}`,
      npm_config_cache: NPM_CACHE,
      npm_config_update_notifier: 'false',
    },
    timeout: 300_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

interface BearerProxy {
  server: Server;
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Where requests go from now on, and the token they carry. */
  forwardTo(target: URL, token: string): void;
}

/**
 * A loopback proxy that adds `Authorization: Bearer <token>` and changes nothing else. It listens
 * before it has a target (503 until then), so the registry can be started knowing its address.
 */
async function bearerProxy(): Promise<BearerProxy> {
  let target: URL | undefined;
  let token = '';
  const server = createServer((req, res) => {
    if (target === undefined) return void res.writeHead(503).end();
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwardTo(to, bearer) {
      target = to;
      token = bearer;
    },
  };
}

interface Check {
  id: string;
  name?: string;
  status: string;
  errorMessage?: string;
}

/** Each scenario's checks from the suite's output folder (`server-<scenario>-<timestamp>/checks.json`). */
function readResults(dir: string): Map<string, Check[]> {
  const results = new Map<string, Check[]>();
  for (const entry of readdirSync(dir)) {
    const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry)?.[1];
    if (scenario === undefined) continue;
    results.set(scenario, JSON.parse(readFileSync(join(dir, entry, 'checks.json'), 'utf8')) as Check[]);
  }
  return results;
}

/**
 * One line per check that is not a success, for a failure message that says what broke; a check
 * in `notApplicable` (`scenario / check id`) is left out.
 */
function describeProblems(
  results: Map<string, Check[]>,
  scenarios: readonly string[],
  notApplicable: ReadonlyMap<string, string> = new Map(),
): string[] {
  return scenarios.flatMap((scenario) => {
    const checks = results.get(scenario);
    if (checks === undefined) return [`${scenario}: the suite reported nothing`];
    if (!checks.some((c) => c.status === 'SUCCESS')) return [`${scenario}: no check passed (${checks.map((c) => c.status).join(', ')})`];
    return checks
      .filter((c) => c.status === 'FAILURE' && !notApplicable.has(`${scenario} / ${c.id}`))
      .map((c) => `${scenario} / ${c.id}${c.name === undefined ? '' : ` (${c.name})`}: ${c.errorMessage ?? 'FAILURE'}`);
  });
}

/** Prints a run's warnings, and its failing checks that do not apply here with the reason. */
function printNotes(results: Map<string, Check[]>, notApplicable: ReadonlyMap<string, string> = new Map()): void {
  const warnings = [...results].flatMap(([scenario, checks]) =>
    checks.filter((c) => c.status === 'WARNING').map((c) => `${scenario} / ${c.id}: ${c.errorMessage ?? 'WARNING'}`),
  );
  if (warnings.length > 0) console.warn(`conformance warnings:\n  ${warnings.join('\n  ')}`);
  const expected = [...results].flatMap(([scenario, checks]) =>
    checks.flatMap((c) => {
      const reason = c.status === 'FAILURE' ? notApplicable.get(`${scenario} / ${c.id}`) : undefined;
      return reason === undefined ? [] : [`${scenario} / ${c.id}: ${reason}`];
    }),
  );
  if (expected.length > 0) console.warn(`conformance checks that do not apply here (failed, as expected):\n  ${expected.join('\n  ')}`);
}

describe('the official MCP conformance suite against a real registry (issue 31)', () => {
  let nodeBin: string | undefined;
  let unavailable: string | undefined;
  let upstreams: McpUpstream[] = [];
  let registry: ServerProcess | undefined;
  let proxy: BearerProxy | undefined;

  beforeAll(async () => {
    try {
      const bin = await nodeForSuite();
      await conformance(bin, ['--version']);
      await conformance(bin, ['--version'], CONFORMANCE_2026);
      nodeBin = bin;
    } catch (err) {
      // On a fresh clone CI has the npm registry; a machine without it skips.
      const reason = `the conformance suite cannot run here: ${(err as Error).message.slice(0, 500)}`;
      if (ci) throw new Error(reason, { cause: err });
      unavailable = reason;
      return;
    }
    const tests = await startMcpUpstream({ tools: TEST_TOOLS });
    const schemas = await startMcpUpstream({ tools: SCHEMA_TOOLS });
    upstreams = [tests, schemas];
    // The proxy first, so the registry can be told its public URL is the proxy's: MCP_ALLOWED_ORIGINS
    // defaults to that origin, which dns-rebinding-protection sends as the valid one.
    proxy = await bearerProxy();
    // No progress interval: the scenario's tool reports every 50 ms and wants all three reports,
    // where the default MCP_PROGRESS_INTERVAL_MS (100) would pass on only the newest of two.
    const server = await startServer({ env: { PUBLIC_URL: proxy.url, MCP_PROGRESS_INTERVAL_MS: '0' } });
    registry = server;
    const admin = await mintTokenWithCli(server.databasePath, ['registry:write'], 'operator');
    writer.url = server.url;
    writer.token = admin;
    const servers = [
      { id: 'test', url: tests.url, prefix: 'test_' },
      { id: 'json-schema', url: schemas.url, prefix: 'json_schema_2020_12_' },
    ];
    for (const { id, ...descriptor } of servers) {
      const res = await fetch(`${server.url}/mcp-servers/${id}`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...descriptor, policy: 'auto' }),
      });
      expect(res.status, await res.text()).toBe(201);
    }
    const expected = [...TEST_TOOLS.map((d) => `test_${d.tool.name}`), 'json_schema_2020_12_tool'].sort();
    await vi.waitFor(
      async () => {
        const res = await fetch(`${server.url}/`, { headers: { authorization: `Bearer ${admin}` } });
        const names = ((await res.json()) as { tools: { name: string }[] }).tools.map((t) => t.name).sort();
        expect(names).toEqual(expected);
      },
      { timeout: 20_000, interval: 100 },
    );
    const agent = await mintTokenWithCli(server.databasePath, [], 'conformance-suite');
    proxy.forwardTo(new URL(server.url), agent);
    // Through the proxy, as the suite will connect: a call is answered by the tool, not refused.
    const client = await connect(new URL(`${proxy.url}/mcp`), undefined);
    try {
      const result = await client.client.callTool({ name: 'test_simple_text', arguments: {} });
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'This is a simple text response for testing.' }] });
      expect(result.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  }, 600_000);

  afterAll(async () => {
    if (proxy) {
      const { server } = proxy;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    if (registry) await stopProcess(registry);
    await Promise.all(upstreams.map((u) => u.stop()));
    killAll();
    removeTempDirs();
  });

  it('knows every server scenario of the pinned suite: applicable, or not applicable with a reason', async (ctx) => {
    if (nodeBin === undefined) return ctx.skip(unavailable);
    const { stdout } = await conformance(nodeBin, ['list', '--server']);
    const listed = [...stdout.matchAll(/^\s+- (\S+)/gm)].map((m) => m[1]);
    expect(listed.length).toBeGreaterThan(0);
    const known = new Set<string>([...APPLICABLE, ...NOT_APPLICABLE.keys()]);
    expect(
      listed.filter((s) => s !== undefined && !known.has(s)),
      'scenarios to classify',
    ).toEqual([]);
    expect(
      [...known].filter((s) => !listed.includes(s)),
      'scenarios the suite no longer has',
    ).toEqual([]);
  });

  it('passes every applicable scenario', async (ctx) => {
    if (nodeBin === undefined || proxy === undefined) return ctx.skip(unavailable);
    const url = `${proxy.url}/mcp`;
    const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
    // The whole active suite in one run (the not-applicable scenarios fail in it, so it exits
    // non-zero: what counts is each scenario's checks.json), then any applicable scenario the
    // active suite leaves out (the suite's "pending" ones) on its own.
    await conformance(nodeBin, ['server', '--url', url, '-o', out]).catch(() => undefined);
    for (const scenario of APPLICABLE.filter((s) => !readResults(out).has(s))) {
      await conformance(nodeBin, ['server', '--url', url, '--scenario', scenario, '-o', out]).catch(() => undefined);
    }
    const results = readResults(out);
    printNotes(results);
    expect(describeProblems(results, APPLICABLE), `conformance failures (results in ${out})`).toEqual([]);
    // Kept where something failed, for the checks' details.
    rmSync(out, { recursive: true, force: true });
  }, 300_000);

  it(`knows every ${REVISION_2026} server scenario of the pinned pre-release: applicable, or not applicable with a reason`, async (ctx) => {
    if (nodeBin === undefined) return ctx.skip(unavailable);
    const { stdout } = await conformance(nodeBin, ['list', '--server'], CONFORMANCE_2026);
    // `  - <scenario> [<revisions>]`; extensions (tasks, skills) are tagged `[extension]`, not the revision.
    const listed = [...stdout.matchAll(/^\s+- (\S+) \[([^\]]*)\]/gm)]
      .filter((m) => (m[2] ?? '').split(',').includes(REVISION_2026))
      .map((m) => m[1] ?? '');
    expect(listed.length).toBeGreaterThan(0);
    const known = new Set<string>([...APPLICABLE_2026, ...NOT_APPLICABLE_2026.keys()]);
    expect(
      listed.filter((s) => !known.has(s)),
      'scenarios to classify',
    ).toEqual([]);
    expect(
      [...known].filter((s) => !listed.includes(s)),
      'scenarios the pre-release no longer has',
    ).toEqual([]);
  });

  it(`passes every applicable ${REVISION_2026} scenario of the pinned pre-release`, async (ctx) => {
    if (nodeBin === undefined || proxy === undefined) return ctx.skip(unavailable);
    const url = `${proxy.url}/mcp`;
    const out = mkdtempSync(join(tmpdir(), 'mcp-conformance-2026-'));
    // Each applicable scenario on its own, at the revision (the active suite would also run the
    // input-required ones, which do not apply, each to its timeout).
    for (const scenario of APPLICABLE_2026) {
      await conformance(
        nodeBin,
        ['server', '--url', url, '--spec-version', REVISION_2026, '--scenario', scenario, '-o', out],
        CONFORMANCE_2026,
      ).catch(() => undefined);
    }
    const results = readResults(out);
    printNotes(results, NOT_APPLICABLE_CHECKS_2026);
    expect(describeProblems(results, APPLICABLE_2026, NOT_APPLICABLE_CHECKS_2026), `conformance failures (results in ${out})`).toEqual([]);
    rmSync(out, { recursive: true, force: true });
  }, 300_000);
});
