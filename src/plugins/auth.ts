import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { ANONYMOUS, requireScope, resolveCaller, type Caller } from '../auth/caller.js';
import { resolveTokenKeys, verifierFor } from '../auth/keys.js';
import type { Config } from '../config.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is asking: anonymous, or a verified token's subject and scopes. */
    caller: Caller;
  }
  interface FastifyInstance {
    /** Throws 401/403 unless the request's token carries the admin scope. */
    requireAdmin(request: FastifyRequest, what: string): void;
  }
  interface FastifyContextConfig {
    /** Set false on routes that ignore credentials (health checks). */
    auth?: boolean;
  }
}

export interface AuthPluginOptions {
  config: Config;
}

/**
 * Verifies bearer tokens (src/auth/verifier.ts) and sets `request.caller` before every route
 * that looks at credentials.
 */
export default fp<AuthPluginOptions>(
  async (app, { config }) => {
    const keys = resolveTokenKeys(config);
    if (keys.mode === 'dev') {
      app.log.warn(
        { secretFile: keys.devSecretPath ?? '(in memory)' },
        'dev mode: no JWT_SECRET or JWT_PUBLIC_KEY set, tokens are signed with a local secret; use `tool-registry token` to mint them',
      );
    }
    const { verify, jwks } = verifierFor(config, keys, (err, url) =>
      app.log.warn({ url, reason: err instanceof Error ? err.message : String(err) }, 'fetching signing keys failed'),
    );
    jwks?.warm();


    // Fastify forbids object defaults on request decorators; every request gets one in the hook.
    app.decorateRequest('caller', null as never);
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.config.auth === false) {
        request.caller = ANONYMOUS;
        return;
      }
      request.caller = await resolveCaller(
        { authorization: request.headers.authorization, queryToken: hasQueryToken(request) },
        verify,
        config.jwt.roleScopes,
      );
    });
    app.decorate('requireAdmin', (request: FastifyRequest, what: string) => requireScope(request.caller, [config.adminScope], what));
  },
  { name: 'auth' },
);

function hasQueryToken(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  return query !== undefined && query !== null && Object.hasOwn(query, 'access_token');
}
