/**
 * Issue 31: the official Python MCP SDK 2.3 (test/helpers/python-mcp.ts) at revision
 * 2026-07-28 against a registry on loopback (test/interop/mcp_modern_client.py):
 * `server/discover`, every page of `tools/list` with `ttlMs` and `cacheScope` (`private` for a
 * token, `public` for the anonymous view), and a call; and `subscriptions/listen` through the
 * SDK's own `listen()` (test/interop/mcp_modern_listen.py): a write through the admin API
 * reaches a listener whose view it changes as `notifications/tools/list_changed`, and not one
 * whose view it leaves as it was. The same SDK at 2025-11-25 is
 * issue-31-python-clients.process.test.ts.
 */
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonMcp } from '../helpers/python-mcp.js';
import { REPO_ROOT } from '../helpers/process.js';
import { bearer } from '../helpers/app.js';
import { refusalRegistry, type RefusalRegistry } from './refusal-registry.js';

const SCRIPT = join(REPO_ROOT, 'test', 'interop', 'mcp_modern_client.py');
const LISTEN_SCRIPT = join(REPO_ROOT, 'test', 'interop', 'mcp_modern_listen.py');

interface Step {
  step: string;
  [field: string]: unknown;
}

function runClient(python: string, url: URL, token: string | undefined, tool: string): Promise<Step[]> {
  return new Promise((resolve) => {
    execFile(
      python,
      [SCRIPT, url.href, tool],
      { env: { ...process.env, ...(token && { MCP_TOKEN: token }) }, timeout: 60_000 },
      (_err, stdout) => resolve(stdout.split('\n').flatMap((line) => (line.startsWith('{') ? [JSON.parse(line) as Step] : []))),
    );
  });
}

/** A listening client, its lines read as they come; killed by `stop`. */
interface PythonListener {
  steps: Step[];
  until(ready: (steps: Step[]) => boolean, ms?: number): Promise<void>;
  stop(): void;
}

function startListener(python: string, url: URL, token: string): PythonListener {
  const child = spawn(python, [LISTEN_SCRIPT, url.href], { env: { ...process.env, MCP_TOKEN: token }, stdio: ['ignore', 'pipe', 'pipe'] });
  const steps: Step[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let end: number;
    while ((end = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.startsWith('{')) steps.push(JSON.parse(line) as Step);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
  return {
    steps,
    async until(ready, ms = 30_000) {
      const deadline = Date.now() + ms;
      while (!ready(steps)) {
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`not reached: ${JSON.stringify(steps)} ${stderr.slice(-500)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop: () => child.kill(),
  };
}

const ci = process.env['CI'] === 'true';

describe('Python MCP SDK 2.3 at revision 2026-07-28', () => {
  let python: string | undefined;
  let skip: string | undefined;
  let r: RefusalRegistry;

  beforeAll(async () => {
    try {
      python = await pythonMcp(2);
    } catch (err) {
      if (ci) throw err;
      skip = (err as Error).message;
    }
    r = await refusalRegistry({ MCP_PAGE_SIZE: '1', ANONYMOUS_DISCOVERY: 'public', ANONYMOUS_MAX_AGE_S: '30' });
  }, 600_000);
  afterAll(() => r?.close());

  it('a token: discover, private pages (one tool each) with ttlMs 0, a call', async (ctx) => {
    if (python === undefined) return ctx.skip(skip);
    const steps = await runClient(python, r.url, r.t.token(['alpha'], { sub: 'python-modern' }), 'alpha_echo');
    expect(steps.at(-1)?.step, JSON.stringify(steps)).toBe('call');
    expect(steps[0]?.['version']).toMatch(/^2\.3\./);
    const discover = steps.find((s) => s.step === 'discover');
    expect(discover).toMatchObject({ negotiated: '2026-07-28', tools: true, server: 'tool-registry' });
    expect(discover?.['supported']).toEqual(expect.arrayContaining(['2026-07-28', '2025-11-25']));
    const pages = steps.filter((s) => s.step === 'page');
    expect(pages.length).toBe(2);
    expect(pages.flatMap((p) => p['tools'] as string[])).toEqual(['alpha_echo', 'open_echo']);
    for (const page of pages) expect(page).toMatchObject({ cacheScope: 'private', ttlMs: 0, resultType: 'complete' });
    expect(steps.at(-1)).toMatchObject({ isError: false, text: '{"echoed":"from python"}' });
  });

  it('anonymous: the public view, public pages with ANONYMOUS_MAX_AGE_S as ttlMs, a refused call with its reason', async (ctx) => {
    if (python === undefined) return ctx.skip(skip);
    const steps = await runClient(python, r.url, undefined, 'open_echo');
    expect(steps.at(-1)?.step, JSON.stringify(steps)).toBe('call');
    const pages = steps.filter((s) => s.step === 'page');
    expect(pages.flatMap((p) => p['tools'] as string[])).toEqual(['open_echo']);
    for (const page of pages) expect(page).toMatchObject({ cacheScope: 'public', ttlMs: 30_000, resultType: 'complete' });
    // Calls need a token: the refusal is a result the client reads, reason and all.
    expect(steps.at(-1)).toMatchObject({ isError: true, text: 'calling open_echo needs a bearer token' });
  });
});

describe('Python MCP SDK 2.3 listening at revision 2026-07-28', () => {
  let python: string | undefined;
  let skip: string | undefined;
  let r: RefusalRegistry;
  const listeners: PythonListener[] = [];

  beforeAll(async () => {
    try {
      python = await pythonMcp(2);
    } catch (err) {
      if (ci) throw err;
      skip = (err as Error).message;
    }
    r = await refusalRegistry();
  }, 600_000);
  afterAll(async () => {
    for (const listener of listeners) listener.stop();
    await r?.close();
  });

  const register = async (name: string, scopes: string[]) => {
    const res = await r.t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(r.t.token(['registry:write'], { sub: 'operator' })),
      payload: { name, endpoint: '/echo', host: '127.0.0.1', port: 9, scopes, description: `The ${name} tool` },
    });
    expect(res.statusCode, res.body).toBe(201);
  };

  it('tells a listener of a write in its view, as list_changed, and not one whose view it leaves as it was', async (ctx) => {
    if (python === undefined) return ctx.skip(skip);
    const alpha = startListener(python, r.url, r.t.token(['alpha'], { sub: 'python-alpha' }));
    const beta = startListener(python, r.url, r.t.token(['beta'], { sub: 'python-beta' }));
    listeners.push(alpha, beta);
    const listening = (steps: Step[]) => steps.some((s) => s.step === 'listening');
    await Promise.all([alpha.until(listening), beta.until(listening)]);
    expect(alpha.steps[0]).toEqual({ step: 'discover', negotiated: '2026-07-28', listChanged: true });
    const ack = alpha.steps.find((s) => s.step === 'listening');
    // The SDK's listen() returns once the registry's acknowledgment names what it honours.
    expect(ack).toMatchObject({ honored: { toolsListChanged: true }, tools: ['alpha_echo', 'open_echo'] });
    expect(ack?.['subscription']).toMatch(/^listen-\d+$/);

    const events = (steps: Step[]) => steps.filter((s) => s.step === 'event');
    await register('alpha_more', ['alpha']);
    await alpha.until((steps) => events(steps).length === 1);
    expect(events(alpha.steps)).toEqual([{ step: 'event', kind: 'ToolsListChanged', tools: ['alpha_echo', 'alpha_more', 'open_echo'] }]);
    // beta's view did not change: it was told nothing (its notice would have gone out with alpha's).
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(events(beta.steps)).toEqual([]);

    // A tool that needs no scope is in both views: both are told.
    await register('open_more', []);
    await beta.until((steps) => events(steps).length === 1);
    await alpha.until((steps) => events(steps).length === 2);
    expect(events(beta.steps)).toEqual([{ step: 'event', kind: 'ToolsListChanged', tools: ['beta_echo', 'open_echo', 'open_more'] }]);
    expect(events(alpha.steps)[1]?.['tools']).toEqual(['alpha_echo', 'alpha_more', 'open_echo', 'open_more']);
    expect([...alpha.steps, ...beta.steps].filter((s) => s.step === 'error')).toEqual([]);
  }, 90_000);
});
