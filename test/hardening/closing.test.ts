/**
 * A request that arrives while the registry shuts down gets the project's problem shape (503,
 * Retry-After) and the connection is closed after it, instead of Fastify's own JSON answer.
 */
import { expect, it } from 'vitest';
import { createTestApp } from '../helpers/app.js';

it('refuses requests during shutdown with a problem+json 503 and closes the connection', async () => {
  const t = await createTestApp();
  const closing = t.app.close();
  const res = await t.app.inject({ method: 'GET', url: '/' });
  await closing;
  expect(res.statusCode).toBe(503);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.headers['retry-after']).toBe('5');
  expect(res.headers.connection).toBe('close');
  expect(res.json()).toMatchObject({ code: 'TR_ERR_UNAVAILABLE', status: 503 });
});
