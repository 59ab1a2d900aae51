/**
 * An authorization server that does token exchange (RFC 8693): oidc-provider, which has no such
 * grant of its own, with the grant registered through `provider.registerGrantType`, so client
 * authentication and the token endpoint are the provider's. Each exchanged token is
 * `exchanged-<n>-for-<who>`, where `who` is what `subjectOf` says of the subject token.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';

export interface TokenExchangeServer {
  tokenUrl: string;
  /** Every exchange asked for: the authenticated client and the parameters it sent. */
  received: Array<{ clientId: string; params: Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function startTokenExchangeServer(
  client: { clientId: string; clientSecret: string },
  subjectOf: (subjectToken: string) => string = (token) => token,
): Promise<TokenExchangeServer> {
  const Provider = (await import('oidc-provider')).default;
  let handler: Parameters<typeof createServer>[1] = (_q, s) => s.end();
  const server = createServer((q, s) => handler?.(q, s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        grant_types: [TOKEN_EXCHANGE_GRANT],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    features: { devInteractions: { enabled: false } },
  });
  const received: TokenExchangeServer['received'] = [];
  provider.registerGrantType(
    TOKEN_EXCHANGE_GRANT,
    (ctx) => {
      const params = ctx.oidc.params as Record<string, unknown>;
      received.push({ clientId: String(ctx.oidc.client?.clientId), params: { ...params } });
      ctx.body = {
        access_token: `exchanged-${received.length}-for-${subjectOf(String(params.subject_token))}`,
        token_type: 'Bearer',
        expires_in: 300,
        issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      };
    },
    ['subject_token', 'subject_token_type', 'audience', 'resource', 'scope', 'requested_token_type'],
  );
  handler = provider.callback();
  return {
    tokenUrl: `${issuer}/token`,
    received,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}
