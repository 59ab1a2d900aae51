/**
 * Shared pieces of the OAuth resource-server conformance suite (test/conformance/*.test.ts):
 * the app under test in JWKS mode, a parser for `WWW-Authenticate`, hand-made tokens for attack
 * cases, and small HTTP servers of our own (a JWKS we control and count, and one that never
 * answers). Happy paths use real tokens from test/helpers/oidc.ts; the crafted tokens here are
 * for attacks and for claims the real provider cannot be made to issue.
 */
import { createHmac, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { SettingName } from '../../src/config/settings.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/oidc.js';

/** This registry's resource identifier in every conformance app (RFC 8707 / RFC 9728). */
export const RESOURCE = 'https://registry.test';
/** RFC 9728 section 3.1: where the metadata of RESOURCE lives. */
export const METADATA_URL = `${RESOURCE}/.well-known/oauth-protected-resource`;
export const ADMIN_SCOPE = 'registry:write';
/** The issuer of tokens crafted with our own keys (a JWKS server we run). */
const CRAFTED_ISSUER = 'https://issuer.crafted.test';

export type Settings = Partial<Record<SettingName, string>>;

/** The app in JWKS mode against a real authorization server: keys found through the issuer's metadata. */
export function appForProvider(as: AuthorizationServer, settings: Settings = {}): Promise<TestApp> {
  return createTestApp({ JWT_SECRET: '', JWT_ISSUER: as.issuer, RESOURCE_URL: RESOURCE, ...settings });
}

/** The app in JWKS mode against a key server of our own (JWKS_URL), trusting CRAFTED_ISSUER. */
export function appForKeyServer(keys: { jwksUrl: string }, settings: Settings = {}): Promise<TestApp> {
  return createTestApp({ JWT_SECRET: '', JWKS_URL: keys.jwksUrl, JWT_ISSUER: CRAFTED_ISSUER, RESOURCE_URL: RESOURCE, ...settings });
}

// ---------------------------------------------------------------------------------------------
// WWW-Authenticate (RFC 9110 section 11.6.1)

export interface Challenge {
  scheme: string;
  params: Record<string, string>;
  /** Parameter names that occurred more than once in this challenge. */
  repeated: string[];
}

/** Parses a WWW-Authenticate value into its challenges (auth-param form only; no token68). */
function parseChallenges(header: string): Challenge[] {
  const challenges: Challenge[] = [];
  let i = 0;
  const skip = (chars: RegExp) => {
    while (i < header.length && chars.test(header[i] ?? '')) i++;
  };
  const readToken = () => {
    const start = i;
    while (i < header.length && /[!#$%&'*+\-.^_`|~0-9A-Za-z]/.test(header[i] ?? '')) i++;
    return header.slice(start, i);
  };
  while (i < header.length) {
    skip(/[\s,]/);
    if (i >= header.length) break;
    const name = readToken();
    if (name === '') throw new Error(`unparsable WWW-Authenticate at ${i}: ${header}`);
    skip(/[ \t]/);
    if (header[i] === '=') {
      i++;
      skip(/[ \t]/);
      let value = '';
      if (header[i] === '"') {
        i++;
        while (i < header.length && header[i] !== '"') {
          if (header[i] === '\\') i++;
          value += header[i] ?? '';
          i++;
        }
        if (header[i] !== '"') throw new Error(`unterminated quoted string in WWW-Authenticate: ${header}`);
        i++;
      } else {
        value = readToken();
      }
      const current = challenges.at(-1);
      if (!current) throw new Error(`auth-param before any scheme in WWW-Authenticate: ${header}`);
      const key = name.toLowerCase();
      if (Object.hasOwn(current.params, key)) current.repeated.push(key);
      current.params[key] = value;
    } else {
      challenges.push({ scheme: name, params: {}, repeated: [] });
    }
  }
  return challenges;
}

export interface ExpectedChallenge {
  status: 400 | 401 | 403;
  /** The `error` parameter, or null for "no error code" (a 401 to a request without credentials). */
  error: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | null;
  /** Exactly these scopes (any order) in the one `scope` parameter. */
  scope?: string[];
}

/**
 * Checks a refusal against RFC 6750 / RFC 9728: the status, one Bearer challenge with a realm and
 * resource_metadata, the error code (or none), an error_description with every error, and a
 * problem+json body. Returns the challenge for further checks.
 */
export function expectChallenge(res: LightMyRequestResponse, expected: ExpectedChallenge): Challenge {
  expect(res.statusCode, res.body).toBe(expected.status);
  const header = res.headers['www-authenticate'];
  expect(typeof header, 'WWW-Authenticate must be present once').toBe('string');
  const challenges = parseChallenges(String(header));
  expect(challenges, String(header)).toHaveLength(1);
  const challenge = challenges[0] as Challenge;
  expect(challenge.scheme.toLowerCase()).toBe('bearer');
  expect(challenge.repeated, `repeated parameters in ${String(header)}`).toEqual([]);
  expect(challenge.params['realm'], 'realm').toMatch(/\S/);
  expect(challenge.params['resource_metadata'], 'resource_metadata').toBe(METADATA_URL);
  if (expected.error === null) {
    expect(challenge.params, 'no error code without credentials').not.toHaveProperty('error');
    expect(challenge.params).not.toHaveProperty('error_description');
  } else {
    expect(challenge.params['error']).toBe(expected.error);
    expect(challenge.params['error_description'], 'error_description').toMatch(/\S/);
  }
  if (expected.scope !== undefined) {
    expect(challenge.params['scope']?.split(' ').sort(), 'scope').toEqual([...expected.scope].sort());
  }
  expect(String(res.headers['content-type'])).toContain('application/problem+json');
  expect(res.json()).toMatchObject({ status: expected.status });
  return challenge;
}

// ---------------------------------------------------------------------------------------------
// Hand-made tokens (attack cases and claims a real provider will not issue)

export const b64json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
export const nowS = () => Math.floor(Date.now() / 1000);

export function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown> } {
  const [header = '', payload = ''] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as Record<string, unknown>,
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>,
  };
}

/** An RS256 JWS over exactly these header and payload objects. */
export function rs256(header: Record<string, unknown>, payload: Record<string, unknown>, key: KeyObject): string {
  const input = `${b64json(header)}.${b64json(payload)}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), key).toString('base64url')}`;
}

/** An HS256 JWS with this key, e.g. a public key's PEM (algorithm confusion). */
export function hs256(header: Record<string, unknown>, payload: Record<string, unknown>, key: string | Buffer): string {
  const input = `${b64json(header)}.${b64json(payload)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}

/** Claims a crafted token needs to be accepted by appForKeyServer, plus overrides. */
export function craftedClaims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const now = nowS();
  return { iss: CRAFTED_ISSUER, aud: RESOURCE, sub: 'crafted-agent', iat: now, exp: now + 600, jti: randomUUID(), ...overrides };
}

// ---------------------------------------------------------------------------------------------
// Servers of our own

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function shut(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
}

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  jwk: Record<string, unknown>;
}

function newSigningKey(kid: string = randomUUID()): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

export interface KeyServer {
  url: string;
  jwksUrl: string;
  /** The kid tokens are signed with (the newest key). */
  readonly kid: string;
  /** Requests the JWKS path has received. */
  readonly requests: number;
  /** While true, the JWKS path answers 503 (the key endpoint is down). */
  down: boolean;
  /** RS256 token signed with the current key; header defaults to { alg: RS256, typ: at+jwt, kid }. */
  sign(payload: Record<string, unknown>, header?: Record<string, unknown>): string;
  /** Adds a new key, published next to the old ones, and signs with it from now on. */
  rotate(): void;
  /** Replaces the current key with a new one under the same kid (a re-key), and signs with it from now on. */
  rekey(): void;
  close(): Promise<void>;
}

/** A JWKS endpoint with a key of our own, counting its requests. */
export async function startKeyServer(): Promise<KeyServer> {
  let keys = [newSigningKey()];
  let requests = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/jwks') {
      requests++;
      if (handle.down) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: keys.map((k) => k.jwk) }));
      return;
    }
    res.writeHead(404).end();
  });
  const url = await listen(server);
  const current = () => keys[0] as SigningKey;
  const handle: KeyServer = {
    down: false,
    url,
    jwksUrl: `${url}/jwks`,
    get kid() {
      return current().kid;
    },
    get requests() {
      return requests;
    },
    sign(payload, header = {}) {
      return rs256({ alg: 'RS256', typ: 'at+jwt', kid: current().kid, ...header }, payload, current().privateKey);
    },
    rotate() {
      keys = [newSigningKey(), ...keys];
    },
    rekey() {
      keys = [newSigningKey(current().kid), ...keys.slice(1)];
    },
    close: () => shut(server),
  };
  return handle;
}

export interface HangingServer {
  url: string;
  /** Requests received (none is ever answered). */
  readonly requests: number;
  close(): Promise<void>;
}

/** An HTTP server that accepts every request and never answers it. */
export async function startHangingServer(): Promise<HangingServer> {
  let requests = 0;
  const server = createServer(() => {
    requests++; // and never respond
  });
  const url = await listen(server);
  return {
    url,
    get requests() {
      return requests;
    },
    close: () => shut(server),
  };
}

// ---------------------------------------------------------------------------------------------
// Requests

export function toolNames(res: LightMyRequestResponse): string[] {
  return (res.json() as { tools: { name: string }[] }).tools.map((t) => t.name).sort();
}

export async function register(app: FastifyInstance, token: string | undefined, descriptor: Record<string, unknown>) {
  return app.inject({ method: 'POST', url: '/tools/register', headers: token === undefined ? {} : bearer(token), payload: descriptor });
}

/** Registers descriptors with an admin token, expecting each to be created. */
export async function seedTools(app: FastifyInstance, adminToken: string, descriptors: Record<string, unknown>[]): Promise<void> {
  for (const descriptor of descriptors) {
    const res = await register(app, adminToken, descriptor);
    expect(res.statusCode, res.body).toBe(201);
  }
}

/** After an attack: the server answers health checks and still serves a good token its view. */
export async function expectStillServing(app: FastifyInstance, goodToken: string, expectedTools?: string[]): Promise<void> {
  expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  const res = await app.inject({ method: 'GET', url: '/', headers: bearer(goodToken) });
  expect(res.statusCode, res.body).toBe(200);
  if (expectedTools) expect(toolNames(res)).toEqual([...expectedTools].sort());
}

/** Metadata as served, for checking challenges' scopes against scopes_supported. */
export async function protectedResourceMetadata(app: FastifyInstance): Promise<Record<string, unknown>> {
  const res = await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource' });
  expect(res.statusCode).toBe(200);
  return res.json() as Record<string, unknown>;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The setup several suites share: a real authorization server with an operator (admin scope)
 * and a calculator agent, a registry trusting it, seeded with calculator and weather_forecast.
 */
export async function operatorAndCalculatorAgent(): Promise<{ as: AuthorizationServer; t: TestApp; admin: string; calc: string }> {
  const as = await startAuthorizationServer({
    clients: [
      { clientId: 'operator', scopes: [ADMIN_SCOPE] },
      { clientId: 'calc-agent', scopes: ['calculator:use'] },
    ],
  });
  const t = await appForProvider(as);
  const admin = await as.token('operator', [ADMIN_SCOPE]);
  const calc = await as.token('calc-agent', ['calculator:use']);
  await seedTools(t.app, admin, [seed('calculator'), seed('weather_forecast')]);
  return { as, t, admin, calc };
}
