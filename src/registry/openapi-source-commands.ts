/**
 * The writes of OpenAPI sources (issue 30), each run inside a group commit's batch as the other
 * single writes are (src/registry/write-commands.ts): an operator's PUT and DELETE of a source,
 * a re-read of its `documentUrl` (on demand or on its interval), and an operator's accepting or
 * rejecting what a re-read holds for review. A source's tools are HTTP tools owned by
 * `openapi-source:<id>`; only these writes change them.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ToolDeprecation } from '../model/deprecation.js';
import { RegistryError, type FieldError } from '../model/errors.js';
import type { OpenApiPendingTool } from '../model/openapi-review.js';
import { openApiSourceOwner, type OpenApiSourceRecord } from '../model/openapi-source.js';
import type { Actor, AuditEntryInput, ToolRecord } from '../model/records.js';
import { resolveTool, type ParsedTool } from '../model/resolve.js';
import type { HttpTool, ToolService } from '../model/schemas.js';
import type { AuditFor, OpenApiSourceWrite, RegistryStore } from '../store/registry-store.js';
import type { PendingWrite } from '../store/pending-rows.js';
import type { GroupCommit } from './group-commit.js';
import { descriptorDigest } from './tool-digest.js';
import { reviewedChanges, type ReviewedChange, type ReviewResult } from './write-commands.js';

/** One operation of an OpenAPI source as a tool body, where it came from in the document. */
export interface OpenApiOperationTool {
  pointer: string;
  deprecated: boolean;
  body: HttpTool;
}

/** A converted OpenAPI source, ready to write: the row, and the tool each kept operation becomes. */
export interface OpenApiSourceInput extends OpenApiSourceWrite {
  operations: readonly OpenApiOperationTool[];
}

/** What a write of a source did. */
export interface OpenApiSourceResult {
  record: OpenApiSourceRecord;
  created: boolean;
  /** Names of the tools written (new or changed) and deleted. */
  written: string[];
  deleted: string[];
}

/** A re-read of a source's document, converted: what was read, at which index of the source. */
export interface OpenApiRefreshInput {
  id: string;
  /** The source's index when its document was read: a source written since is not refreshed from it. */
  sourceIndex: number;
  document: string;
  title: string;
  version: string;
  skipped: OpenApiSourceRecord['skipped'];
  operations: readonly OpenApiOperationTool[];
}

/** What a re-read did. */
export interface OpenApiRefreshResult {
  /** The source was written or deleted while its document was read: nothing was written. */
  stale: boolean;
  index: number | null;
  written: string[];
  deleted: string[];
  /** New or changed tools now held for review (rejected versions left out). */
  pending: string[];
  unchanged: number;
  skipped: OpenApiSourceRecord['skipped'];
}

/** The reason of a deprecation an OpenAPI document's `deprecated: true` sets (lifted when the document drops it). */
const DEPRECATED_IN_DOCUMENT = 'The OpenAPI document marks this operation deprecated.';

/** Who writes when the registry re-reads a source on its interval: the source, by its id. */
export function openApiSourceActor(id: string): Actor {
  return { sub: `openapi-source:${id}`, iss: null, client: null, requestId: null };
}

type Deprecations = { name: string; deprecation: ToolDeprecation | null }[];

export interface OpenApiSourceCommandsDeps {
  store: RegistryStore;
  commit: GroupCommit;
  /** The outbound address policy's check of a tool's targets (WriteCommands.checkTargets). */
  checkTargets: (tool: ParsedTool, prefix?: readonly PropertyKey[]) => void;
  /** Who holds a tool name, in words for a refusal. */
  holderOf: (record: ToolRecord) => string;
  audit: <T>(
    actor: Actor | undefined,
    at: string,
    action: string,
    describe: (result: T) => [string | null, number, string?],
  ) => AuditFor<T> | undefined;
}

export class OpenApiSourceCommands {
  readonly #deps: OpenApiSourceCommandsDeps;
  readonly #lookupService = (id: string): ToolService | undefined => this.#deps.commit.view.service(id);

  constructor(deps: OpenApiSourceCommandsDeps) {
    this.#deps = deps;
  }

  /**
   * An OpenAPI source and its tools in one write: each kept operation's tool written unless
   * unchanged, the source's tools it no longer has deleted. A name held by a tool that is not the
   * source's (an operator's, an upstream's, another source's or an announcer's) refuses the whole
   * write with 409 naming the operation: nothing is written. What a re-read held for review goes:
   * the operator's PUT is the source's word now.
   */
  put(input: OpenApiSourceInput, actor: Actor | undefined): OpenApiSourceResult {
    const { store, commit } = this.#deps;
    const view = commit.view;
    const { id } = input.source;
    const owner = openApiSourceOwner(id);
    const errors: FieldError[] = [];
    const writes: ReturnType<typeof toolWrite>[] = [];
    const wanted = new Set<string>();
    const deprecations: Deprecations = [];
    const at = commit.stamp();
    for (const operation of input.operations) {
      const parsed = resolveTool(operation.body, this.#lookupService);
      this.#deps.checkTargets(parsed, ['operations', operation.pointer]);
      wanted.add(parsed.name);
      const existing = view.tool(parsed.name);
      if (existing !== undefined && existing.owner !== owner) {
        errors.push({ path: operation.pointer, message: `the tool name "${parsed.name}" is taken by ${this.#deps.holderOf(existing)}` });
        continue;
      }
      deprecationFollows(parsed.name, operation.deprecated, existing, at, deprecations);
      if (existing && isDeepStrictEqual(existing.descriptor, parsed.descriptor)) continue;
      writes.push(toolWrite(operation.body, owner));
    }
    if (errors.length > 0)
      throw new RegistryError('TR_ERR_CONFLICT', `OpenAPI source "${id}": ${errors[0]?.message ?? ''}`, { fieldErrors: errors });
    const deletes = store.openApiSourceTools(id).filter((name) => !wanted.has(name));
    const detail = `${writes.length} tool(s) written, ${deletes.length} deleted, ${input.operations.length - writes.length} unchanged`;
    const result = store.putOpenApiSource(
      input,
      writes,
      deletes,
      at,
      this.#deps.audit(actor, at, 'openapi-source.put', (r: { record: OpenApiSourceRecord; created: boolean }) => [
        r.record.id,
        r.created ? 201 : 200,
        detail,
      ]),
      deprecations,
    );
    commit.stage(result.record.index, { tools: result.tools });
    return { record: result.record, created: result.created, written: writes.map((w) => w.name), deleted: deletes };
  }

  /** Deletes a source, its credential, its pending versions and its tools, in one write. */
  delete(id: string, actor: Actor | undefined): { record: OpenApiSourceRecord; deleted: string[] } {
    const { store, commit } = this.#deps;
    const at = commit.stamp();
    const result = store.deleteOpenApiSource(
      id,
      at,
      this.#deps.audit(actor, at, 'openapi-source.delete', (r: { record: OpenApiSourceRecord; tools: ToolRecord[] }) => [
        r.record.id,
        200,
        `${r.tools.length} tool(s) deleted with it`,
      ]),
    );
    commit.stage(result.record.index, { tools: result.tools });
    return { record: result.record, deleted: result.tools.map((t) => t.name) };
  }

  /**
   * A re-read of a source's documentUrl: what the document no longer has leaves at once; what is
   * new or changed is written at once under the policy `auto`, or held for review under
   * `review` (agents keep the tools they have); an operation whose tool is as served only follows
   * the document's `deprecated` mark, which never changes what a call does. An operation whose
   * name another tool holds, or whose target the outbound policy refuses, is skipped with the
   * reason: one bad operation does not hold back the rest.
   */
  refresh(input: OpenApiRefreshInput, actor: Actor | undefined): OpenApiRefreshResult {
    const { store, commit } = this.#deps;
    const view = commit.view;
    const { id } = input;
    const record = store.openApiSource(id);
    if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no OpenAPI source "${id}"`);
    const result: OpenApiRefreshResult = {
      stale: false,
      index: null,
      written: [],
      deleted: [],
      pending: [],
      unchanged: 0,
      skipped: [...input.skipped],
    };
    if (record.index !== input.sourceIndex) return { ...result, stale: true };
    const review = record.descriptor.policy !== 'auto';
    const owner = openApiSourceOwner(id);
    const at = commit.stamp();
    const writes: ReturnType<typeof toolWrite>[] = [];
    const deprecations: Deprecations = [];
    const pendingPut: PendingWrite<OpenApiPendingTool>[] = [];
    const settled: string[] = [];
    const wanted = new Set<string>();
    for (const operation of input.operations) {
      let parsed: ParsedTool;
      try {
        parsed = resolveTool(operation.body, this.#lookupService);
        this.#deps.checkTargets(parsed);
      } catch (err) {
        if (!(err instanceof RegistryError)) throw err;
        result.skipped.push({ pointer: operation.pointer, reason: err.message });
        continue;
      }
      const existing = view.tool(parsed.name);
      if (existing !== undefined && existing.owner !== owner) {
        result.skipped.push({
          pointer: operation.pointer,
          reason: `the tool name "${parsed.name}" is taken by ${this.#deps.holderOf(existing)}`,
        });
        continue;
      }
      wanted.add(parsed.name);
      if (existing && isDeepStrictEqual(existing.descriptor, parsed.descriptor)) {
        deprecationFollows(parsed.name, operation.deprecated, existing, at, deprecations);
        settled.push(parsed.name);
        result.unchanged += 1;
        continue;
      }
      if (!review) {
        deprecationFollows(parsed.name, operation.deprecated, existing, at, deprecations);
        writes.push(toolWrite(operation.body, owner));
        continue;
      }
      const digest = descriptorDigest(parsed.descriptor);
      const held = store.openApiPending(id, parsed.name);
      if (held?.digest === digest) {
        result.unchanged += 1;
        if (!held.rejected) result.pending.push(parsed.name);
        continue;
      }
      pendingPut.push({
        name: parsed.name,
        digest,
        descriptor: {
          pointer: operation.pointer,
          deprecated: operation.deprecated,
          body: operation.body as unknown as Record<string, unknown>,
        },
        acceptedDigest: existing ? descriptorDigest(existing.descriptor) : null,
      });
      result.pending.push(parsed.name);
    }
    const deletes = store.openApiSourceTools(id).filter((name) => !wanted.has(name));
    // Rows of names served as listed, gone from the document, or (policy `auto`) any at all.
    const pendingDrop = [...settled, ...store.openApiPendingNames(id).filter((name) => !review || !wanted.has(name))];
    const change = { writes, deletes, deprecations, pendingPut, pendingDrop };
    const read = { document: input.document, title: input.title, version: input.version, skipped: result.skipped };
    const detail = [
      `${writes.length} tool(s) written, ${deletes.length} deleted, ${pendingPut.length} newly pending review`,
      ...pendingPut.slice(0, 100).map((p) => `${p.name} ${p.acceptedDigest ?? 'none'} -> ${p.digest}`),
    ].join('; ');
    result.written = writes.map((w) => w.name);
    result.deleted = deletes;
    const audit = this.#deps.audit(actor, at, 'openapi-source.refresh', () => [id, 200, detail]);
    if (writes.length === 0 && deletes.length === 0 && deprecations.length === 0) {
      // Only the stored document and the queue change: no tool agents see, no index.
      store.writeOpenApiPending(id, read, change, at, pendingPut.length > 0 ? audit?.(undefined) : undefined);
      return result;
    }
    const records = store.writeOpenApiRefresh(id, read, change, at, audit);
    result.index = records[0]?.index ?? null;
    if (result.index !== null) commit.stage(result.index, { tools: records });
    return result;
  }

  /**
   * An operator accepts pending versions of a source's tools: each must be pending now with the
   * digest the operator read (a version that moved meanwhile is never accepted unseen), its name
   * still free for the source, its target still allowed; all or none.
   */
  accept(id: string, changes: readonly ReviewedChange[], actor: Actor | undefined): ReviewResult {
    const { store, commit } = this.#deps;
    const view = commit.view;
    const found = this.#reviewed(id, changes, 'accept');
    const owner = openApiSourceOwner(id);
    const errors: FieldError[] = [];
    found.forEach(({ version }, i) => {
      const existing = view.tool(version.name);
      if (existing !== undefined && existing.owner !== owner)
        errors.push({ path: `changes.${i}.tool`, message: `the tool name "${version.name}" is taken by ${this.#deps.holderOf(existing)}` });
      this.#deps.checkTargets(resolveTool(version.descriptor.body as unknown as HttpTool, this.#lookupService), ['changes', i]);
    });
    if (errors.length > 0)
      throw new RegistryError('TR_ERR_CONFLICT', `cannot accept: ${errors[0]?.message ?? ''}`, { fieldErrors: errors });
    const at = commit.stamp();
    const deprecations: Deprecations = [];
    for (const { version } of found)
      deprecationFollows(version.name, version.descriptor.deprecated, view.tool(version.name), at, deprecations);
    const result: ReviewResult = { index: null, changes: found.map(({ change }) => change) };
    const detail = `${result.changes.length} change(s) accepted: ${result.changes
      .slice(0, 100)
      .map((c) => `${c.tool} ${c.acceptedDigest ?? 'none'} -> ${c.digest}`)
      .join('; ')}`;
    const records = store.acceptOpenApiTools(
      id,
      found.map(({ version }) => toolWrite(version.descriptor.body as unknown as HttpTool, owner)),
      deprecations,
      at,
      this.#deps.audit(actor, at, 'openapi-source.accept', () => [id, 200, detail]),
    );
    result.index = records[0]?.index ?? null;
    if (result.index !== null) commit.stage(result.index, { tools: records });
    return result;
  }

  /** An operator rejects pending versions: agents keep what they are served, and the same version read again stays out of the queue. */
  reject(id: string, changes: readonly ReviewedChange[], actor: Actor | undefined): ReviewResult {
    const { store, commit } = this.#deps;
    const found = this.#reviewed(id, changes, 'reject');
    const at = commit.stamp();
    const result: ReviewResult = { index: null, changes: found.map(({ change }) => change) };
    const detail = `${result.changes.length} change(s) rejected: ${result.changes
      .slice(0, 100)
      .map((c) => `${c.tool} ${c.digest}`)
      .join('; ')}`;
    const audit = this.#deps.audit(actor, at, 'openapi-source.reject', () => [id, 200, detail]);
    store.rejectOpenApiPending(
      id,
      found.map(({ version }) => version.name),
      at,
      audit?.(undefined) as AuditEntryInput | undefined,
    );
    return result;
  }

  #reviewed(id: string, changes: readonly ReviewedChange[], verb: 'accept' | 'reject') {
    const { store, commit } = this.#deps;
    if (!store.openApiSource(id)) throw new RegistryError('TR_ERR_NOT_FOUND', `no OpenAPI source "${id}"`);
    return reviewedChanges(
      changes,
      verb,
      (name) => store.openApiPending(id, name),
      (name) => {
        const served = commit.view.tool(name);
        return served ? descriptorDigest(served.descriptor) : null;
      },
      { openApiSource: id },
    );
  }
}

function toolWrite(body: HttpTool, owner: string) {
  return { name: body.name, kind: 'http' as const, serviceId: null, descriptor: body, owner };
}

/**
 * OpenAPI `deprecated` (issue 34's deprecation): set while the document says so, lifted when it
 * no longer does; a deprecation an operator set is the operator's, and stays.
 */
function deprecationFollows(name: string, deprecated: boolean, existing: ToolRecord | undefined, at: string, into: Deprecations): void {
  const ours = existing?.deprecation?.reason === DEPRECATED_IN_DOCUMENT;
  if (deprecated && existing?.deprecation === undefined) into.push({ name, deprecation: { since: at, reason: DEPRECATED_IN_DOCUMENT } });
  else if (!deprecated && ours) into.push({ name, deprecation: null });
}
