/**
 * Issue 11: `/mcp` under the anonymous policies and token lifetimes: with anonymous use turned
 * on, an anonymous session lists what ANONYMOUS_DISCOVERY shows and calls nothing; under
 * `public`, a tool outside a token's view is unknown (no 403, no scopes named); a session's
 * notification stream ends when its token expires.
 */
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, TEST_SECRET, type TestApp } from '../helpers/app.js';
import { connect, listAll, mcpUrl, untilStreamsOpen, type McpTestClient } from './support.js';

describe('/mcp with ANONYMOUS_DISCOVERY=public and MCP_ALLOW_ANONYMOUS', () => {
  let t: TestApp;
  let url: URL;
  const clients: McpTestClient[] = [];

  beforeAll(async () => {
    t = await createTestApp({
      RATE_LIMIT_MAX: '0',
      ANONYMOUS_DISCOVERY: 'public',
      MCP_ALLOW_ANONYMOUS: 'true',
      JWT_CLOCK_TOLERANCE_S: '0',
    });
    const admin = bearer(t.token(['registry:write']));
    for (const [name, scopes] of [
      ['open_tool', []],
      ['alpha_tool', ['alpha']],
      ['beta_tool', ['beta']],
    ] as const) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/tools/register',
        headers: admin,
        payload: { name, endpoint: '/x', scopes, description: name, host: '127.0.0.1', port: 9 },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    url = await mcpUrl(t.app);
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await t?.close();
  });

  it('an anonymous session lists the public view and may call nothing', async () => {
    const c = await connect(url, undefined);
    clients.push(c);
    expect((await listAll(c.client)).tools.map((tool) => tool.name)).toEqual(['open_tool']);
    // Answered in the session since issue 31: a result with isError and the reason.
    const refused = await c.client.callTool({ name: 'open_tool', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(refused.content).toEqual([{ type: 'text', text: 'calling open_tool needs a bearer token' }]);
  });

  it("a tool outside the token's view is unknown: no 403 and no scope named", async () => {
    const c = await connect(url, t.token(['alpha'], { sub: 'alpha-agent' }));
    clients.push(c);
    expect((await listAll(c.client)).tools.map((tool) => tool.name).sort()).toEqual(['alpha_tool', 'open_tool']);
    const err = (await c.client.callTool({ name: 'beta_tool', arguments: {} }).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('Unknown tool: beta_tool');
    expect(err.message).not.toContain('beta"');
    expect(err).not.toBeInstanceOf(StreamableHTTPError);
  });

  it("the notification stream ends when the session's token expires", async () => {
    const sign = createSigner({ key: TEST_SECRET, header: { alg: 'HS256', typ: 'at+jwt' } });
    const exp = Math.floor(Date.now() / 1000) + 2;
    const before = t.app.waiters.size;
    const c = await connect(url, sign({ sub: 'short-lived', scope: 'alpha', exp }));
    clients.push(c);
    await untilStreamsOpen(t.app, before + 1);
    const held = t.app.waiters.size;
    const deadline = Date.now() + 6000;
    while (t.app.waiters.size >= held && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(t.app.waiters.size).toBe(held - 1);
    expect(Date.now()).toBeGreaterThanOrEqual(exp * 1000);
  });
});
