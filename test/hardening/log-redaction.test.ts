/**
 * Issue 9, "tokens in logs": the server's own logger options (src/server.ts) writing to a
 * stream, real requests carrying credentials in many spellings and encodings, and a grep of
 * every log line: no secret may appear, whatever the route, status or log level.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/http/app.js';
import { redactUrl } from '../../src/http/redact-url.js';
import { loggerOptions } from '../../src/server.js';
import { TEST_SECRET } from '../helpers/app.js';

/** Every secret below contains this, so one grep finds any of them. */
const MARK = 'S3CRETx';
const secret = (n: number) => `${MARK}${n}`;
const JWT = `eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ${MARK}In0.c2lnbmF0dXJl${MARK}`;

/** Query strings that carry a credential, in the spellings and encodings an attacker would try. */
const QUERIES = [
  `access_token=${secret(1)}`,
  `ACCESS_TOKEN=${secret(2)}`,
  `Access-Token=${secret(3)}`,
  `access%5Ftoken=${secret(4)}`,
  `%61ccess_token=${secret(5)}`,
  `access%255Ftoken=${secret(6)}`,
  `%EF%BD%81ccess_token=${secret(7)}`,
  `access+token=${secret(8)}`,
  `token=${secret(9)}`,
  `id_token=${secret(10)}`,
  `refresh_token=${secret(11)}`,
  `client_secret=${secret(12)}`,
  `code=${secret(13)}`,
  `password=${secret(14)}`,
  `api_key=${secret(15)}`,
  `X-API-KEY=${secret(16)}`,
  `q=x;access_token=${secret(17)}`,
  `access_token=%ZZ${secret(18)}`,
  `%ZZ=${secret(19)}`,
  `access_token[]=${secret(20)}`,
  `limit=1&access_token=${secret(21)}&cursor=x`,
  `jwt=${secret(22)}`,
  `whatever=${JWT}`,
  `access_token=${encodeURIComponent(encodeURIComponent(secret(23)))}`,
];

class Lines extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.lines.push(
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((line) => line !== ''),
    );
    done();
  }
}

describe('issue 9: no credential reaches the request log', () => {
  let app: FastifyInstance;
  let port: number;
  let dir: string;
  const log = new Lines();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tool-registry-log-'));
    const config = loadConfig(
      {},
      { DATABASE_PATH: join(dir, 'registry.db'), JWT_SECRET: TEST_SECRET, LOG_LEVEL: 'trace', RATE_LIMIT_MAX: '0' },
    );
    app = await buildApp(config, { logger: { ...loggerOptions(config, false), stream: log } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A raw request, so that the path goes out exactly as written (fetch would normalise it). */
  const send = (method: string, path: string, headers: Record<string, string> = {}) =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });

  it('redacts query credentials in every spelling and encoding, on every route, and drops what does not decode', async () => {
    const from = log.lines.length;
    for (const query of QUERIES) {
      for (const path of ['/', '/stats', '/healthz', '/no-such-route', `/tools/${JWT}`]) await send('GET', `${path}?${query}`);
      await send('POST', `/tools/calculator/invoke?${query}`, { 'content-type': 'application/json' });
    }
    await send('GET', `/tools/${JWT}/access`);
    const text = log.lines.slice(from).join('\n');
    expect(log.lines.length - from).toBeGreaterThan(QUERIES.length * 6);
    expect(text).toContain('[redacted]');
    expect(text).not.toContain(MARK);
  });

  it('never logs Authorization, Cookie or API-key headers, also for refused and failing requests', async () => {
    const from = log.lines.length;
    const headers = {
      authorization: `Bearer ${JWT}`,
      cookie: `session=${secret(30)}`,
      'x-api-key': secret(31),
      'proxy-authorization': `Basic ${secret(32)}`,
    };
    await send('GET', '/', headers);
    await send('POST', '/tools/register', { ...headers, 'content-type': 'application/json' });
    await send('GET', '/no-such-route', headers);
    await send('GET', '/', { authorization: `Bearer ${secret(33)}` });
    expect(log.lines.length).toBeGreaterThan(from);
    expect(log.lines.slice(from).join('\n')).not.toContain(MARK);
  });

  it('keeps what is not a credential readable', () => {
    expect(redactUrl('/?limit=10&q=weather%20today&cursor=abc')).toBe('/?limit=10&q=weather%20today&cursor=abc');
    expect(redactUrl('/?q=1&access_token=x#frag')).toBe('/?q=1&access_token=[redacted]');
    expect(redactUrl('/tools/calculator/invoke')).toBe('/tools/calculator/invoke');
  });
});
