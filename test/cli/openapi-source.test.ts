/**
 * `tool-registry put openapi-source/<id> --document F --prefix P` (issue 30), in-process against a
 * listening registry: the document file (YAML here, the Petstore) is sent as its text with the
 * rest of the source from --file, the answer lists the tools; get and delete take the same target.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { runCli, type CliRun } from '../helpers/cli.js';

const PETSTORE = new URL('../fixtures/openapi/petstore-3.0.yaml', import.meta.url).pathname;

let t: TestApp;
let base: string;
let token: string;
let dir: string;

const cli = (...args: string[]): Promise<CliRun> => runCli(base, token, args);

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  token = t.token(['registry:write'], { sub: 'cli-operator' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  dir = mkdtempSync(join(tmpdir(), 'openapi-cli-'));
});

afterAll(async () => {
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('tool-registry put openapi-source/<id> (issue 30)', () => {
  it('registers a YAML document with a prefix, a filter and a credential from --file, and reads it back', async () => {
    const rest = join(dir, 'source.json');
    writeFileSync(rest, JSON.stringify({ filter: { tags: ['store'] }, credential: { apiKey: 'cli-secret-key' } }));
    const put = await cli('put', 'openapi-source/petstore', '--document', PETSTORE, '--prefix', 'store_', '--file', rest);
    expect(put.code, put.stderr).toBe(0);
    const record = JSON.parse(put.stdout) as { tools: string[]; credential: Record<string, unknown> };
    expect(record.tools).toEqual(['store_deleteOrder', 'store_getInventory', 'store_getOrderById', 'store_placeOrder']);
    expect(record.credential).toEqual({ kind: 'apiKey', in: 'header', name: 'api_key', set: true });
    expect(put.stdout).not.toContain('cli-secret-key');
    const got = await cli('get', 'openapi-source/petstore');
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toMatchObject({ id: 'petstore', prefix: 'store_', filter: { tags: ['store'] } });
  });

  it('says in one line what is wrong with a bad document, and names the option that belongs elsewhere', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'openapi: 3.0.3\ninfo: {title: t, version: "1"}\npaths:\n  /a:\n    $ref: "#/nowhere"\n');
    const put = await cli('put', 'openapi-source/bad', '--document', bad, '--prefix', 'bad_');
    expect(put.code).toBe(1);
    expect(put.stderr).toMatch(/^tool-registry: 400 .*\$ref #\/nowhere does not resolve.*\[\/paths\/~1a: /);
    const misplaced = await cli('put', 'tool/x', '--prefix', 'p_');
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('--prefix is an option of put openapi-source/<id>');
  });

  it('deletes the source and its tools', async () => {
    const gone = await cli('delete', 'openapi-source/petstore');
    expect(gone.code, gone.stderr).toBe(0);
    expect((await cli('get', 'tool/store_getInventory')).code).toBe(1);
  });
});

describe('tool-registry refresh and review openapi-source/<id> (issue 30)', () => {
  it('reads a documentUrl again, lists what waits with its diff, and accepts it by name', async () => {
    const { createServer } = await import('node:http');
    let paths: Record<string, unknown> = {
      '/a': { get: { operationId: 'a', description: 'A one.', responses: { '200': { description: 'ok' } } } },
    };
    const host = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          openapi: '3.1.0',
          info: { title: 'Served', version: '1' },
          servers: [{ url: 'https://api.example.com' }],
          paths,
        }),
      ),
    );
    await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(host.address() as AddressInfo).port}/openapi.json`;
      const rest = join(dir, 'served.json');
      writeFileSync(rest, JSON.stringify({ documentUrl: url }));
      const put = await cli('put', 'openapi-source/served', '--prefix', 'sv_', '--file', rest);
      expect(put.code, put.stderr).toBe(0);
      paths = { '/a': { get: { operationId: 'a', description: 'A two.', responses: { '200': { description: 'ok' } } } } };
      const refreshed = await cli('refresh', 'openapi-source/served');
      expect(refreshed.code, refreshed.stderr).toBe(0);
      expect(JSON.parse(refreshed.stdout)).toMatchObject({ pending: ['sv_a'], written: [], deleted: [] });
      const listed = await cli('review', 'openapi-source/served');
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(
        /^sv_a@sha256:[0-9a-f]{64}\tchanged\t\(agents are served sha256:[0-9a-f]{64}\)\n {2}replace \/description\n/,
      );
      expect(listed.stdout).toContain('+ A two.');
      const accepted = await cli('review', 'openapi-source/served', '--accept', 'sv_a');
      expect(accepted.code, accepted.stderr).toBe(0);
      expect(accepted.stdout).toMatch(/^accepted sv_a@sha256:/);
      const tool = await t.app.inject({ method: 'GET', url: '/tools/sv_a', headers: { authorization: `Bearer ${token}` } });
      expect(tool.json().descriptor.description).toContain('A two.');
      const inline = await cli('refresh', 'tool/x');
      expect(inline.code).toBe(2);
    } finally {
      await new Promise<void>((r) => host.close(() => r()));
    }
  });
});
