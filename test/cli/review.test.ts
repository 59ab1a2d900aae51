/**
 * `tool-registry review` (issue 29) in-process against a listening registry: it lists an
 * upstream server's pending changes as `<tool>@<digest>` lines with their diffs, accepts and
 * rejects by tool (the version pending now) or by tool and digest, and says so in one line when
 * a digest moved or nothing is pending.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpTool } from '../../src/model/mcp-schemas.js';
import { mcpToolOf } from '../helpers/fixtures.js';
import { toolDigest } from '../../src/registry/tool-digest.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { runCli, type CliRun } from '../helpers/cli.js';

let t: TestApp;
let base: string;
let token: string;

const listed = (name: string, description: string): McpTool =>
  mcpToolOf('up', 'up_', name, description, { type: 'object', properties: { q: { type: 'string' } } });

const cli = (...args: string[]): Promise<CliRun> => runCli(base, token, args);

async function sync(tools: McpTool[]): Promise<void> {
  await t.app.registry.syncMcpTools('up', t.app.catalog.getMcpServer('up')!.index, tools);
}

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  token = t.token(['registry:write'], { sub: 'cli-operator' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  const put = await t.app.inject({
    method: 'PUT',
    url: '/mcp-servers/up',
    headers: bearer(token),
    payload: { url: 'http://127.0.0.1:9/mcp', prefix: 'up_' },
  });
  expect(put.statusCode).toBe(201);
});

afterAll(() => t.close());

describe('tool-registry review (issue 29)', () => {
  it('lists each pending change as tool@digest with its diff', async () => {
    await sync([listed('a', 'Alpha.'), listed('b', 'Beta.')]);
    const out = await cli('review', 'up');
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(`up_a@${toolDigest(listed('a', 'Alpha.'))}\tadded`);
    expect(out.stdout).toContain('  add /description\n    + Alpha.\n');
    expect(out.stdout).toContain(`up_b@${toolDigest(listed('b', 'Beta.'))}\tadded`);
  });

  it('accepts by tool and digest, and a changed version by its old diff', async () => {
    const accepted = await cli('review', 'up', '--accept', `up_a@${toolDigest(listed('a', 'Alpha.'))}`);
    expect(accepted.code, accepted.stderr).toBe(0);
    expect(accepted.stdout).toBe(`accepted up_a@${toolDigest(listed('a', 'Alpha.'))}\n`);
    expect(t.app.catalog.getTool('up_a')?.record.descriptor).toMatchObject({ description: 'Alpha.' });
    await sync([listed('a', 'Alpha, changed.'), listed('b', 'Beta.')]);
    const out = await cli('review', 'up');
    expect(out.stdout).toContain('  replace /description\n    - Alpha.\n    + Alpha, changed.\n');
    expect(out.stdout).toContain(`(agents are served ${toolDigest(listed('a', 'Alpha.'))})`);
  });

  it('refuses a digest that moved, in one line, and rejects by name', async () => {
    const stale = await cli('review', 'up', '--accept', `up_a@${toolDigest(listed('a', 'Alpha.'))}`);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(
      /^tool-registry: 409 cannot accept: no change of "up_a" is pending|^tool-registry: 409 cannot accept: the pending version of "up_a"/,
    );
    expect(stale.stderr.trim().split('\n')).toHaveLength(1);
    const rejected = await cli('review', 'up', '--reject', 'up_b');
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(rejected.stdout).toBe(`rejected up_b@${toolDigest(listed('b', 'Beta.'))}\n`);
    expect(t.app.catalog.getTool('up_b')).toBeUndefined();
  });

  it('accepts everything pending with --accept-all, then says nothing is pending', async () => {
    const all = await cli('review', 'up', '--accept-all');
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(`accepted up_a@${toolDigest(listed('a', 'Alpha, changed.'))}\n`);
    expect(t.app.catalog.getTool('up_a')?.record.descriptor).toMatchObject({ description: 'Alpha, changed.' });
    expect((await cli('review', 'up')).stdout).toBe('nothing is pending\n');
    expect((await cli('review', 'up', '--accept-all')).stdout).toBe('nothing is pending\n');
  });

  it('is a usage error without a server, with a malformed digest, or with its options on another command', async () => {
    expect((await cli('review')).code).toBe(2);
    const bad = await cli('review', 'up', '--accept', 'up_a@md5:1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('<tool>@sha256:');
    const misplaced = await cli('list', '--accept', 'x');
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('--accept is an option of review');
    expect((await cli('review', 'nope')).stderr).toMatch(/^tool-registry: 404 no MCP server "nope"/);
  });
});
