/**
 * `tool-registry deprecate tool/<name>` and `undeprecate` (issue 34), in-process against a
 * listening registry: the deprecation API's fields from flags, and the registry's refusal as one line.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { runCli, type CliRun } from '../helpers/cli.js';

let t: TestApp;
let base: string;
let token: string;

const cli = (...args: string[]): Promise<CliRun> => runCli(base, token, args);

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  token = t.token(['registry:write'], { sub: 'cli-operator' });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  for (const name of ['old_weather', 'weather']) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(token),
      payload: { name, endpoint: `/${name}`, host: '127.0.0.1', port: 9, scopes: [], description: `The ${name} tool` },
    });
    expect(res.statusCode).toBe(201);
  }
});
afterAll(() => t.close());

describe('tool-registry deprecate and undeprecate (issue 34)', () => {
  it('deprecates with a sunset, a replacement and a reason, and lifts it', async () => {
    const set = await cli(
      'deprecate',
      'tool/old_weather',
      '--sunset',
      '2099-01-01T00:00:00Z',
      '--replacement',
      'weather',
      '--reason',
      'use weather',
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({
      status: 'deprecated',
      deprecation: { sunset: '2099-01-01T00:00:00.000Z', replacement: 'weather', reason: 'use weather' },
    });
    const listed = (await t.app.inject({ method: 'GET', url: '/' })).json().tools as { name: string; deprecation?: unknown }[];
    expect(listed.find((tool) => tool.name === 'old_weather')?.deprecation).toMatchObject({ replacement: 'weather' });
    const lifted = await cli('undeprecate', 'tool/old_weather');
    expect(lifted.code, lifted.stderr).toBe(0);
    expect(JSON.parse(lifted.stdout).status).toBe('active');
  });

  it('says in one line what the registry refused, and where the flags belong', async () => {
    const bad = await cli('deprecate', 'tool/old_weather', '--replacement', 'nowhere');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^tool-registry: 400 .*replacement/);
    const misplaced = await cli('get', 'tool/old_weather', '--sunset', '2099-01-01T00:00:00Z');
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain('--sunset is an option of deprecate tool/<name>');
    const notTool = await cli('deprecate', 'tool-service/x');
    expect(notTool.code).toBe(2);
  });
});
