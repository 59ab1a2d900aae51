import fastifyJwt from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { bearerToken, failureCode, refuseRepeatedAuthorization, tokenRefused } from '../../auth/caller.js';
import type { JwksKeySource, KeyCallback, KeyedToken } from '../../auth/jwks.js';
import { keySourceFor, resolveTokenKeys } from '../../auth/keys.js';
import { VerifiedTokens } from '../../auth/verified-tokens.js';
import { tokenRules, VERIFIED_TOKEN_CACHE_SIZE, type VerifiedToken } from '../../auth/verifier.js';
import { ANONYMOUS, requireScope, type Caller } from '../../model/caller.js';
import { RegistryError } from '../../model/errors.js';
import type { Config } from '../../config.js';
import { routeConfig } from './route-config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The authorization server's key set, when tokens are verified with one (its fetches are metrics). */
    jwks: JwksKeySource | null;
    /**
     * Verifies a token that did not come in a request's Authorization header by the same rules;
     * rejects with the refusal a request would get. Announcements used it until issue 29 (they
     * are signed now, src/announce/verify.ts): only tests call it today.
     */
    verifyToken(token: string): Promise<Caller>;
  }
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

/**
 * Refusals the cache does not hold: a token not valid yet (time alone makes it valid), and one
 * signed with a key the registry does not know (yet: a rotation brings new kids, which only a
 * lookup of the kid, at most one fetch per cooldown, finds; and a lookup costs no signature
 * check). A bad signature is held, the forged-token flood it stands for being the costly one: a
 * key replaced under the same kid within a cooldown is followed up to a few seconds later.
 */
const UNDONE_BY_TIME_OR_FETCH = new Set<unknown>(['FAST_JWT_INACTIVE', 'TR_JWT_UNKNOWN_KEY']);

export interface AuthPluginOptions {
  config: Config;
}

/**
 * Verifies bearer tokens with @fastify/jwt (options from src/auth/verifier.ts; keys static, or
 * from a JWKS through src/auth/jwks.ts) and sets `request.caller` before every route that looks
 * at credentials. Identification (onRequest) never throws, so that rate limiting can count a
 * caller with a bad token too; enforcement runs at preParsing, after rate limiting and before
 * any body is read, so unauthenticated callers cannot make the server read large bodies.
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
    const jwks = keySourceFor(config, keys, (err, url) =>
      app.log.warn({ url, reason: err instanceof Error ? err.message : String(err) }, 'fetching signing keys failed'),
    );
    app.decorate('jwks', jwks ?? null);
    if (jwks) {
      jwks.start();
      app.addHook('onClose', (_app, done) => {
        jwks.close();
        done();
      });
    }

    const { acceptedTyp } = config.jwt;
    const rules = tokenRules(config, keys);

    await app.register(fastifyJwt, {
      // Verify only (no private key, so no signer). A static key is checked against the allowed
      // algorithms here, at startup. A JWKS key is picked per token from its header, by a key
      // function as fast-jwt calls it, `(token, done)`: app.jwt.verify hands it to fast-jwt as it
      // is (request.jwtVerify, which would call it `(request, token, done)`, is not used). fast-jwt
      // then imports the key's PEM on every verification (createPublicKey: about 200 us, against
      // 30-40 us for the RS256 check itself, Node 20 on a busy 2-core machine; a first-seen
      // token's GET / took 1.1-1.3 ms, against 0.86-0.88 ms with @fastify/jwt's verifier per key
      // behind request.jwtVerify); only a header the cache below does not hold pays it.
      secret: { public: jwks ? (token: KeyedToken, done: KeyCallback) => jwks.keyFor(token.header, done) : keys.key },
      verify: rules.verify,
      // The request property @fastify/jwt decorates (null until onRequest sets it).
      decoratorName: 'caller',
    });

    /**
     * @fastify/jwt's verifier, then the registry's own checks (rules.admit). app.jwt.verify
     * without options is the verifier @fastify/jwt built at registration, and it passes on
     * fast-jwt's errors as they are; request.jwtVerify would build the same verifier but reports
     * a bad signature, a refused claim value and a missing claim alike
     * (FST_JWT_AUTHORIZATION_TOKEN_INVALID), so that the challenge could not say which.
     */
    const verify = async (token: string, retried = false): Promise<Caller> => {
      const version = jwks?.version ?? 0;
      let verified: VerifiedToken;
      try {
        // At once with a static key; a promise with a key function (its type says only the former).
        verified = await app.jwt.verify<VerifiedToken | Promise<VerifiedToken>>(token);
      } catch (err) {
        // A bad signature under a known kid: the server may have re-keyed under it. Verified
        // again once, and only when the refetch (once per cooldown) brought another key set.
        if (!retried && jwks && failureCode(err) === 'FAST_JWT_INVALID_SIGNATURE' && (await jwks.refreshAfterBadSignature(version)))
          return verify(token, true);
        throw err;
      }
      return rules.admit(verified);
    };

    const tokens = new VerifiedTokens(VERIFIED_TOKEN_CACHE_SIZE, config.jwt.clockToleranceS * 1000);
    let keysVersion = jwks?.version ?? 0;
    /** What the cache holds for a header, unless the key set has changed since (a key may be retired, or one may have come). */
    const remembered = (header: string): Caller | RegistryError | undefined => {
      if (jwks && jwks.version !== keysVersion) {
        keysVersion = jwks.version;
        tokens.clear();
      }
      const now = Date.now();
      return tokens.get(header, now) ?? tokens.refused(header, now);
    };
    /** Not when the keys changed during a verification: the next lookup starts the cache afresh. */
    const keysUnchanged = () => jwks === undefined || jwks.version === keysVersion;

    /**
     * The one way an Authorization header becomes a Caller, for requests (/mcp among them) and
     * announcements alike: the header's token (bearerToken's cheap refusals first), verified,
     * and the outcome, the Caller or the refusal, remembered under the header. `done` is called
     * at once for a header the cache holds, so that the hot path (a token seen before) makes no
     * promise: on the read path an async hook's promise per request was measurable (bench: 304
     * revalidation at 64-70% of the ceiling).
     */
    const authenticate = (authorization: string, done: (outcome: Caller | RegistryError) => void): void => {
      const known = remembered(authorization);
      if (known !== undefined) {
        done(known);
        return;
      }
      let token: string;
      try {
        token = bearerToken(authorization, false);
      } catch (err) {
        done(tokenRefused(err, acceptedTyp));
        return;
      }
      verify(token).then(
        (caller) => {
          if (keysUnchanged()) tokens.set(authorization, caller, Date.now());
          done(caller);
        },
        (err: unknown) => {
          const refusal = tokenRefused(err, acceptedTyp);
          if (keysUnchanged() && !UNDONE_BY_TIME_OR_FETCH.has(failureCode(err))) tokens.refuse(authorization, refusal, Date.now());
          done(refusal);
        },
      );
    };

    // As a request's Authorization header would carry the token: the same refusals, the same cache.
    app.decorate(
      'verifyToken',
      (token: string) =>
        new Promise<Caller>((resolve, reject) =>
          authenticate(`Bearer ${token}`, (outcome) => (outcome instanceof RegistryError ? reject(outcome) : resolve(outcome))),
        ),
    );

    app.decorateRequest('authError', null);
    // A callback-style hook, for the same reason as authenticate's `done`.
    app.addHook('onRequest', (request, _reply, done) => {
      request.caller = ANONYMOUS;
      const header = request.headers.authorization;
      const checked = routeConfig(request).auth !== false;
      const queryToken = checked && hasQueryToken(request);
      if (!checked || (header === undefined && !queryToken)) {
        done();
        return;
      }
      if (header !== undefined) {
        try {
          refuseRepeatedAuthorization(request.raw.rawHeaders);
        } catch (err) {
          request.authError = err;
          done();
          return;
        }
      }
      if (header === undefined || queryToken) {
        // A token in the query string, alone or beside the header, is never used: bearerToken
        // refuses both (RFC 6750 section 2.3, and section 2: one method per request).
        try {
          bearerToken(header, queryToken);
        } catch (err) {
          request.authError = err;
        }
        done();
        return;
      }
      authenticate(header, (outcome) => {
        if (outcome instanceof RegistryError) request.authError = outcome;
        else request.caller = outcome;
        done();
      });
    });
    app.addHook('preParsing', (request, _reply, payload, done) => {
      try {
        if (request.authError !== null) throw request.authError;
        const admin = routeConfig(request).admin;
        if (admin !== undefined) requireScope(request.caller, [config.adminScope], admin);
        done(null, payload);
      } catch (err) {
        done(err as Error);
      }
    });
  },
  { name: 'auth', dependencies: ['route-config'] },
);

function hasQueryToken(request: FastifyRequest): boolean {
  const query = request.query as Record<string, unknown> | undefined;
  return query !== undefined && query !== null && Object.hasOwn(query, 'access_token');
}
