/**
 * Issue 31: a refused `tools/call` (a session that never authenticated, a token missing the
 * tool's scope) is answered in the session, as a result with `isError`, the registry's reason
 * and the problem in `_meta` (src/http/mcp/refusals.ts), so that the client keeps its session:
 * shown here for the TypeScript SDK and the AI SDK's MCP client (the Python SDKs:
 * issue-31-python-clients.process.test.ts). A tool the caller may not know of reads as an
 * unknown one. Under MCP_SCOPE_CHALLENGE a missing scope is the spec's HTTP 403 challenge, for
 * clients that step up on it; the TypeScript SDK's session survives that too.
 */
import { createMCPClient } from '@ai-sdk/mcp';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROBLEM_META_KEY } from '../../src/http/mcp/refusals.js';
import { connect, listAll, type McpTestClient } from './support.js';
import { refusalRegistry, type RefusalRegistry } from './refusal-registry.js';

const names = (tools: { name: string }[]) => tools.map((t) => t.name).sort();

describe('refused tools/call, answered in the session (ANONYMOUS_DISCOVERY=full)', () => {
  let r: RefusalRegistry;
  const clients: McpTestClient[] = [];
  const open = async (token: string | undefined) => {
    const c = await connect(r.url, token);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    r = await refusalRegistry();
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await r?.close();
  });

  it('TypeScript SDK, anonymous session: the refusal says a token is needed, and the session lists on', async () => {
    const c = await open(undefined);
    const refused = (await c.client.callTool({ name: 'beta_echo', arguments: { text: 'x' } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(refused.content).toEqual([{ type: 'text', text: 'calling beta_echo needs a bearer token with scope beta' }]);
    expect(refused._meta?.[PROBLEM_META_KEY]).toEqual({ code: 'TR_ERR_UNAUTHENTICATED', status: 401, scopes: ['beta'] });
    // A tool needing no scope still needs a token.
    const open_ = (await c.client.callTool({ name: 'open_echo', arguments: {} })) as CallToolResult;
    expect(open_.content).toEqual([{ type: 'text', text: 'calling open_echo needs a bearer token' }]);
    expect(names((await listAll(c.client)).tools)).toEqual(['alpha_echo', 'beta_echo', 'open_echo']);
  });

  it('TypeScript SDK, a token missing the scope: the refusal names the scope, then a call it may make succeeds', async () => {
    const c = await open(r.t.token(['alpha'], { sub: 'ts-alpha' }));
    const refused = (await c.client.callTool({ name: 'beta_echo', arguments: { text: 'x' } })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(refused.content).toEqual([{ type: 'text', text: 'calling beta_echo needs scope beta' }]);
    expect(refused._meta?.[PROBLEM_META_KEY]).toEqual({ code: 'TR_ERR_INSUFFICIENT_SCOPE', status: 403, scopes: ['beta'] });
    const allowed = (await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'after' } })) as CallToolResult;
    expect(allowed.isError).toBeFalsy();
    expect(allowed.content).toEqual([{ type: 'text', text: '{"echoed":"after"}' }]);
    // The refusal is audited as before.
    const audit = await r.t.app.inject({
      method: 'GET',
      url: '/audit?action=tool.invoke',
      headers: { authorization: `Bearer ${r.t.token(['registry:write'])}` },
    });
    expect(audit.body).toContain('TR_ERR_INSUFFICIENT_SCOPE');
  });

  it('AI SDK MCP client: a refused call, then a successful one, in one client', async () => {
    const client = await createMCPClient({
      transport: { type: 'http', url: r.url.href, headers: { authorization: `Bearer ${r.t.token(['alpha'], { sub: 'ai-sdk' })}` } },
    });
    try {
      // The token lists alpha_echo and open_echo; beta_echo it may know of (anonymous callers
      // see every tool here), as a model told of it would call it.
      const listed = await client.listTools();
      expect(names(listed.tools)).toEqual(['alpha_echo', 'open_echo']);
      const tools = client.toolsFromDefinitions({
        tools: [...listed.tools, { name: 'beta_echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } } }],
      });
      const options = { toolCallId: 'call-1', messages: [] };
      const refused = (await tools['beta_echo']?.execute?.({ text: 'x' }, options)) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(refused.content).toEqual([{ type: 'text', text: 'calling beta_echo needs scope beta' }]);
      expect(refused._meta?.[PROBLEM_META_KEY]).toMatchObject({ code: 'TR_ERR_INSUFFICIENT_SCOPE' });
      const allowed = (await tools['alpha_echo']?.execute?.({ text: 'ai' }, { ...options, toolCallId: 'call-2' })) as CallToolResult;
      expect(allowed.isError).toBeFalsy();
      expect(allowed.content).toEqual([{ type: 'text', text: '{"echoed":"ai"}' }]);
    } finally {
      await client.close();
    }
  });
});

describe('a tool the caller may not know of (ANONYMOUS_DISCOVERY=public)', () => {
  let r: RefusalRegistry;
  const clients: McpTestClient[] = [];

  beforeAll(async () => {
    r = await refusalRegistry({ ANONYMOUS_DISCOVERY: 'public' });
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await r?.close();
  });

  it('reads exactly as a name never registered: no scope named, no token asked for', async () => {
    const anonymous = await connect(r.url, undefined);
    const alpha = await connect(r.url, r.t.token(['alpha'], { sub: 'public-alpha' }));
    clients.push(anonymous, alpha);
    const messageOf = async (c: McpTestClient, name: string) => {
      const err = (await c.client.callTool({ name, arguments: {} }).catch((e: unknown) => e)) as Error & { code?: number };
      expect(err.code, name).toBe(-32602);
      return err.message.replace(name, '<name>');
    };
    const unknown = await messageOf(alpha, 'no_such_tool');
    expect(await messageOf(alpha, 'beta_echo')).toBe(unknown);
    expect(unknown).not.toMatch(/scope/);
    // A session without a token is told it needs one, whatever the name: no scope, no existence.
    const anonymousRead = async (name: string) =>
      JSON.stringify(await anonymous.client.callTool({ name, arguments: {} })).replaceAll(name, '<name>');
    const anonymousUnknown = await anonymousRead('no_such_tool');
    expect(anonymousUnknown).toContain('needs a bearer token');
    expect(await anonymousRead('alpha_echo')).toBe(anonymousUnknown);
    expect(anonymousUnknown).not.toMatch(/scope/);
    // The session goes on.
    expect(names((await listAll(alpha.client)).tools)).toEqual(['alpha_echo', 'open_echo']);
  });
});

describe('MCP_SCOPE_CHALLENGE: a missing scope is the HTTP 403 step-up challenge', () => {
  let r: RefusalRegistry;
  const clients: McpTestClient[] = [];

  beforeAll(async () => {
    r = await refusalRegistry({ MCP_SCOPE_CHALLENGE: 'true' });
  });
  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await r?.close();
  });

  it('403 insufficient_scope with the scopes that would do; the TypeScript SDK session goes on; anonymous stays in-band', async () => {
    const token = r.t.token(['alpha'], { sub: 'stepper' });
    const c = await connect(r.url, token);
    clients.push(c);
    const err = await c.client.callTool({ name: 'beta_echo', arguments: { text: 'x' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(403);
    // The reason is in the SDK's error (the problem body).
    expect((err as Error).message).toContain('calling beta_echo needs scope beta');
    const res = await fetch(r.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': c.transport.sessionId ?? '',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'beta_echo', arguments: {} } }),
    });
    expect(res.status).toBe(403);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toContain('scope="beta"');
    expect(challenge).toMatch(/resource_metadata="[^"]*\/\.well-known\/oauth-protected-resource\/mcp"/);
    const allowed = (await c.client.callTool({ name: 'alpha_echo', arguments: { text: 'on' } })) as CallToolResult;
    expect(allowed.content).toEqual([{ type: 'text', text: '{"echoed":"on"}' }]);
    // A session that never authenticated has no token to step up: still answered in the session.
    const anonymous = await connect(r.url, undefined);
    clients.push(anonymous);
    const refused = (await anonymous.client.callTool({ name: 'beta_echo', arguments: {} })) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(refused._meta?.[PROBLEM_META_KEY]).toMatchObject({ code: 'TR_ERR_UNAUTHENTICATED' });
  });
});
