import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { resolveCaller } from '../../auth/caller.js';
import { ANONYMOUS, requireScope, type Caller } from '../../model/caller.js';
import { resolveTokenKeys, verifierFor } from '../../auth/keys.js';
import type { Config } from '../../config.js';

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
        'dev mode: no JWT_SECRET, JWT_PUBLIC_KEY, JWKS_URL or JWT_ISSUER set, tokens are signed with a local secret; use `tool-registry token` to mint them',
      );
    }
    const { verify, jwks } = verifierFor(config, keys, (err, url) =>
      app.log.warn({ url, reason: err instanceof Error ? err.message : String(err) }, 'fetching signing keys failed'),
    );
    jwks?.warm();


    // Fastify forbids object defaults on request decorators; every request gets one in the hook.
    app.decorateRequest('caller', null as never);
    app.decorateRequest('authError', null);
    // Callback-style hooks: on the hot read path (anonymous discovery, 304s) an async hook's
    // promise per request was measurable (bench: 304 revalidation at 64-70% of the ceiling).
    app.addHook('onRequest', (request, _reply, done) => {
      request.caller = ANONYMOUS;
      const queryToken = hasQueryToken(request);
      if (request.routeOptions.config.auth === false || (request.headers.authorization === undefined && !queryToken)) {
        done();
        return;
      }
      resolveCaller({ authorization: request.headers.authorization, queryToken }, verify, config.jwt.roleScopes).then(
        (caller) => {
          request.caller = caller;
          done();
        },
        (err: unknown) => {
          request.authError = err;
          done();
        },
      );
    });
    app.addHook('preParsing', (request, _reply, payload, done) => {
      try {
        if (request.authError !== null) throw request.authError;
        const admin = request.routeOptions.config.admin;
        if (admin !== undefined) requireScope(request.caller, [config.adminScope], admin);
        done(null, payload);
      } catch (err) {
        done(err as Error);
      }
    });
  },
  { name: 'auth' },
);

function hasQueryToken(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  return query !== undefined && query !== null && Object.hasOwn(query, 'access_token');
}
