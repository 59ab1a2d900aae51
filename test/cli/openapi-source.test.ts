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
import { main } from '../../src/cli/main.js';
import { createTestApp, type TestApp } from '../helpers/app.js';

const PETSTORE = new URL('../fixtures/openapi/petstore-3.0.yaml', import.meta.url).pathname;

let t: TestApp;
let base: string;
let token: string;
let dir: string;

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main([...args, '--url', base, '--token', token], {
    env: {},
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
  });
  return { code, stdout, stderr };
}

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
