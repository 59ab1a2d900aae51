import fastifyJwt, { type VerifyOptions } from '@fastify/jwt';
import type { FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { createVerifier } from 'fast-jwt';
import { bearerToken, callerFromClaims, identityClaimProblem, refuseRepeatedAuthorization, tokenRefused } from '../../auth/caller.js';
import type { JwksKeySource } from '../../auth/jwks.js';
import { keySourceFor, resolveTokenKeys } from '../../auth/keys.js';
import { VerifiedTokens } from '../../auth/verified-tokens.js';
import { tokenRules, typChecker, VERIFIED_TOKEN_CACHE_SIZE } from '../../auth/verifier.js';
import { ANONYMOUS, requireScope, type Caller } from '../../model/caller.js';
import type { Config } from '../../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The authorization server's key set, when tokens are verified with one (its fetches are metrics). */
    jwks: JwksKeySource | null;
    /**
     * Verifies a token that did not come in a request's Authorization header (a tool service's
     * announcement, src/announce/) by the same rules; rejects with the refusal a request would get.
     */
    verifyToken(token: string): Promise<Caller>;
  }
  interface FastifyRequest {
    /** Who is asking: anonymous, or a verified token's subject and scopes (@fastify/jwt's user). */
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

declare module '@fastify/jwt' {
  interface FastifyJWT {
    /** What formatUser makes of a verified token; decorated as `request.caller`. */
    user: Caller;
  }
}

export interface AuthPluginOptions {
  config: Config;
}

/** A token as @fastify/jwt decodes it and fast-jwt verifies it, both with `complete: true`. */
interface CompleteToken {
  header: { kid?: unknown; alg?: unknown; typ?: unknown };
  payload: Record<string, unknown>;
}

/**
 * @fastify/jwt reuses its verifiers, and so their verified-token caches, only when jwtVerify gets
 * no options at all: any options object, even `{}` or a callback in its place, builds a new
 * verifier per call.
 */
const PLUGIN_VERIFY_OPTIONS = undefined as unknown as Partial<VerifyOptions>;

/** What @fastify/jwt 10 calls a malformed token, a bad signature and a refused iss or aud alike. */
const FOLDED_INVALID = 'FST_JWT_AUTHORIZATION_TOKEN_INVALID';

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

    const { acceptedTyp, roleScopes } = config.jwt;
    const acceptsTyp = typChecker(acceptedTyp);
    const rules = tokenRules(config, keys);
    const extractToken = (request: FastifyRequest) => bearerToken(request.headers.authorization, hasQueryToken(request));
    // fast-jwt hands back the same object for a cached token, so its Caller is built once.
    const callers = new WeakMap<object, Caller>();
    const verified = new VerifiedTokens(VERIFIED_TOKEN_CACHE_SIZE, config.jwt.clockToleranceS * 1000);
    let keysVersion = jwks?.version ?? 0;
    /** A header verified before, unless the key set has changed since (a key may be retired). */
    const verifiedBefore = (header: string): Caller | undefined => {
      if (jwks && jwks.version !== keysVersion) {
        keysVersion = jwks.version;
        verified.clear();
      }
      return verified.get(header, Date.now());
    };

    await app.register(fastifyJwt, {
      // Verify only (no private key, so no signer). A static key is checked against the allowed
      // algorithms here, at startup; a JWKS key is picked per token from its header.
      secret: {
        public: jwks ? (_request, decoded, done) => jwks.keyFor((decoded as CompleteToken).header, done) : keys.key,
      },
      decode: { complete: true },
      // extractToken throws our own 400/401 refusals (RFC 6750), which @fastify/jwt passes on.
      verify: { ...rules.verify, extractToken },
      // The typ policy; and identity claims that are strings (RFC 7519's StringOrURI), refused
      // in their own words (a rejection reaches the hook as it is) rather than ignored.
      trusted: (_request, decoded) => {
        if (!acceptsTyp((decoded as CompleteToken).header.typ)) return false;
        const problem = identityClaimProblem((decoded as CompleteToken).payload);
        return problem === undefined ? true : Promise.reject(problem);
      },
      formatUser: (decoded) => {
        let caller = callers.get(decoded as object);
        if (!caller) callers.set(decoded as object, (caller = callerFromClaims((decoded as CompleteToken).payload, roleScopes)));
        return caller;
      },
      decoratorName: 'caller',
    });

    // @fastify/jwt 10 reports a malformed token, a bad signature and a refused iss or aud alike
    // (FST_JWT_AUTHORIZATION_TOKEN_INVALID, without fast-jwt's error); the challenge says which.
    // A token that does not decode is malformed; fast-jwt checks the signature before the
    // claims, so one whose claims pass failed on its signature; any other has its claims named
    // (its signature may be bad too: telling would need a second signature check, which a flood
    // of forged tokens must not get).
    const unfold = (request: FastifyRequest): string => {
      let payload;
      try {
        payload = (app.jwt.decode(extractToken(request)) as CompleteToken).payload;
      } catch {
        return 'FAST_JWT_MALFORMED';
      }
      if (rules.lacksClaim(payload)) return 'FAST_JWT_MISSING_REQUIRED_CLAIM';
      return rules.claimsPass(payload) ? 'FAST_JWT_INVALID_SIGNATURE' : 'FAST_JWT_INVALID_CLAIM_VALUE';
    };

    // The same rules and keys as requests, for tokens that come another way (announcements).
    const verifyElsewhere = createVerifier({
      ...rules.verify,
      cache: false,
      key: async (decoded: CompleteToken) =>
        jwks
          ? new Promise<string>((resolve, reject) => jwks.keyFor(decoded.header, (err, key) => (err ? reject(err) : resolve(String(key)))))
          : keys.key,
    });
    app.decorate('verifyToken', async (token: string): Promise<Caller> => {
      // The one verified-token cache, keyed as the request's header would carry the token.
      const cacheAs = `Bearer ${token}`;
      const known = verifiedBefore(cacheAs);
      if (known !== undefined) return known;
      let decoded: CompleteToken;
      try {
        const version = jwks?.version ?? 0;
        try {
          decoded = (await verifyElsewhere(token)) as CompleteToken;
        } catch (err) {
          // As for requests: a bad signature under a known kid refetches (once per cooldown).
          if (!(
            jwks &&
            (err as { code?: unknown }).code === 'FAST_JWT_INVALID_SIGNATURE' &&
            (await jwks.refreshAfterBadSignature(version))
          ))
            throw err;
          decoded = (await verifyElsewhere(token)) as CompleteToken;
        }
      } catch (err) {
        throw tokenRefused(err, acceptedTyp);
      }
      if (!acceptsTyp(decoded.header.typ))
        throw tokenRefused(Object.assign(new Error('untrusted typ'), { code: 'FST_JWT_AUTHORIZATION_TOKEN_UNTRUSTED' }), acceptedTyp);
      const problem = identityClaimProblem(decoded.payload);
      if (problem) throw problem;
      const caller = callerFromClaims(decoded.payload, roleScopes);
      // Not when the keys changed meanwhile, as for requests.
      if (jwks === undefined || jwks.version === keysVersion) verified.set(cacheAs, caller, Date.now());
      return caller;
    });

    app.decorateRequest('authError', null);
    /** @fastify/jwt's check; on success it sets request.caller (formatUser). */
    const verifyRequest = (request: FastifyRequest, cacheAs: string | undefined, retried: boolean, done: () => void) => {
      const version = jwks?.version ?? 0;
      request.jwtVerify(PLUGIN_VERIFY_OPTIONS, (err: (Error & { code?: unknown }) | null) => {
        if (!err) {
          // Not when the keys changed meanwhile: the next lookup starts the cache afresh.
          if (cacheAs !== undefined && (jwks === undefined || jwks.version === keysVersion))
            verified.set(cacheAs, request.caller, Date.now());
          done();
          return;
        }
        const code = err.code === FOLDED_INVALID ? unfold(request) : err.code;
        const refuse = () => {
          request.authError = tokenRefused(err, acceptedTyp, code);
          done();
        };
        if (jwks && !retried && code === 'FAST_JWT_INVALID_SIGNATURE') {
          // A bad signature under a known kid: the server may have re-keyed under it. Verified
          // again once, and only when the refetch (once per cooldown) brought another key set.
          jwks
            .refreshAfterBadSignature(version)
            .then((changed) => (changed ? verifyRequest(request, cacheAs, true, done) : refuse()), refuse);
          return;
        }
        refuse();
      });
    };
    // Callback-style hooks: on the hot read path (anonymous discovery, 304s) an async hook's
    // promise per request was measurable (bench: 304 revalidation at 64-70% of the ceiling).
    app.addHook('onRequest', (request, _reply, done) => {
      request.caller = ANONYMOUS;
      if (request.routeOptions.config.auth === false || (request.headers.authorization === undefined && !hasQueryToken(request))) {
        done();
        return;
      }
      const header = request.headers.authorization;
      if (header !== undefined) {
        try {
          refuseRepeatedAuthorization(request.raw.rawHeaders);
        } catch (err) {
          request.authError = err;
          done();
          return;
        }
      }
      // A token in the query as well is @fastify/jwt's to refuse; it is never taken from here.
      const cacheable = header !== undefined && !hasQueryToken(request);
      const known = cacheable ? verifiedBefore(header) : undefined;
      if (known !== undefined) {
        request.caller = known;
        done();
        return;
      }
      verifyRequest(request, cacheable ? header : undefined, false, done);
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
