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
  interface FastifyRequest {
    /** Why the presented credentials were refused; thrown once rate limiting has counted the request. */
    authError: unknown;
  }
  interface FastifyContextConfig {
    /** Set false on routes that ignore credentials (health checks). */
    auth?: boolean;
    /** Routes that need the admin scope say what they do here (for the challenge's message). */
    admin?: string;
  }
}

export interface AuthPluginOptions {
  config: Config;
}

/**
 * Verifies bearer tokens (src/auth/verifier.ts) and sets `request.caller` before every route
 * that looks at credentials. Identification (onRequest) never throws, so that rate limiting can
 * count a caller with a bad token too; enforcement runs at preParsing, after rate limiting and
 * before any body is read, so unauthenticated callers cannot make the server read large bodies.
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
    app.decorateRequest('authError', null);
    app.addHook('onRequest', async (request) => {
      request.caller = ANONYMOUS;
      if (request.routeOptions.config.auth === false) return;
      try {
        request.caller = await resolveCaller(
          { authorization: request.headers.authorization, queryToken: hasQueryToken(request) },
          verify,
          config.jwt.roleScopes,
        );
      } catch (err) {
        request.authError = err;
      }
    });
    app.addHook('preParsing', async (request) => {
      if (request.authError !== null) throw request.authError;
      const admin = request.routeOptions.config.admin;
      if (admin !== undefined) requireScope(request.caller, [config.adminScope], admin);
    });
  },
  { name: 'auth' },
);

function hasQueryToken(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  return query !== undefined && query !== null && Object.hasOwn(query, 'access_token');
}
