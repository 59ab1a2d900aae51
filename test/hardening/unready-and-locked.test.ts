/**
 * Two operator-facing states found by a review: a replica that cannot reach its broker says so
 * in /readyz's 503, with the replication state; and a write waiting on another process's lock
 * on the database gives up soon with 503 and Retry-After, instead of holding every read for
 * the 5 s busy timeout (better-sqlite3 waits on the event loop).
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { replicationKeyFile } from '../helpers/replication-key.js';

const apps: TestApp[] = [];
afterEach(async () => {
  for (const t of apps.splice(0)) await t.close();
});

describe('operator-facing states', () => {
  it('a replica that cannot reach the broker answers /readyz 503 saying so, with its replication state', async () => {
    // Port 1 on loopback: nothing listens, so the replica never connects.
    const t = await createTestApp({
      PULSAR_WS_URL: 'ws://127.0.0.1:1',
      REPLICATION_TOPIC: 'persistent://tg/registry/descriptors',
      REPLICA_ID: 'lonely',
      REPLICATION_SECRET_FILE: replicationKeyFile(),
    });
    apps.push(t);
    const res = await t.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.json()).toMatchObject({
      code: 'TR_ERR_UNAVAILABLE',
      detail: 'this replica cannot reach the broker to catch up with the replication topic',
      replication: { replica: 'lonely', caughtUp: false, broker: 'disconnected', appliedIndex: 0 },
    });
  });

  it('a database holding writes made outside replication is refused as a setting (exit 2), naming DATABASE_PATH', async () => {
    const plain = await createTestApp();
    apps.push(plain);
    expect(
      (
        await plain.app.inject({
          method: 'PUT',
          url: '/tools/calculator',
          headers: bearer(plain.token(['registry:write'])),
          payload: seed('calculator'),
        })
      ).statusCode,
    ).toBe(201);
    // Opened beside the first (its close removes the folder): two connections share a WAL database.
    const replicated = createTestApp({
      DATABASE_PATH: plain.config.databasePath,
      PULSAR_WS_URL: 'ws://127.0.0.1:1',
      REPLICATION_TOPIC: 'persistent://tg/registry/descriptors',
      REPLICATION_SECRET_FILE: replicationKeyFile(),
    });
    await expect(replicated).rejects.toBeInstanceOf(ConfigError);
    await expect(replicated).rejects.toThrow(/^DATABASE_PATH holds 1 write\(s\) made outside replication/);
  });

  it("a write facing another process's lock answers 503 with Retry-After well before the startup busy timeout", async () => {
    const t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    apps.push(t);
    const admin = bearer(t.token(['registry:write']));
    expect((await t.app.inject({ method: 'PUT', url: '/tools/calculator', headers: admin, payload: seed('calculator') })).statusCode).toBe(
      201,
    );
    const other = new Database(t.config.databasePath);
    try {
      other.exec('BEGIN EXCLUSIVE');
      const started = Date.now();
      const write = await t.app.inject({
        method: 'PUT',
        url: '/tools/other',
        headers: admin,
        payload: { ...seed('calculator'), name: 'other' },
      });
      const waited = Date.now() - started;
      expect(write.statusCode).toBe(503);
      expect(write.headers['retry-after']).toBe('1');
      expect(write.json()).toMatchObject({ code: 'TR_ERR_UNAVAILABLE', detail: 'the database is busy; retry shortly' });
      // The serving busy timeout is 200 ms; the 5 s one of startup would hold every read as long.
      expect(waited).toBeLessThan(2_500);
      // Reads are served from memory meanwhile, and the refused write changed nothing.
      expect((await t.app.inject({ method: 'GET', url: '/tools/calculator' })).statusCode).toBe(200);
      expect((await t.app.inject({ method: 'GET', url: '/tools/other' })).statusCode).toBe(404);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(
      (await t.app.inject({ method: 'PUT', url: '/tools/other', headers: admin, payload: { ...seed('calculator'), name: 'other' } }))
        .statusCode,
    ).toBe(201);
  });
});
