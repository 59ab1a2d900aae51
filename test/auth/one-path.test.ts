/**
 * A token that arrives another way than a request's Authorization header (a tool service's
 * announcement: `app.verifyToken`) is refused in the same words as a request with it, and a
 * verified one is kept in the same cache as a request's.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RegistryError } from '../../src/model/errors.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const now = () => Math.floor(Date.now() / 1000);

describe('announcements and requests verify tokens alike', () => {
  let t: TestApp;
  const claims = { iss: 'https://auth.test', aud: 'tool-registry' };
  const good = (extra: Record<string, unknown> = {}) => t.token(['calculator:use'], { ...claims, ...extra });

  beforeAll(async () => {
    t = await createTestApp({ JWT_ISSUER: 'https://auth.test', JWT_AUDIENCE: 'tool-registry' });
  });
  afterAll(() => t.close());

  const bad: [string, () => string, string][] = [
    ['malformed', () => 'abc.def.ghi', 'malformed'],
    [
      'a bad signature',
      () => {
        const [h, p] = good().split('.');
        return `${h}.${p}.${createHmac('sha256', 'another secret').update(`${h}.${p}`).digest('base64url')}`;
      },
      'signature',
    ],
    ['a claim value', () => good({ aud: 'another-api' }), 'issuer, audience or type'],
    ['a missing claim', () => good({ iss: undefined }), 'lacks a claim'],
  ];

  it.each(bad)('refuses %s with the same code and description both ways', async (_name, make, words) => {
    const token = make();
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
    const refusal = await t.app.verifyToken(token).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(RegistryError);
    const { code, challenge } = refusal as RegistryError;
    expect(res.json()).toMatchObject({ code });
    expect(challenge?.description).toContain(words);
    expect(res.headers['www-authenticate']).toContain(`error_description="${challenge?.description}"`);
  });

  it('serves a verified token from the cache, whichever way it came', async () => {
    const token = good({ sub: 'announcer', exp: now() + 600 });
    const first = await t.app.verifyToken(token);
    expect(first).toMatchObject({ kind: 'token', sub: 'announcer' });
    // The same Caller object: not verified (and built) a second time.
    expect(await t.app.verifyToken(token)).toBe(first);
    const res = await t.app.inject({ method: 'GET', url: '/', headers: bearer(token) });
    expect(res.statusCode).toBe(200);
  });
});
