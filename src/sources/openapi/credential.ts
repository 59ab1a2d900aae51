/**
 * An OpenAPI source's credential completed from its document (issue 30): `{"apiKey": "…"}` takes
 * the `in` and `name` of the document's apiKey scheme, a client-credentials credential without
 * `tokenUrl` the token URL of its oauth2 client-credentials flow. What cannot be completed is a
 * 400 naming `credential`.
 */
import { RegistryError } from '../../model/errors.js';
import { OutboundCredentialSchema, type OutboundCredential, type SourceCredential } from '../../model/outbound-credential.js';
import type { ImportedDocument } from './import.js';

const refused = (message: string) =>
  new RegistryError('TR_ERR_VALIDATION', `invalid OpenAPI source: credential: ${message}`, {
    fieldErrors: [{ path: 'credential', message }],
  });

export function completeCredential(credential: SourceCredential, schemes: ImportedDocument['securitySchemes']): OutboundCredential {
  const given = credential as Record<string, unknown>;
  let full: Record<string, unknown> = given;
  if (('apiKey' in given || 'apiKeyFile' in given) && !('in' in given)) {
    const scheme = Object.entries(schemes).find(([, s]) => s.type === 'apiKey' && s.in !== undefined && s.name !== undefined);
    if (!scheme) throw refused('the document has no apiKey security scheme to fill: give "in" and "name" with the key');
    full = { ...given, in: scheme[1].in, name: scheme[1].name };
  } else if ('clientCredentials' in given) {
    const client = given.clientCredentials as Record<string, unknown>;
    if (client.tokenUrl === undefined) {
      const scheme = Object.values(schemes).find((s) => s.type === 'oauth2' && s.tokenUrl !== undefined);
      if (!scheme?.tokenUrl) throw refused("the document's security schemes give no token URL: give clientCredentials.tokenUrl");
      full = { clientCredentials: { ...client, tokenUrl: scheme.tokenUrl } };
    }
  }
  const parsed = OutboundCredentialSchema.safeParse(full);
  if (!parsed.success) throw refused(parsed.error.issues[0]?.message ?? 'is not a credential');
  return parsed.data;
}
