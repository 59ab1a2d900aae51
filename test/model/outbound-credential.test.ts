import { describe, expect, it } from 'vitest';
import {
  maskCredential,
  OutboundCredentialInputSchema,
  OutboundCredentialSchema,
  outboundCredentialChange,
} from '../../src/model/outbound-credential.js';

const parse = (x: unknown) => OutboundCredentialSchema.parse(x);

describe('outbound credential schema', () => {
  it('takes each form, inline or from a file', () => {
    for (const x of [
      { apiKey: 'k1', in: 'header', name: 'X-API-Key' },
      { apiKeyFile: '/run/key', in: 'query', name: 'api_key' },
      { bearer: 'b1' },
      { bearerFile: '/run/b' },
      { basic: { username: 'u', password: 'p' } },
      { basic: { username: 'u', passwordFile: '/run/p' } },
      {
        clientCredentials: {
          tokenUrl: 'https://as.example/token',
          clientId: 'c',
          clientSecret: 's',
          scopes: ['a'],
          auth: 'client_secret_post',
        },
      },
      {
        tokenExchange: {
          tokenUrl: 'http://127.0.0.1:9/token',
          clientId: 'c',
          clientSecretFile: '/run/s',
          audience: 'api',
          resource: 'https://api.example',
        },
      },
    ]) {
      expect(OutboundCredentialSchema.safeParse(x).success, JSON.stringify(x)).toBe(true);
    }
  });

  it('refuses both or neither of a secret and its file, unknown keys, bad names and non-http token URLs', () => {
    for (const x of [
      { apiKey: 'k', apiKeyFile: '/k', in: 'header', name: 'X' },
      { in: 'header', name: 'X' },
      { apiKey: 'k', in: 'body', name: 'X' },
      { apiKey: 'k', in: 'header', name: 'bad name' },
      { bearer: 'has space' },
      { bearer: 'b', extra: 1 },
      { bearerFile: 'relative/path' },
      { basic: { username: 'u' } },
      { clientCredentials: { tokenUrl: 'ftp://as.example/token', clientId: 'c', clientSecret: 's' } },
      { clientCredentials: { tokenUrl: 'https://as.example/token', clientId: 'c', clientSecret: 's', auth: 'private_key_jwt' } },
      { tokenExchange: { tokenUrl: 'https://as.example/token', clientId: 'c' } },
    ]) {
      expect(OutboundCredentialSchema.safeParse(x).success, JSON.stringify(x)).toBe(false);
    }
  });

  it('keeps on omission or {set:true}, removes on null, sets otherwise', () => {
    expect(outboundCredentialChange(undefined)).toBe('keep');
    expect(outboundCredentialChange(OutboundCredentialInputSchema.parse({ set: true }))).toBe('keep');
    expect(outboundCredentialChange(OutboundCredentialInputSchema.parse(null))).toBe('remove');
    expect(outboundCredentialChange(OutboundCredentialInputSchema.parse({ bearer: 'x' }))).toEqual({ set: { bearer: 'x' } });
    expect(OutboundCredentialInputSchema.safeParse({ set: false }).success).toBe(false);
  });
});

describe('maskCredential', () => {
  const secrets = ['k1', 'b1', 'pw1', 'cs1'];
  it('shows kind and non-secret fields, never a secret', () => {
    const masked = [
      maskCredential(parse({ apiKey: 'k1', in: 'cookie', name: 'sid' })),
      maskCredential(parse({ bearer: 'b1' })),
      maskCredential(parse({ basic: { username: 'u', password: 'pw1' } })),
      maskCredential(parse({ clientCredentials: { tokenUrl: 'https://as.example/t', clientId: 'c', clientSecret: 'cs1', scopes: ['s'] } })),
      maskCredential(
        parse({ tokenExchange: { tokenUrl: 'https://as.example/t', clientId: 'c', clientSecretFile: '/run/s', audience: 'api' } }),
      ),
    ];
    expect(masked).toEqual([
      { kind: 'apiKey', in: 'cookie', name: 'sid', set: true },
      { kind: 'bearer', set: true },
      { kind: 'basic', username: 'u', set: true },
      { kind: 'clientCredentials', tokenUrl: 'https://as.example/t', clientId: 'c', scopes: ['s'], set: true },
      { kind: 'tokenExchange', tokenUrl: 'https://as.example/t', clientId: 'c', clientSecretFile: '/run/s', audience: 'api', set: true },
    ]);
    const text = JSON.stringify(masked);
    for (const s of secrets) expect(text).not.toContain(`"${s}"`);
  });
});
