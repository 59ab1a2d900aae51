/**
 * Issue 30: an HTTP tool's full `target` is validated at registration, each problem a 400
 * naming its path, and the article's `host`/`port`/`endpoint` form is stored as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

describe('HTTP tool targets at registration (issue 30)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  });
  afterAll(() => t.close());

  const register = (payload: Record<string, unknown>) =>
    t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(t.token(['registry:write'])),
      payload: { name: 'pets', description: 'Pets', ...payload },
    });
  const target = (extra: Record<string, unknown> = {}) => ({
    baseUrl: 'https://api.example.com/v1',
    method: 'GET',
    path: '/pets',
    ...extra,
  });

  it('stores a target as given, without host, port or endpoint', async () => {
    const res = await register({
      target: target({ path: '/pets/{petId}', arguments: { tags: { in: 'query', style: 'pipeDelimited' } } }),
      parameters: { petId: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const { descriptor } = res.json();
    expect(descriptor.target).toEqual({
      baseUrl: 'https://api.example.com/v1',
      method: 'GET',
      path: '/pets/{petId}',
      arguments: { tags: { in: 'query', style: 'pipeDelimited' } },
    });
    for (const key of ['host', 'port', 'endpoint']) expect(descriptor).not.toHaveProperty(key);
  });

  it('keeps the article form and its defaults, in the key order it was always stored in', async () => {
    // The order zod's defaults gave before issue 30 (host and port in place), `parameters` last
    // when the body gave none: the stored bytes, and so the ETags, of the same body do not change.
    const res = await register({ name: 'classic', endpoint: '/tools/classic' });
    expect(res.statusCode, res.body).toBe(201);
    expect(Object.keys(res.json().descriptor)).toEqual([
      'name',
      'endpoint',
      'scopes',
      'description',
      'returns',
      'host',
      'port',
      'forwardAuthorization',
      'parameters',
    ]);
    expect(res.json().descriptor).toMatchObject({ host: 'localhost', port: 8002, parameters: {} });
    const given = await register({ name: 'classic2', endpoint: '/c', port: 9000, parameters: {}, timeoutMs: 5 });
    expect(Object.keys(given.json().descriptor)).toEqual([
      'name',
      'endpoint',
      'scopes',
      'description',
      'parameters',
      'returns',
      'host',
      'port',
      'timeoutMs',
      'forwardAuthorization',
    ]);
  });

  it('counts the placements before parsing any', async () => {
    const placements = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`a${i}`, { in: 'bogus' }]));
    const res = await register({ target: target({ arguments: placements }) });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toEqual([{ path: 'target.arguments', message: 'must have at most 256 entries' }]);
  });

  it.each([
    [{ target: target(), endpoint: '/x' }, 'endpoint', 'not both'],
    [{ target: target(), host: 'h' }, 'host', 'not both'],
    [{}, 'endpoint', 'is required (or give "target"'],
    [{ target: target({ baseUrl: 'ftp://api.example.com' }) }, 'target.baseUrl', 'https:// or http://'],
    [{ target: target({ baseUrl: 'https://user:pw@api.example.com' }) }, 'target.baseUrl', 'password'],
    [{ target: target({ baseUrl: 'https://api.example.com/?key=1' }) }, 'target.baseUrl', 'query'],
    [{ target: target({ method: 'TRACE' }) }, 'target.method', ''],
    [{ target: target({ path: 'pets' }) }, 'target.path', 'absolute path'],
    [{ target: target({ path: '/pets/{pet.id}/{x' }) }, 'target.path', 'placeholders'],
    [{ target: target({ path: '/pets?x=1' }) }, 'target.path', 'query'],
    [{ target: target({ path: '/pets/{petId}' }), parameters: {} }, 'target.path', 'required argument "petId"'],
    [
      { target: target({ path: '/pets/{petId}' }), parameters: { petId: { type: 'string', required: false } } },
      'target.path',
      'required argument "petId"',
    ],
    [{ target: target({ arguments: { q: { in: 'body' } } }) }, 'target.arguments.q.in', 'a GET has no body'],
    [{ target: target({ arguments: { q: { in: 'path' } } }) }, 'target.arguments.q.in', 'no placeholder {q}'],
    [{ target: target({ arguments: { q: { in: 'header', style: 'form' } } }) }, 'target.arguments.q.style', 'query arguments only'],
    [
      { target: target({ arguments: { q: { in: 'header', name: 'Authorization' } } }) },
      'target.arguments.q.name',
      'sets the Authorization header',
    ],
    [{ target: target({ arguments: { q: { in: 'header', name: 'bad header' } } }) }, 'target.arguments.q.name', 'not a valid header name'],
    [
      { target: target({ arguments: { q: { in: 'query', style: 'deepObject', explode: false } } }) },
      'target.arguments.q.explode',
      'always exploded',
    ],
    [
      { target: target({ arguments: { q: { in: 'query', style: 'spaceDelimited', explode: true } } }) },
      'target.arguments.q.explode',
      'never exploded',
    ],
    [{ target: target({ arguments: { q: { in: 'query', style: 'matrix' } } }) }, 'target.arguments.q.style', ''],
    [
      { target: target({ arguments: { a: { in: 'query', name: 'k' }, b: { in: 'query', name: 'k' } } }) },
      'target.arguments.b.name',
      'same query name "k"',
    ],
  ])('refuses %j with a 400 naming %s', async (payload, path, message) => {
    const res = await register(payload);
    expect(res.statusCode, res.body).toBe(400);
    const errors = res.json().errors as { path: string; message: string }[];
    const error = errors.find((e) => e.path === path);
    expect(error, JSON.stringify(errors)).toBeDefined();
    expect(error?.message).toContain(message);
  });
});
