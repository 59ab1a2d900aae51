/**
 * MCP clients for tests: the official SDK's `Client` over `StreamableHTTPClientTransport`,
 * against a registry listening on a loopback port, each with its own bearer token.
 */
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance } from 'fastify';
import { vi } from 'vitest';

export interface McpTestClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  /** list_changed notifications received so far. */
  listChanged: number;
  /** Resolves at the next list_changed. */
  nextListChanged(): Promise<void>;
  close(): Promise<void>;
}

/** Listens on a loopback port (once) and returns the MCP endpoint's URL. */
export async function mcpUrl(app: FastifyInstance): Promise<URL> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  return new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`);
}

export async function connect(url: URL, token: string | undefined): Promise<McpTestClient> {
  const transport = new StreamableHTTPClientTransport(
    url,
    token === undefined ? {} : { requestInit: { headers: { authorization: `Bearer ${token}` } } },
  );
  const client = new Client({ name: 'registry-test', version: '1.0.0' });
  let waiting: (() => void)[] = [];
  const handle: McpTestClient = {
    client,
    transport,
    listChanged: 0,
    nextListChanged: () => new Promise<void>((resolve) => waiting.push(resolve)),
    close: () => client.close(),
  };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    handle.listChanged++;
    const resolve = waiting;
    waiting = [];
    for (const r of resolve) r();
  });
  await client.connect(transport);
  return handle;
}

/** Every tool over all pages, with the number of pages it took. */
export async function listAll(client: Client): Promise<{ tools: Tool[]; pages: number }> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    pages++;
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return { tools, pages };
}

/** Waits until `count` notification streams (GET /mcp) are held open by the server. */
export async function untilStreamsOpen(app: FastifyInstance, count: number): Promise<void> {
  await vi.waitUntil(() => app.waiters.size >= count, { timeout: 3000, interval: 10 });
}
