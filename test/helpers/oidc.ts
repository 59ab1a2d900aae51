/**
 * A real OAuth 2.0 authorization server for tests: `oidc-provider` (v9) running in-process on
 * 127.0.0.1 with an ephemeral port. It issues RS256 `at+jwt` access tokens through the
 * client-credentials grant (RFC 6749 §4.4) with resource indicators (RFC 8707), and publishes
 * its signing keys at its discovery document's `jwks_uri` (`<issuer>/jwks`).
 *
 * Tokens it issues (observed with oidc-provider 9.13):
 *   header  { alg: 'RS256', typ: 'at+jwt', kid }
 *   payload { jti, sub: <client_id>, iat, exp, scope, client_id, iss: <issuer>, aud: <resource> }
 * `sub` is the client id (there is no end user in the client-credentials grant). `scope` holds
 * only the granted scopes. Requesting a known scope that is not in the client's allow list is
 * refused outright (400 invalid_scope, `token()` throws); requested scopes the resource server
 * does not serve (unknown ones, e.g. 'made:up') are silently dropped. With no `scope` parameter
 * the token carries no `scope` claim.
 *
 * Key rotation: oidc-provider fixes its keystore at construction, so `rotateKey()` builds a new
 * Provider on the same HTTP server and issuer with a freshly generated key placed first (new
 * tokens are signed with it), then swaps the request handler — a key rollover at the AS.
 * By default the previous keys stay published in the JWKS (tokens already issued remain
 * verifiable); `rotateKey({ retireOld: true })` publishes only the new key.
 * State other than keys (the in-memory adapter's contents) does not survive a rotation; nothing
 * in the client-credentials flow with JWT access tokens depends on it.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ClientMetadata, Configuration, JWK, default as ProviderType } from 'oidc-provider';

export const DEFAULT_RESOURCE = 'https://registry.test';

export interface AuthorizationServerClient {
  clientId: string;
  /** Defaults to `<clientId>-secret`. */
  clientSecret?: string;
  /** Scopes this client may be granted. */
  scopes: string[];
}

export interface AuthorizationServerOptions {
  clients: AuthorizationServerClient[];
  /** Audience of tokens requested without a `resource` parameter. Default https://registry.test. */
  resource?: string;
  /**
   * The scopes the resource server(s) serve — what a token's `scope` may contain.
   * Default: the union of the clients' scopes.
   */
  scopes?: string[];
  /** Access-token lifetime in seconds. Default 3600. */
  accessTokenTTL?: number;
}

export interface TokenResponse {
  status: number;
  body: Record<string, unknown>;
}

export interface AuthorizationServer {
  /** `http://127.0.0.1:<port>`, the `iss` of every token. */
  issuer: string;
  /** From the discovery document: `<issuer>/jwks`. */
  jwksUri: string;
  tokenEndpoint: string;
  /** The default audience (`options.resource`). */
  resource: string;
  /** The kid new tokens are signed with. */
  readonly currentKid: string;
  /** Client-credentials grant; returns the access token or throws with the AS's error. */
  token(clientId: string, scopes: string[], resource?: string): Promise<string>;
  /** The raw token-endpoint answer, for tests of refused grants. */
  tokenResponse(clientId: string, scopes: string[], resource?: string): Promise<TokenResponse>;
  /** New tokens get signed with a new key (new kid), published in the JWKS. Old keys stay published unless retireOld. */
  rotateKey(options?: { retireOld?: boolean }): Promise<void>;
  close(): Promise<void>;
}

type ProviderConstructor = typeof ProviderType;

/**
 * Runs fn with oidc-provider's console notices ("oidc-provider WARNING/NOTICE: ...") dropped.
 * Synchronous so that overlapping calls cannot leave the console patched.
 */
function quietly<T>(fn: () => T): T {
  const { warn, info } = console;
  const filter =
    (original: (...args: unknown[]) => void) =>
    (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider ')) return;
      original(...args);
    };
  console.warn = filter(warn);
  console.info = filter(info);
  try {
    return fn();
  } finally {
    console.warn = warn;
    console.info = info;
  }
}

let providerClass: Promise<ProviderConstructor> | undefined;
/**
 * Imported lazily, with notices dropped until the import settles: the module warns
 * "Unsupported runtime" on Node 20 when it is evaluated. Only the first call imports.
 */
function loadProvider(): Promise<ProviderConstructor> {
  providerClass ??= (async () => {
    const { warn } = console;
    console.warn = (...args: unknown[]) => {
      if (!(typeof args[0] === 'string' && args[0].startsWith('oidc-provider '))) warn(...args);
    };
    try {
      return (await import('oidc-provider')).default;
    } finally {
      console.warn = warn;
    }
  })();
  return providerClass;
}

function generateSigningKey(): JWK {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' } as JWK;
}

export async function startAuthorizationServer(options: AuthorizationServerOptions): Promise<AuthorizationServer> {
  const Provider = await loadProvider();
  const resource = options.resource ?? DEFAULT_RESOURCE;
  const clientScopes = [...new Set(options.clients.flatMap((c) => c.scopes))];
  const allScopes = options.scopes ?? clientScopes;
  const ttl = options.accessTokenTTL ?? 3600;
  const secrets = new Map(options.clients.map((c) => [c.clientId, c.clientSecret ?? `${c.clientId}-secret`]));
  const clients: ClientMetadata[] = options.clients.map((c) => ({
    client_id: c.clientId,
    client_secret: secrets.get(c.clientId),
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_post',
    scope: c.scopes.join(' '),
  }));

  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
    res.statusCode = 503;
    res.end();
  };
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const configuration = (keys: JWK[]): Configuration => ({
    clients,
    jwks: { keys },
    // Scopes known to the provider are checked against each client's allow list (invalid_scope);
    // unknown ones skip that check and are then dropped unless the resource server serves them.
    scopes: [...new Set([...allScopes, ...clientScopes])],
    ttl: { ClientCredentials: ttl, AccessToken: ttl },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        // Any absolute-URI resource is accepted; its indicator becomes the audience.
        getResourceServerInfo: (_ctx, resourceIndicator) => ({
          scope: allScopes.join(' '),
          audience: resourceIndicator,
          accessTokenTTL: ttl,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
        useGrantedResource: () => true,
      },
    },
  });

  let keys = [generateSigningKey()];
  // Construction warns (in-memory adapter) and is synchronous; it is the only time keys are read.
  const install = () => {
    const provider = quietly(() => new Provider(issuer, configuration(keys)));
    provider.on('server_error', (_ctx, error) => {
      console.error('oidc-provider server_error', error);
    });
    handler = provider.callback();
  };
  install();

  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  const jwksUri = String(discovery.jwks_uri);
  const tokenEndpoint = String(discovery.token_endpoint);

  const tokenResponse = async (clientId: string, scopes: string[], requested?: string): Promise<TokenResponse> => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: secrets.get(clientId) ?? '' });
    if (scopes.length > 0) form.set('scope', scopes.join(' '));
    form.set('resource', requested ?? resource);
    const response = await fetch(tokenEndpoint, { method: 'POST', body: form });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  return {
    issuer,
    jwksUri,
    tokenEndpoint,
    resource,
    get currentKid() {
      return String(keys[0]?.kid);
    },
    tokenResponse,
    async token(clientId, scopes, requested) {
      const { status, body } = await tokenResponse(clientId, scopes, requested);
      if (status !== 200 || typeof body.access_token !== 'string') {
        throw new Error(`token request for ${clientId} failed: ${status} ${JSON.stringify(body)}`);
      }
      return body.access_token;
    },
    async rotateKey({ retireOld = false } = {}) {
      // The first key of the keystore signs (keys score equally: all RS256/sig), so the new one goes first.
      keys = retireOld ? [generateSigningKey()] : [generateSigningKey(), ...keys];
      install();
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
