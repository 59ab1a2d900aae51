/**
 * Issue 11: `/mcp` as an OAuth resource server with tokens from the real in-process
 * authorization server the conformance suite uses (oidc-provider): tokens asked for the MCP
 * endpoint's own resource identifier (what MCP clients send, RFC 8707) or the registry's are
 * accepted; a token for another API is a 401 with the metadata link; each client lists its tools.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, appForProvider, RESOURCE, seedTools } from '../conformance/support.js';
import { connect, listAll, mcpUrl, type McpTestClient } from './support.js';

describe('/mcp with tokens from a real authorization server', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  let url: URL;
  const clients: McpTestClient[] = [];

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
        { clientId: 'weather-agent', scopes: ['weather:read'] },
      ],
    });
    t = await appForProvider(as, { RATE_LIMIT_MAX: '0' });
    await seedTools(t.app, await as.token('operator', [ADMIN_SCOPE]), [seed('calculator'), seed('weather_forecast'), seed('file_reader')]);
    url = await mcpUrl(t.app);
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await t?.close();
    await as?.close();
  });

  it.each([
    ['calc-agent', ['calculator:use'], ['calculator']],
    ['weather-agent', ['weather:read'], ['weather_forecast']],
    ['operator', [ADMIN_SCOPE], ['calculator', 'file_reader', 'weather_forecast']],
  ])('%s, with a token for the MCP endpoint, lists exactly its tools', async (client, scopes, expected) => {
    const token = await as.token(client, scopes, `${RESOURCE}/mcp`);
    const c = await connect(url, token);
    clients.push(c);
    expect((await listAll(c.client)).tools.map((tool) => tool.name).sort()).toEqual(expected);
  });

  it("a token for the registry's own resource identifier works too", async () => {
    const c = await connect(url, await as.token('calc-agent', ['calculator:use'], RESOURCE));
    clients.push(c);
    expect((await listAll(c.client)).tools.map((tool) => tool.name)).toEqual(['calculator']);
  });

  it('a token issued for another API is a 401 invalid_token with the metadata link', async () => {
    const token = await as.token('calc-agent', ['calculator:use'], 'https://other-api.test');
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain(`resource_metadata="${new URL(RESOURCE).origin}/.well-known/oauth-protected-resource/mcp"`);
  });

  it('the metadata names the authorization server and the MCP resource', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
    expect(res.json()).toEqual({
      resource: `${RESOURCE}/mcp`,
      authorization_servers: [as.issuer],
      scopes_supported: ['calculator:use', 'file_reader:use', 'weather:read'],
      bearer_methods_supported: ['header'],
      resource_name: 'tool-registry',
    });
  });
});
