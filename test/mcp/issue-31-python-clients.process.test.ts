/**
 * Issue 31: the official Python MCP SDK, 1.30 and 2.3, each in its own virtualenv
 * (test/helpers/python-mcp.ts), against a registry listening on loopback: a `tools/call` the
 * registry refuses (no token; a token missing the tool's scope) is followed by a call that
 * succeeds and a `tools/list`, in the same session, and the refusal shows the registry's
 * reason. Under MCP_SCOPE_CHALLENGE the HTTP 403 challenge tears a 1.30 session down, which is
 * why it is not the default (src/http/mcp/refusals.ts).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_META_KEY } from '../../src/http/mcp/refusals.js';
import { pythonMcp } from '../helpers/python-mcp.js';
import { REPO_ROOT } from '../helpers/process.js';
import { refusalRegistry, type RefusalRegistry } from './refusal-registry.js';

const SCRIPT = join(REPO_ROOT, 'test', 'interop', 'mcp_refusal_client.py');

interface Step {
  step: string;
  ok: boolean;
  version?: string;
  isError?: boolean;
  text?: string;
  meta?: Record<string, unknown> | null;
  tools?: string[];
  error?: string;
}

/** Runs the client script; its JSON lines, one per step. */
function runClient(python: string, url: URL, token: string | undefined, tools: string[]): Promise<Step[]> {
  return new Promise((resolve) => {
    execFile(
      python,
      [SCRIPT, url.href, ...tools],
      { env: { ...process.env, ...(token && { MCP_TOKEN: token }) }, timeout: 60_000 },
      (_err, stdout) => resolve(stdout.split('\n').flatMap((line) => (line.startsWith('{') ? [JSON.parse(line) as Step] : []))),
    );
  });
}

const ci = process.env['CI'] === 'true';

for (const major of [1, 2] as const) {
  describe(`Python MCP SDK ${major}.x`, () => {
    let python: string | undefined;
    let skip: string | undefined;
    let r: RefusalRegistry;
    let challenging: RefusalRegistry;

    beforeAll(async () => {
      try {
        python = await pythonMcp(major);
      } catch (err) {
        // On a fresh clone CI installs it (pip from PyPI); elsewhere a machine without PyPI skips.
        if (ci) throw err;
        skip = (err as Error).message;
      }
      r = await refusalRegistry();
      challenging = await refusalRegistry({ MCP_SCOPE_CHALLENGE: 'true' });
    }, 600_000);
    afterAll(async () => {
      await r?.close();
      await challenging?.close();
    });

    it('a token missing the scope: the refusal with its reason, then a successful call and a list, in one session', async (ctx) => {
      if (python === undefined) return ctx.skip(skip);
      const steps = await runClient(python, r.url, r.t.token(['alpha'], { sub: `python-${major}` }), ['beta_echo', 'alpha_echo']);
      expect(steps[0]?.version).toMatch(major === 1 ? /^1\.30\./ : /^2\.3\./);
      const [, refused, allowed, list] = steps;
      expect(refused).toMatchObject({ step: 'refused', ok: true, isError: true, text: 'calling beta_echo needs scope beta' });
      expect(refused?.meta?.[PROBLEM_META_KEY]).toMatchObject({ code: 'TR_ERR_INSUFFICIENT_SCOPE', status: 403, scopes: ['beta'] });
      expect(allowed).toMatchObject({ step: 'allowed', ok: true, isError: false, text: '{"echoed":"from python"}' });
      expect(list).toMatchObject({ step: 'list', ok: true, tools: ['alpha_echo', 'open_echo'] });
    });

    it('a session that never authenticated: told it needs a token, and the session lists on', async (ctx) => {
      if (python === undefined) return ctx.skip(skip);
      const [, refused, list] = await runClient(python, r.url, undefined, ['beta_echo']);
      expect(refused).toMatchObject({
        step: 'refused',
        ok: true,
        isError: true,
        text: 'calling beta_echo needs a bearer token with scope beta',
      });
      expect(refused?.meta?.[PROBLEM_META_KEY]).toMatchObject({ code: 'TR_ERR_UNAUTHENTICATED' });
      expect(list).toMatchObject({ step: 'list', ok: true, tools: ['alpha_echo', 'beta_echo', 'open_echo'] });
    });

    it('under MCP_SCOPE_CHALLENGE, the HTTP 403 challenge: what this SDK makes of it', async (ctx) => {
      if (python === undefined) return ctx.skip(skip);
      const steps = await runClient(python, challenging.url, challenging.t.token(['alpha'], { sub: `python-${major}-403` }), [
        'beta_echo',
        'alpha_echo',
      ]);
      const refused = steps.find((s) => s.step === 'refused');
      if (major === 1) {
        // raise_for_status in the transport's task group: the session is gone, nothing after runs.
        expect(refused).toMatchObject({ ok: false });
        expect(steps.find((s) => s.step === 'allowed')).toBeUndefined();
        expect(steps.at(-1)).toMatchObject({ step: 'session', ok: false });
        expect(steps.at(-1)?.error).toMatch(/403|HTTPStatusError/);
      } else {
        // The session survives, but the problem body is not read: the reason is lost.
        expect(refused).toMatchObject({ ok: false });
        expect(refused?.error).toContain('Server returned an error response');
        expect(refused?.error).not.toContain('needs scope beta');
      }
    });
  });
}
