/**
 * Issue 11: `/mcp` as an OAuth resource server with tokens from the real in-process
 * authorization server the conformance suite uses (oidc-provider): tokens asked for the MCP
 * endpoint's own resource identifier (what MCP clients send, RFC 8707) or the registry's are
 * accepted; a token for another API is a 401 with the metadata link; each client lists its tools.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';
import { ADMIN_SCOPE, appForProvider, RESOURCE, seedTools } from '../conformance/support.js';
import { connect, listAll, mcpUrl, untilStreamsOpen, type McpTestClient } from './support.js';

describe('/mcp with tokens from a real authorization server', () => {
  let as: AuthorizationServer;
  let t: TestApp;
  let url: URL;
  let toolHost: Server;
  let operator: string;
  const clients: McpTestClient[] = [];

  beforeAll(async () => {
    as = await startAuthorizationServer({
      clients: [
        { clientId: 'operator', scopes: [ADMIN_SCOPE] },
        { clientId: 'calc-agent', scopes: ['calculator:use'] },
        { clientId: 'weather-agent', scopes: ['weather:read'] },
      ],
    });
    toolHost = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () =>
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ result: `computed ${Buffer.concat(chunks).toString()}` })),
      );
    });
    await new Promise<void>((resolve) => toolHost.listen(0, '127.0.0.1', resolve));
    const port = (toolHost.address() as AddressInfo).port;
    t = await appForProvider(as, { RATE_LIMIT_MAX: '0' });
    operator = await as.token('operator', [ADMIN_SCOPE]);
    await seedTools(t.app, operator, [{ ...seed('calculator'), host: '127.0.0.1', port }, seed('weather_forecast'), seed('file_reader')]);
    url = await mcpUrl(t.app);
  });

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await t?.close();
    await as?.close();
    await new Promise((resolve) => toolHost?.close(resolve));
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
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate') ?? '';
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain(`resource_metadata="${new URL(RESOURCE).origin}/.well-known/oauth-protected-resource/mcp"`);
  });

  it('a call with a real token reaches the tool; one outside its scopes is the 403 the MCP rules name', async () => {
    const calc = await connect(url, await as.token('calc-agent', ['calculator:use'], `${RESOURCE}/mcp`));
    const weather = await connect(url, await as.token('weather-agent', ['weather:read'], `${RESOURCE}/mcp`));
    clients.push(calc, weather);
    const result = await calc.client.callTool({ name: 'calculator', arguments: { expression: '2 + 2' } });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: '{"result":"computed {\\"expression\\":\\"2 + 2\\"}"}' }]);
    // Answered in the session since issue 31 (MCP_SCOPE_CHALLENGE off): isError with the reason.
    const refused = await weather.client.callTool({ name: 'calculator', arguments: { expression: '1' } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('needs scope');
  });

  it("an operator's write reaches the session whose view it changes, and not the other", async () => {
    const calc = await connect(url, await as.token('calc-agent', ['calculator:use'], `${RESOURCE}/mcp`));
    const weather = await connect(url, await as.token('weather-agent', ['weather:read'], `${RESOURCE}/mcp`));
    clients.push(calc, weather);
    await untilStreamsOpen(t.app, 2);
    const weatherNotified = weather.nextListChanged();
    const put = await t.app.inject({
      method: 'PUT',
      url: '/tools/weather_alerts',
      headers: bearer(operator),
      payload: { ...seed('weather_forecast'), name: 'weather_alerts' },
    });
    expect(put.statusCode, put.body).toBe(201);
    await weatherNotified;
    // A later write calc sees: its first notice must be for that one.
    const calcNotified = calc.nextListChanged();
    const put2 = await t.app.inject({
      method: 'PUT',
      url: '/tools/calculator_pro',
      headers: bearer(operator),
      payload: { ...seed('calculator'), name: 'calculator_pro' },
    });
    expect(put2.statusCode, put2.body).toBe(201);
    await calcNotified;
    expect([calc.listChanged, weather.listChanged]).toEqual([1, 1]);
    expect((await listAll(weather.client)).tools.map((tool) => tool.name)).toEqual(['weather_alerts', 'weather_forecast']);
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
