/**
 * The registry's outbound credentials against a real authorization server (oidc-provider,
 * in-process on loopback): client credentials fetched once and shared, fetched again after
 * expiry; static forms placed where they belong; failures without secrets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundCredentials } from '../../src/bridge/outbound-credentials.js';
import { RegistryError } from '../../src/model/errors.js';
import { OutboundCredentialSchema } from '../../src/model/outbound-credential.js';
import type { OutboundFetch } from '../../src/bridge/outbound-fetch.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';

let as: AuthorizationServer;
beforeAll(async () => {
  as = await startAuthorizationServer({ clients: [{ clientId: 'registry', scopes: ['read'] }], accessTokenTTL: 120 });
});
afterAll(() => as.close());

/** The global fetch, counting calls: loopback is the test's, the address policy is not under test here. */
function counting(): { fetch: OutboundFetch; calls: () => number } {
  let n = 0;
  return { fetch: (input, init) => ((n += 1), fetch(input, init)), calls: () => n };
}

const cc = (secret = 'registry-secret') =>
  OutboundCredentialSchema.parse({
    clientCredentials: {
      tokenUrl: as.tokenEndpoint,
      clientId: 'registry',
      clientSecret: secret,
      scopes: ['read'],
      auth: 'client_secret_post',
    },
  });

describe('client credentials', () => {
  it('fetches one token for several calls, concurrent ones included, and a new one after expiry', async () => {
    let now = Date.now();
    const counter = counting();
    const creds = new OutboundCredentials({ fetch: counter.fetch, marginS: 30, now: () => now });
    const first = await Promise.all([1, 2, 3].map(() => creds.partsFor('tool:a', cc())));
    const again = await creds.partsFor('tool:a', cc());
    expect(counter.calls()).toBe(1);
    const auth = first[0]?.headers.authorization ?? '';
    expect(auth).toMatch(/^Bearer [\w-]+\.[\w-]+\.[\w-]+$/);
    for (const p of [...first, again]) expect(p.headers.authorization).toBe(auth);
    const payload = JSON.parse(Buffer.from(auth.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
    expect(payload.client_id).toBe('registry');
    expect(payload.scope).toBe('read');

    now += (120 - 30 - 1) * 1000; // still inside lifetime minus margin
    await creds.partsFor('tool:a', cc());
    expect(counter.calls()).toBe(1);
    now += 2000; // past it
    const refreshed = await creds.partsFor('tool:a', cc());
    expect(counter.calls()).toBe(2);
    expect(refreshed.headers.authorization).not.toBe(auth);
  });

  it('fails with TR_ERR_UPSTREAM_CREDENTIAL naming the status, never the secret', async () => {
    const creds = new OutboundCredentials({ fetch });
    const err = await creds.partsFor('tool:b', cc('wrong-secret-value')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RegistryError);
    expect((err as RegistryError).code).toBe('TR_ERR_UPSTREAM_CREDENTIAL');
    expect((err as RegistryError).message).toMatch(/401 \(invalid_client\)/);
    expect((err as RegistryError).message).not.toContain('wrong-secret-value');
  });

  it('bounds the answer size', async () => {
    const big: OutboundFetch = async () => new Response(JSON.stringify({ access_token: 'x'.repeat(100_000) }), { status: 200 });
    const err = await new OutboundCredentials({ fetch: big, maxAnswerBytes: 1024 }).partsFor('tool:c', cc()).catch((e: unknown) => e);
    expect((err as RegistryError).code).toBe('TR_ERR_UPSTREAM_CREDENTIAL');
  });
});

describe('static credentials', () => {
  it('places an api key in a header, query or cookie, bearer and basic in authorization', async () => {
    const creds = new OutboundCredentials({ fetch });
    const p = (x: unknown) => creds.partsFor('tool:s', OutboundCredentialSchema.parse(x));
    expect((await p({ apiKey: 'k1', in: 'header', name: 'X-API-Key' })).headers).toEqual({ 'X-API-Key': 'k1' });
    expect((await p({ apiKey: 'k1', in: 'query', name: 'api_key' })).query).toEqual({ api_key: 'k1' });
    expect((await p({ apiKey: 'k1', in: 'cookie', name: 'sid' })).cookies).toEqual({ sid: 'k1' });
    expect((await p({ bearer: 'b1' })).headers).toEqual({ authorization: 'Bearer b1' });
    expect((await p({ basic: { username: 'u', password: 'p' } })).headers).toEqual({ authorization: `Basic ${btoa('u:p')}` });
  });
});
