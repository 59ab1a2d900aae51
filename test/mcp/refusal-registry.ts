/**
 * The registry the issue-31 refusal tests share: on a loopback port, with anonymous MCP use on,
 * an echo tool host, and tools with and without scopes (`open_echo` needs none, `alpha_echo`
 * and `beta_echo` their scope).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { SettingName } from '../../src/config/settings.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { mcpUrl } from './support.js';

export interface RefusalRegistry {
  t: TestApp;
  url: URL;
  close(): Promise<void>;
}

export async function refusalRegistry(settings: Partial<Record<SettingName, string>> = {}): Promise<RefusalRegistry> {
  const host: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const args = JSON.parse(Buffer.concat(chunks).toString() || '{}') as { text?: string };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: args.text ?? null }));
    });
  });
  await new Promise<void>((resolve) => host.listen(0, '127.0.0.1', resolve));
  const port = (host.address() as AddressInfo).port;
  const t = await createTestApp({ RATE_LIMIT_MAX: '0', MCP_ALLOW_ANONYMOUS: 'true', ...settings });
  const admin = bearer(t.token(['registry:write'], { sub: 'operator' }));
  for (const [name, scopes] of [
    ['open_echo', []],
    ['alpha_echo', ['alpha']],
    ['beta_echo', ['beta']],
  ] as const) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: {
        name,
        endpoint: '/echo',
        scopes,
        description: `The ${name} tool`,
        parameters: { text: { type: 'string', description: 'What to echo' } },
        host: '127.0.0.1',
        port,
      },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
  const url = await mcpUrl(t.app);
  // Requests being answered, so that close() can tell when only connections without one are left.
  let answering = 0;
  t.app.server.on('request', (_req, res) => {
    answering++;
    res.once('close', () => answering--);
  });
  return {
    t,
    url,
    close: async () => {
      // A client's pooled connection that carries no request (the AI SDK's client leaves one)
      // would hold close() for Node's headers timeout: dropped once nothing is being answered.
      const sweep = setInterval(() => answering === 0 && t.app.server.closeAllConnections(), 50);
      await t.close();
      clearInterval(sweep);
      // The bridge's kept-alive connections to the tool host would hold close() for their timeout.
      host.closeAllConnections();
      await new Promise((resolve) => host.close(resolve));
    },
  };
}
