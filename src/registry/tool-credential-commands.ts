/**
 * A single HTTP tool's own outbound credential (issue 30): `PUT` and `DELETE /tools/{name}/credential`,
 * run in a group commit's batch so that they are ordered with the tool's own writes. The credential
 * is sealed under `tool:<name>` and bound to the origin the tool's calls go to now; it is never in
 * the descriptor, so discovery, exports and the change feed never carry it.
 */
import { RegistryError } from '../model/errors.js';
import { httpToolOrigin } from '../model/http-target.js';
import { openApiSourceOf } from '../model/openapi-source.js';
import { maskCredential, type OutboundCredential } from '../model/outbound-credential.js';
import type { Actor, ToolRecord } from '../model/records.js';
import type { RegistryStore } from '../store/registry-store.js';
import type { ToolCredentialRecord } from '../store/tool-credential-rows.js';
import type { GroupCommit } from './group-commit.js';
import { auditFor } from './write-commands.js';

/** The owner string a tool's credential is sealed under. */
export const toolCredentialOwner = (name: string): string => `tool:${name}`;

function httpToolOf(commit: GroupCommit, name: string): ToolRecord {
  const record = commit.view.tool(name);
  if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no tool "${name}"`);
  if (record.kind !== 'http')
    throw new RegistryError('TR_ERR_CONFLICT', `tool "${name}" is not an HTTP tool: only HTTP tools carry a credential of their own`);
  const source = openApiSourceOf(record.owner);
  if (source !== undefined)
    throw new RegistryError(
      'TR_ERR_CONFLICT',
      `tool "${name}" belongs to OpenAPI source "${source}": its calls carry the source's credential; set it there`,
    );
  return record;
}

export function setToolCredential(
  store: RegistryStore,
  commit: GroupCommit,
  name: string,
  credential: OutboundCredential,
  actor: Actor | undefined,
): ToolCredentialRecord {
  const record = httpToolOf(commit, name);
  const origin = httpToolOrigin(record.descriptor as Parameters<typeof httpToolOrigin>[0]);
  const at = commit.stamp();
  const shown = maskCredential(credential);
  const audit = auditFor(actor, at, 'tool.credential.put', () => [name, 200, `${shown.kind} for ${origin}`]);
  return store.putToolCredential(
    name,
    store.credentials.seal(toolCredentialOwner(name), credential),
    shown,
    origin,
    at,
    audit?.(undefined),
  );
}

export function removeToolCredential(store: RegistryStore, commit: GroupCommit, name: string, actor: Actor | undefined): void {
  httpToolOf(commit, name);
  const at = commit.stamp();
  const audit = auditFor(actor, at, 'tool.credential.delete', () => [name, 200]);
  if (!store.deleteToolCredential(name, audit?.(undefined)))
    throw new RegistryError('TR_ERR_NOT_FOUND', `tool "${name}" has no credential of its own`);
}
