/**
 * The registry's own credential for calls to a tool's host (issue 30): what an operator writes
 * as the `credential` of an HTTP tool (later, of an OpenAPI source). The registry, not the
 * agent, authenticates to the host; the caller's token goes there only under
 * forwardAuthorization (and token exchange, which trades it for one meant for the host).
 *
 * Each secret is given inline or as a file path (`apiKeyFile`, `bearerFile`, `passwordFile`,
 * `clientSecretFile`) read at call time, so that a rotated file takes effect without a write.
 * The file should be readable by the registry's user only (mode 0600); the path is not a secret
 * and is shown by reads. `{"set": true}` keeps what is stored (a PUT of what a GET showed).
 */
import { z } from 'zod';

/** Printable ASCII, as header values and form fields carry them unencoded. */
const SECRET = z.string().regex(/^[\x21-\x7E]{1,4096}$/, 'must be 1 to 4096 printable ASCII characters');
/** An absolute path to a file holding the secret (trailing newline dropped when read). */
const SECRET_FILE = z.string().min(2).max(4096).startsWith('/', 'must be an absolute path');
/** RFC 9110 token: header and cookie names. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** A token endpoint: http(s) only; where it points is checked by the outbound policy when it is fetched. */
const TOKEN_URL = z.url({ protocol: /^https?$/, hostname: z.regexes.hostname }).max(2048);
const SCOPES = z.array(z.string().regex(/^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/)).max(64);
const TEXT = z.string().min(1).max(2048);

/** A secret inline or in a file: exactly one of the two keys. */
function secretOf<K extends string>(key: K) {
  return z.union([
    z.strictObject({ [key]: SECRET } as Record<K, typeof SECRET>),
    z.strictObject({ [`${key}File`]: SECRET_FILE } as Record<`${K}File`, typeof SECRET_FILE>),
  ]);
}

const ApiKeyPlacement = z.strictObject({
  in: z.enum(['header', 'query', 'cookie']),
  name: z.string().regex(TOKEN, 'must be an RFC 9110 token'),
});

const ClientFields = z.strictObject({
  tokenUrl: TOKEN_URL,
  clientId: TEXT,
  scopes: SCOPES.optional(),
  audience: TEXT.optional(),
  /** How the client authenticates at the token endpoint; client_secret_basic unless given. */
  auth: z.enum(['client_secret_basic', 'client_secret_post']).optional(),
});

export const OutboundCredentialSchema = z.union([
  z.intersection(secretOf('apiKey'), ApiKeyPlacement),
  secretOf('bearer'),
  z.strictObject({ basic: z.intersection(z.strictObject({ username: TEXT }).loose(), secretOf('password')) }),
  z.strictObject({ clientCredentials: z.intersection(ClientFields.loose(), secretOf('clientSecret')) }),
  z.strictObject({
    tokenExchange: z.intersection(ClientFields.extend({ resource: TEXT.optional() }).loose(), secretOf('clientSecret')),
  }),
]);

export type OutboundCredential = z.output<typeof OutboundCredentialSchema>;

/** The `credential` member of a write: a credential, `{"set": true}` (keep), or null (remove). */
export const OutboundCredentialInputSchema = z.union([OutboundCredentialSchema, z.strictObject({ set: z.literal(true) }), z.null()]);

export type OutboundCredentialChange = { set: OutboundCredential } | 'keep' | 'remove';

/** What a write does with the stored credential: omitted or `{"set": true}` keeps it. */
export function outboundCredentialChange(input: z.output<typeof OutboundCredentialInputSchema> | undefined): OutboundCredentialChange {
  if (input === undefined || (input !== null && 'set' in input)) return 'keep';
  return input === null ? 'remove' : { set: input };
}

export type OutboundCredentialKind = 'apiKey' | 'bearer' | 'basic' | 'clientCredentials' | 'tokenExchange';

/** What reads show: the kind and the fields that are not secret; a secret only as `set: true` (a file path as itself). */
export type MaskedCredential = { kind: OutboundCredentialKind; set: true } & Record<string, unknown>;

function maskSecret(source: Record<string, unknown>, key: string): Record<string, unknown> {
  const file = source[`${key}File`];
  return typeof file === 'string' ? { [`${key}File`]: file } : {};
}

function maskClient(fields: Record<string, unknown>): Record<string, unknown> {
  const { clientSecret: _secret, clientSecretFile: _file, ...rest } = fields;
  return { ...rest, ...maskSecret(fields, 'clientSecret') };
}

function kindOf(credential: OutboundCredential): OutboundCredentialKind {
  if ('in' in credential) return 'apiKey';
  if ('basic' in credential) return 'basic';
  if ('clientCredentials' in credential) return 'clientCredentials';
  if ('tokenExchange' in credential) return 'tokenExchange';
  return 'bearer';
}

/** The masked form: never a secret's value. */
export function maskCredential(credential: OutboundCredential): MaskedCredential {
  const c = credential as Record<string, unknown>;
  const kind = kindOf(credential);
  switch (kind) {
    case 'apiKey':
      return { kind, in: c.in, name: c.name, ...maskSecret(c, 'apiKey'), set: true };
    case 'bearer':
      return { kind, ...maskSecret(c, 'bearer'), set: true };
    case 'basic': {
      const basic = c.basic as Record<string, unknown>;
      return { kind, username: basic.username, ...maskSecret(basic, 'password'), set: true };
    }
    default:
      return { kind, ...maskClient(c[kind] as Record<string, unknown>), set: true };
  }
}

/**
 * An OpenAPI source's credential (issue 30): as an HTTP tool's, except that what the document's
 * security schemes say may be left out: `{"apiKey": "…"}` fills the document's `apiKey` scheme
 * (its header, query or cookie name), and a client-credentials credential without `tokenUrl`
 * takes the token URL of the document's `oauth2` client-credentials flow.
 */
export const SourceCredentialSchema = z.union([
  OutboundCredentialSchema,
  secretOf('apiKey'),
  z.strictObject({ clientCredentials: z.intersection(ClientFields.partial({ tokenUrl: true }).loose(), secretOf('clientSecret')) }),
]);
export type SourceCredential = z.output<typeof SourceCredentialSchema>;

/** A source's `credential` member: a credential, `{"set": true}` (keep), or null (remove). */
export const SourceCredentialInputSchema = z.union([SourceCredentialSchema, z.strictObject({ set: z.literal(true) }), z.null()]);
