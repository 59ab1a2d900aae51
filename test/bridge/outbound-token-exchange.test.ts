/**
 * Token exchange (RFC 8693) against a real oidc-provider with the grant registered through
 * `provider.registerGrantType`: the wire parameters and client authentication are what the
 * provider received, and exchanged tokens are cached per caller token.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OutboundCredentials } from '../../src/bridge/outbound-credentials.js';
import { OutboundCredentialSchema } from '../../src/model/outbound-credential.js';

const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const received: Array<{ clientId: string; params: Record<string, unknown> }> = [];
let tokenUrl = '';
let close: () => Promise<void>;

beforeAll(async () => {
  const Provider = (await import('oidc-provider')).default;
  let handler: Parameters<typeof createServer>[1] = (_q, s) => s.end();
  const server = createServer((q, s) => handler?.(q, s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'registry',
        client_secret: 'te-secret',
        grant_types: [GRANT],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    features: { devInteractions: { enabled: false } },
  });
  let n = 0;
  provider.registerGrantType(
    GRANT,
    (ctx) => {
      const params = ctx.oidc.params as Record<string, unknown>;
      received.push({ clientId: String(ctx.oidc.client?.clientId), params: { ...params } });
      n += 1;
      ctx.body = {
        access_token: `exchanged-${n}-for-${String(params.subject_token)}`,
        token_type: 'Bearer',
        expires_in: 300,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      };
    },
    ['subject_token', 'subject_token_type', 'audience', 'resource', 'scope', 'requested_token_type'],
  );
  handler = provider.callback();
  tokenUrl = `${issuer}/token`;
  close = () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r())));
});
afterAll(() => close());

it('sends the RFC 8693 parameters with client authentication and caches per caller token', async () => {
  const credential = OutboundCredentialSchema.parse({
    tokenExchange: { tokenUrl, clientId: 'registry', clientSecret: 'te-secret', audience: 'billing-api' },
  });
  const creds = new OutboundCredentials({ fetch });
  const a1 = await creds.partsFor('tool:x', credential, 'caller-A');
  const a2 = await creds.partsFor('tool:x', credential, 'caller-A');
  const b = await creds.partsFor('tool:x', credential, 'caller-B');
  expect(a1.headers.authorization).toBe('Bearer exchanged-1-for-caller-A');
  expect(a2.headers.authorization).toBe(a1.headers.authorization);
  expect(b.headers.authorization).toBe('Bearer exchanged-2-for-caller-B');
  expect(received).toHaveLength(2);
  expect(received[0]).toMatchObject({
    clientId: 'registry',
    params: {
      grant_type: GRANT,
      subject_token: 'caller-A',
      subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      audience: 'billing-api',
    },
  });
});

it('refuses a wrong client secret (the provider authenticates the client) and a call without a caller token', async () => {
  const bad = OutboundCredentialSchema.parse({ tokenExchange: { tokenUrl, clientId: 'registry', clientSecret: 'nope-nope' } });
  const creds = new OutboundCredentials({ fetch });
  await expect(creds.partsFor('tool:y', bad, 'caller-A')).rejects.toMatchObject({
    code: 'TR_ERR_UPSTREAM_CREDENTIAL',
    message: expect.stringMatching(/401 \(invalid_client\)/),
  });
  await expect(creds.partsFor('tool:y', bad)).rejects.toMatchObject({ code: 'TR_ERR_UPSTREAM_CREDENTIAL' });
});
