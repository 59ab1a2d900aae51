/**
 * The one config schema: every variable's help, default and check, the one-line errors that
 * stop startup, and the key-mode rule decided once for auth and the CLI.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { ConfigSchema, defaultConfig, loadConfig, type Config, type KeyMode } from '../src/config.js';
import { autoViewCacheBytes, EnvSchema } from '../src/config/env.js';
import { usableMemoryBytes } from '../src/config/checks.js';
import { ConfigError } from '../src/config/errors.js';
import { flagOf, SETTING_NAMES, SETTINGS } from '../src/config/settings.js';
import { announcerKey, writeBindings } from './helpers/announcer-keys.js';
import { throwawayCa } from './helpers/throwaway-ca.js';

const SECRET = 'a-shared-secret-that-is-long-enough-0123456789';
const PEM = '-----BEGIN PUBLIC KEY-----\nnot parsed here\n-----END PUBLIC KEY-----';

function errorOf(env: NodeJS.ProcessEnv, flags = {}): string {
  try {
    loadConfig(env, flags);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('settings', () => {
  it('every setting has help, and every default passes its own check', () => {
    for (const name of SETTING_NAMES) expect(SETTINGS[name].help, name).not.toBe('');
    const config = defaultConfig();
    expect(config.port).toBe(8006);
    expect(config.databasePath).toBe('./data/registry.db');
    expect(config.jwt.acceptedTyp).toEqual(['at+jwt']);
    expect(config.rateLimit).toEqual({ max: 1200, writeMax: 300, windowS: 60 });
    expect(config.bridge.callTimeoutMs).toBe(30_000);
    expect(config.publicUrl.href).toBe('http://127.0.0.1:8006/');
    expect(config.resource).toBe('http://127.0.0.1:8006');
  });

  it('only the two secrets are marked secret', () => {
    expect(SETTING_NAMES.filter((name) => SETTINGS[name].secret)).toEqual(['JWT_SECRET', 'PULSAR_TOKEN']);
  });

  it('names each flag after its variable', () => {
    expect(flagOf('PUBLIC_URL')).toBe('--public-url');
    expect(flagOf('JWT_CLOCK_TOLERANCE_S')).toBe('--jwt-clock-tolerance-s');
  });

  it('parses a whole environment, ignoring variables that are not settings', () => {
    const config = ConfigSchema.parse({ PATH: '/usr/bin', HOME: '/root', PORT: '9000', HOST: '::1' });
    expect(config.port).toBe(9000);
    expect(config.publicUrl.href).toBe('http://[::1]:9000/');
    expect(EnvSchema.parse({ PORT: '' }).PORT).toBe(8006);
  });

  it('the config type is what the schema returns', () => {
    expectTypeOf<Config['jwt']['keyMode']>().toEqualTypeOf<KeyMode>();
    expectTypeOf<Config['port']>().toEqualTypeOf<number>();
    expectTypeOf<Config['jwt']['jwksUrl']>().toEqualTypeOf<URL | undefined>();
  });
});

describe('flags and the environment', () => {
  it('a flag wins over its variable, and an empty one counts as unset', () => {
    expect(loadConfig({ PORT: '1' }, { PORT: '2' }).port).toBe(2);
    expect(loadConfig({ PORT: '' }).port).toBe(8006);
    expect(loadConfig({ JWT_SECRET: SECRET }, { JWT_SECRET: '' }).jwt.keyMode).toBe('dev');
  });

  it('sizes the view cache from the memory the process may use, unless told a number of bytes', () => {
    const MiB = 1024 * 1024;
    expect(loadConfig({}).viewCacheBytes).toBe(autoViewCacheBytes());
    expect(loadConfig({ VIEW_CACHE_BYTES: 'auto' }).viewCacheBytes).toBe(autoViewCacheBytes());
    expect(loadConfig({}).viewCacheBytes).toBe(Math.min(4096 * MiB, Math.max(64 * MiB, Math.floor(usableMemoryBytes() / 8))));
    expect(autoViewCacheBytes(2048 * MiB)).toBe(256 * MiB);
    expect(autoViewCacheBytes(256 * MiB)).toBe(64 * MiB);
    expect(autoViewCacheBytes(256 * 1024 * MiB)).toBe(4096 * MiB);
    expect(usableMemoryBytes()).toBeLessThanOrEqual(totalmem());
    expect(loadConfig({ VIEW_CACHE_BYTES: '0' }).viewCacheBytes).toBe(0);
    expect(loadConfig({}, { VIEW_CACHE_BYTES: '1048576' }).viewCacheBytes).toBe(MiB);
    for (const bad of ['-1', '1.5', 'AUTO', '64MiB', String(17 * 1024 ** 3)])
      expect(errorOf({ VIEW_CACHE_BYTES: bad })).toMatch(
        /^VIEW_CACHE_BYTES.*must be auto or a whole number of bytes from 0 to 17179869184/,
      );
  });

  it('normalises token types and splits lists', () => {
    const config = loadConfig({ JWT_TYP: 'application/AT+JWT, JWT', JWT_AUDIENCE: 'a, b,,', ROLE_SCOPES: '{"admin":"registry:write"}' });
    expect(config.jwt.acceptedTyp).toEqual(['at+jwt', 'jwt']);
    expect(config.jwt.audience).toEqual(['a', 'b']);
    expect(config.jwt.roleScopes).toEqual({ admin: 'registry:write' });
  });
});

describe('a wrong value is one line naming the variable', () => {
  it('gives the rule and the value', () => {
    expect(errorOf({ PORT: 'abc' })).toBe('PORT: must be a whole number from 0 to 65535 (got "abc")');
    expect(errorOf({ PORT: '70000' })).toBe('PORT: must be at most 65535 (got "70000")');
    expect(errorOf({ ANONYMOUS_DISCOVERY: 'bogus' })).toBe('ANONYMOUS_DISCOVERY: must be one of full, public, none (got "bogus")');
    expect(errorOf({ PULSAR_WS_URL: 'http://bus' })).toBe('PULSAR_WS_URL: must be a ws:// or wss:// URL (got "http://bus")');
    expect(errorOf({ JWT_ALGORITHMS: 'HS256,none' })).toBe('JWT_ALGORITHMS: is not a supported algorithm (got "HS256,none")');
  });

  it('names the first wrong setting in --help order', () => {
    expect(errorOf({ LOG_LEVEL: 'loud', PORT: 'abc' })).toMatch(/^PORT: /);
  });

  it('shortens a long value', () => {
    expect(errorOf({ RESOURCE_URL: 'x'.repeat(100) })).toBe(
      `RESOURCE_URL: must be an http:// or https:// URL (got "${'x'.repeat(80)}...")`,
    );
  });

  it('refuses URLs the registry could not use, before anything starts', () => {
    expect(errorOf({ RESOURCE_URL: 'foo:bar' })).toBe('RESOURCE_URL: must be an http:// or https:// URL (got "foo:bar")');
    expect(errorOf({ AUTHORIZATION_SERVERS: 'https://as.example,notaurl' })).toMatch(
      /^AUTHORIZATION_SERVERS: must be an http:\/\/ or https:\/\/ URL/,
    );
    // Discovery reads the issuer's metadata over HTTP; with a key of its own, an issuer is only compared.
    expect(errorOf({ JWT_ISSUER: 'javascript:alert(1)' })).toMatch(
      /^JWT_ISSUER: must be an http:\/\/ or https:\/\/ URL to find its JWKS from/,
    );
    expect(loadConfig({ JWT_ISSUER: 'urn:example:issuer', JWT_SECRET: 's'.repeat(32) }).jwt.issuer).toBe('urn:example:issuer');
  });

  it('refuses a password in a URL, and does not echo it', () => {
    for (const name of ['JWKS_URL', 'PULSAR_WS_URL', 'PUBLIC_URL', 'JWT_ISSUER'] as const) {
      const scheme = name === 'PULSAR_WS_URL' ? 'ws' : 'http';
      const message = errorOf({ [name]: `${scheme}://user:HUNTER2@host.example/x` });
      expect(message).toBe(
        `${name}: must not carry a user name or password; give credentials in their own settings (got "${scheme}://***@host.example/x")`,
      );
    }
  });

  it('never echoes a secret', () => {
    const message = errorOf({ JWT_SECRET: 'short-but-secret' });
    expect(message).toBe('JWT_SECRET: must be at least 32 characters (256 bits) for HS256');
    expect(message).not.toContain('short-but-secret');
  });
});

describe('key mode, decided once', () => {
  const cases: [NodeJS.ProcessEnv, KeyMode][] = [
    [{}, 'dev'],
    [{ JWT_SECRET: SECRET }, 'secret'],
    [{ JWT_SECRET: SECRET, JWT_ISSUER: 'https://issuer.test' }, 'secret'],
    [{ JWT_PUBLIC_KEY: PEM }, 'public-key'],
    [{ JWT_PUBLIC_KEY: PEM, JWT_ISSUER: 'https://issuer.test' }, 'public-key'],
    [{ JWKS_URL: 'https://issuer.test/jwks' }, 'jwks'],
    [{ JWT_ISSUER: 'https://issuer.test' }, 'jwks'],
  ];
  it.each(cases)('%j -> %s', (env, mode) => {
    expect(loadConfig(env).jwt.keyMode).toBe(mode);
  });

  it('refuses two key sources in one line, echoing neither', () => {
    expect(errorOf({ JWT_SECRET: SECRET, JWT_PUBLIC_KEY: PEM })).toBe(
      'JWT_PUBLIC_KEY: set only one of JWT_SECRET, JWT_PUBLIC_KEY and JWKS_URL (got JWT_SECRET and JWT_PUBLIC_KEY)',
    );
    expect(errorOf({ JWT_SECRET: SECRET, JWKS_URL: 'https://issuer.test/jwks' })).not.toContain(SECRET);
  });
});

describe('issue 28: every setting error names its setting, in one line', () => {
  const HOST_RULE = 'must be an IP address (IPv6 without brackets) or a host name (letters, digits, dots, dashes and underscores)';

  it('refuses a HOST or METRICS_HOST that is no address or host name, naming it (not "Invalid URL" from the URL made of it)', () => {
    expect(errorOf({ HOST: '256.1.1.1' })).toBe(`HOST: ${HOST_RULE} (got "256.1.1.1")`);
    for (const host of ['a b', '[::1]', 'foo/bar', 'user@host', '1.2.3', 'name.1', '-leading', 'x'.repeat(64)]) {
      expect(errorOf({ HOST: host }), host).toMatch(/^HOST: must be an IP address/);
    }
    expect(errorOf({ METRICS_PORT: '9464', METRICS_HOST: '256.1.1.1' })).toBe(`METRICS_HOST: ${HOST_RULE} (got "256.1.1.1")`);
  });

  it('takes addresses and host names', () => {
    for (const host of [
      '127.0.0.1',
      '0.0.0.0',
      '::',
      '::1',
      '::ffff:10.0.0.1',
      'localhost',
      'registry.internal',
      'host.example.',
      'my_service',
      'tool-registry-0',
    ]) {
      expect(loadConfig({ HOST: host }).host, host).toBe(host);
    }
  });

  it('a HOST that is an address but cannot be part of a URL needs PUBLIC_URL, and says so', () => {
    expect(errorOf({ HOST: 'fe80::1%eth0' })).toBe(
      'HOST: cannot be named in a URL, which the registry gives out (http://HOST:PORT); set PUBLIC_URL (got "fe80::1%eth0")',
    );
    expect(loadConfig({ HOST: 'fe80::1%eth0', PUBLIC_URL: 'http://registry.example' }).publicUrl.href).toBe('http://registry.example/');
  });

  it('whatever text a setting holds, it loads or stops with one ConfigError line that names it', () => {
    const values = [
      '256.1.1.1',
      'a b',
      '%',
      '%zz',
      '\u0000',
      '\n',
      '[',
      'http://[',
      'http://256.1.1.1',
      'http://:80',
      'ws://[::1',
      '-1',
      '1e3',
      '0x10',
      '{',
      '{"a":1}',
      '[]',
      'é',
      'x'.repeat(300),
    ];
    for (const name of SETTING_NAMES) {
      for (const value of values) {
        let message: string | undefined;
        try {
          loadConfig({ [name]: value });
        } catch (err) {
          expect(err, `${name}=${JSON.stringify(value)}: ${String(err)}`).toBeInstanceOf(ConfigError);
          message = (err as Error).message;
        }
        if (message === undefined) continue;
        expect(message.startsWith(`${name}: `), `${name}=${JSON.stringify(value)}: ${message}`).toBe(true);
        expect(message, `${name}=${JSON.stringify(value)}`).not.toContain('\n');
      }
    }
  });
});

describe('announcer bindings (issue 29)', () => {
  const BUS = { PULSAR_WS_URL: 'ws://127.0.0.1:8080', ANNOUNCE_TOPIC: 'non-persistent://tg/registry/announcements' };
  const key = announcerKey('weather-1');
  const binding = { subject: 'weather-bot', keys: [key.publicJwk], queues: ['non-persistent://tg/*/weather'], scopes: ['weather:read'] };

  it('reads ANNOUNCER_KEYS_FILE into keys by kid, each with its binding and algorithm, and the skew bound', () => {
    const config = loadConfig({ ...BUS, ANNOUNCER_KEYS_FILE: writeBindings([binding]) });
    const trusted = config.announce?.announcers.get('weather-1');
    expect(trusted?.binding).toEqual({ ...binding, unscopedTools: false, shareQueues: false });
    expect(trusted?.alg).toBe('EdDSA');
    expect(trusted?.key.type).toBe('public');
    expect(config.announce?.maxSkewS).toBe(120);
    expect(loadConfig({ ...BUS, ANNOUNCER_KEYS_FILE: writeBindings([binding]), ANNOUNCE_MAX_SKEW_S: '30' }).announce?.maxSkewS).toBe(30);
  });

  it('needs both the topic and the bindings, and says which is missing', () => {
    expect(errorOf(BUS)).toMatch(
      /^ANNOUNCE_TOPIC: needs ANNOUNCER_KEYS_FILE: announcements are taken only signed by a key an operator bound to what it may announce/,
    );
    expect(errorOf({ ANNOUNCER_KEYS_FILE: writeBindings([binding]) })).toMatch(
      /^ANNOUNCER_KEYS_FILE: needs ANNOUNCE_TOPIC: it says who may announce there/,
    );
  });

  it('stops startup on a file it cannot use, naming the place in it', () => {
    const file = (text: string) => {
      const path = join(mkdtempSync(join(tmpdir(), 'announcers-')), 'announcers.json');
      writeFileSync(path, text);
      return path;
    };
    const of = (path: string) => errorOf({ ...BUS, ANNOUNCER_KEYS_FILE: path });
    expect(of('/nonexistent/announcers.json')).toMatch(/^ANNOUNCER_KEYS_FILE: cannot be read \(ENOENT\)/);
    expect(of(file('{'))).toMatch(/^ANNOUNCER_KEYS_FILE: is not JSON/);
    // The registry only verifies: a private key in its file is a mistake.
    expect(of(writeBindings([{ ...binding, keys: [key.privateJwk] }]))).toMatch(
      /^ANNOUNCER_KEYS_FILE: is not a file of announcer bindings: announcers\.0\.keys\.0 is a private key/,
    );
    expect(of(writeBindings([binding, { ...binding, subject: 'radio-bot' }]))).toMatch(
      /announcers\.1\.keys\.0\.kid kid "weather-1" is used twice/,
    );
    expect(of(writeBindings([{ ...binding, queues: [] }]))).toMatch(/announcers\.0\.queues/);
    expect(of(writeBindings([{ ...binding, keys: [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'AAAA', kid: 'broken' }] }]))).toMatch(
      /announcers\.0\.keys\.0 is not a usable public key/,
    );
    expect(errorOf({ ...BUS, ANNOUNCER_KEYS_FILE: writeBindings([binding]), ANNOUNCE_MAX_SKEW_S: '0' })).toMatch(
      /^ANNOUNCE_MAX_SKEW_S: must be at least 1/,
    );
  });
});

describe('issue 30: OUTBOUND_CA_FILE', () => {
  it('reads every CA certificate of a PEM file, from the variable or its flag', () => {
    const ca = throwawayCa();
    try {
      expect(flagOf('OUTBOUND_CA_FILE')).toBe('--outbound-ca-file');
      const fromEnv = loadConfig({ OUTBOUND_CA_FILE: ca.caFile }).outbound.ca;
      expect(fromEnv).toHaveLength(1);
      expect(fromEnv[0]).toMatch(/^-----BEGIN CERTIFICATE-----/);
      // Two in one file (a bundle): both kept.
      const bundle = join(ca.dir, 'bundle.pem');
      writeFileSync(bundle, `${readFileSync(ca.caFile, 'utf8')}\n${ca.cert}`);
      expect(loadConfig({}, { OUTBOUND_CA_FILE: bundle }).outbound.ca).toHaveLength(2);
    } finally {
      ca.remove();
    }
  });

  it('stops startup with one line naming it when the file is missing, holds no certificate, or a broken one', () => {
    const ca = throwawayCa();
    try {
      const key = join(ca.dir, 'key.pem');
      writeFileSync(key, ca.key);
      const broken = join(ca.dir, 'broken.pem');
      writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
      const messages = [
        errorOf({ OUTBOUND_CA_FILE: join(ca.dir, 'absent.pem') }),
        errorOf({ OUTBOUND_CA_FILE: key }),
        errorOf({}, { OUTBOUND_CA_FILE: broken }),
      ];
      expect(messages[0]).toMatch(/^OUTBOUND_CA_FILE: .*cannot be read \(ENOENT\)/);
      expect(messages[1]).toMatch(/^OUTBOUND_CA_FILE: .*holds no PEM certificate/);
      expect(messages[2]).toMatch(/^OUTBOUND_CA_FILE: .*certificate 1 of 1 is not a valid X\.509 certificate/);
      for (const message of messages) expect(message).not.toContain('\n');
    } finally {
      ca.remove();
    }
  });
});
