/**
 * Issue 31: a registry that names no authorization server (dev mode, or keys without an issuer)
 * tells an OAuth client why it cannot sign in. The official SDK's client falls back to the
 * registry as its own authorization server and registers at POST /register, which used to fail
 * with "no route POST /register".
 */
import { auth, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../helpers/app.js';
import { mcpUrl } from './support.js';

/** A client that has no credentials yet and would send its user to sign in. */
const provider: OAuthClientProvider = {
  redirectUrl: 'http://127.0.0.1:1/callback',
  clientMetadata: { client_name: 'registry-test', redirect_uris: ['http://127.0.0.1:1/callback'] },
  clientInformation: () => undefined,
  saveClientInformation: () => undefined,
  tokens: () => undefined,
  saveTokens: () => undefined,
  redirectToAuthorization: () => undefined,
  saveCodeVerifier: () => undefined,
  codeVerifier: () => 'verifier',
  // The test registry's PUBLIC_URL is not the loopback port it listens on: take its resource as given.
  validateResourceURL: (_serverUrl, resource) => Promise.resolve(resource === undefined ? undefined : new URL(resource)),
};

describe('OAuth against a registry without an authorization server (issue 31)', () => {
  let t: TestApp;
  let url: URL;

  beforeAll(async () => {
    t = await createTestApp();
    url = await mcpUrl(t.app);
  });
  afterAll(() => t.close());

  it('gives the SDK client the reason and the way to get a token', async () => {
    await expect(auth(provider, { serverUrl: url })).rejects.toThrow(/names no authorization server.*tool-registry token/);
  });

  it('is absent where an authorization server is named', async () => {
    const named = await createTestApp({ AUTHORIZATION_SERVERS: 'https://auth.example' });
    try {
      const res = await named.app.inject({ method: 'POST', url: '/register', payload: {} });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ code: 'TR_ERR_ROUTE_NOT_FOUND' });
    } finally {
      await named.close();
    }
  });
});
