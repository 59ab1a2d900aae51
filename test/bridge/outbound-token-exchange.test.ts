/**
 * Token exchange (RFC 8693) against a real oidc-provider with the grant registered through
 * `provider.registerGrantType`: the wire parameters and client authentication are what the
 * provider received, and exchanged tokens are cached per caller token.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OutboundCredentials } from '../../src/bridge/outbound-credentials.js';
import { OutboundCredentialSchema } from '../../src/model/outbound-credential.js';
import { startTokenExchangeServer, TOKEN_EXCHANGE_GRANT as GRANT, type TokenExchangeServer } from '../helpers/token-exchange.js';

let as: TokenExchangeServer;
let tokenUrl = '';
let received: TokenExchangeServer['received'] = [];

beforeAll(async () => {
  as = await startTokenExchangeServer({ clientId: 'registry', clientSecret: 'te-secret' });
  tokenUrl = as.tokenUrl;
  received = as.received;
});
afterAll(() => as.close());

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
