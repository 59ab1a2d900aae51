/**
 * Issue 31: the official Python MCP SDK 2.3 (test/helpers/python-mcp.ts) at revision
 * 2026-07-28 against a registry on loopback (test/interop/mcp_modern_client.py):
 * `server/discover`, every page of `tools/list` with `ttlMs` and `cacheScope` (`private` for a
 * token, `public` for the anonymous view), and a call. The same SDK at 2025-11-25 is
 * issue-31-python-clients.process.test.ts.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonMcp } from '../helpers/python-mcp.js';
import { REPO_ROOT } from '../helpers/process.js';
import { refusalRegistry, type RefusalRegistry } from './refusal-registry.js';

const SCRIPT = join(REPO_ROOT, 'test', 'interop', 'mcp_modern_client.py');

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
