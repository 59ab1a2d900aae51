/**
 * Replicated mode (src/replication/): the messages of the replication topic, applied as local
 * writes would be, with each message's index and time, so that every replica decides each the
 * same way and stores the same records. Imports too big for one message come in parts, staged
 * in SQLite until the last one (src/replication/import-parts.ts).
 */
import { z } from 'zod';
import { RegistryError } from '../model/errors.js';
import { McpToolSchema } from '../model/mcp-schemas.js';
import { ReviewChangesSchema } from '../model/admin-api.js';
import { parseMcpServerBody, parseToolServicePut } from '../model/descriptors.js';
import { parseToolPutBody } from '../json-schema/tool-schemas.js';
import type { ImportPartLimits, ReplicationEvent } from '../model/replication.js';
import { isLastImportPart } from '../model/replication.js';
import { FORWARD_AUTHORIZATION_BEFORE_ISSUE_30, toolWithForwardingStated, withForwardingStated } from '../model/forwarding.js';
import type { Actor, AuditEntryInput } from '../model/records.js';
import type { RegistryStore } from '../store/registry-store.js';
import type { StagedImport } from '../store/import-part-rows.js';
import type { GroupCommit, Outcome, Pin } from './group-commit.js';
import type { ImportJobs, ImportPlan } from './import-jobs.js';
import type { WriteCommands } from './write-commands.js';
import { DeprecationSchema } from '../model/deprecation.js';

export class ReplicatedApply {
  readonly #store: RegistryStore;
  readonly #commit: GroupCommit;
  readonly #commands: WriteCommands;
  readonly #imports: ImportJobs;
  /** The limits of imports sent in parts (tests lower them). */
  readonly #partLimits: ImportPartLimits;

  constructor(store: RegistryStore, commit: GroupCommit, commands: WriteCommands, imports: ImportJobs, partLimits: ImportPartLimits) {
    this.#store = store;
    this.#commit = commit;
    this.#commands = commands;
    this.#imports = imports;
    this.#partLimits = partLimits;
  }

  /**
   * Applies one message of the replication topic; `actor` is given on the replica that
   * published it (its audit entry), undefined elsewhere. `refusal`: the replicator has decided
   * already that the message is refused (a credential that does not open); the position moves
   * all the same. Resolves with the outcome, refusals included; rejects only when the commit
   * failed (the replica must read again).
   */
  apply(event: ReplicationEvent, pin: Pin, actor?: Actor, refusal?: RegistryError): Promise<Outcome> {
    if (refusal === undefined && event.op === 'import') {
      return this.#commit.enqueueExclusive(() => this.#importReplicated(() => beforeIssue30(event.body), actor, pin));
    }
    if (refusal === undefined && isLastImportPart(event)) {
      return this.#commit.enqueueExclusive(() =>
        this.#importReplicated((notBefore) => beforeIssue30(this.#joinedImport(event, notBefore)), actor, pin, event.write),
      );
    }
    const run =
      refusal === undefined
        ? this.#replicatedWrite(event, actor)
        : () => {
            throw refusal;
          };
    return this.#commit.enqueuePinned(run, pin);
  }

  /**
   * A message the replicator refused before anything in it was decided (its MAC fails, its
   * stamp is too far ahead): nothing is written and no stamp moves, but the position moves past
   * it, with `audit`, in a commit queued behind the writes before it, so a restart neither reads
   * it again nor audits it twice. Resolves with the refusal as the outcome; rejects only when
   * the commit failed.
   */
  refuse(pin: Omit<Pin, 'at'>, refusal: RegistryError, audit: AuditEntryInput): Promise<Outcome> {
    const run = () => {
      this.#store.recordAudit(audit);
      throw refusal;
    };
    // The last stamp as the pin's time: whatever the message says, time does not move.
    return this.#commit.enqueuePinned(run, { ...pin, at: this.#commit.lastStamp });
  }

  #replicatedWrite(event: ReplicationEvent, actor: Actor | undefined): () => unknown {
    const target = event.target;
    // The owner comes with the message, so that every replica decides ownership the same way.
    const owner = event.owner ?? null;
    const required = (): string => {
      if (target === undefined) throw new RegistryError('TR_ERR_VALIDATION', `a replicated ${event.op} names no target`);
      return target;
    };
    const commands = this.#commands;
    switch (event.op) {
      case 'tool.put':
        return () =>
          commands.putTool(parseToolPutBody(toolWithForwardingStated(event.body, FORWARD_AUTHORIZATION_BEFORE_ISSUE_30), target), {
            pathName: target,
            condition: event.condition,
            actor,
            owner,
          });
      case 'tool.delete':
        return () => commands.deleteTool(required(), { condition: event.condition, actor, owner });
      case 'tool.deprecate':
        return () => {
          const body = DeprecationSchema.safeParse(event.body);
          if (!body.success) throw new RegistryError('TR_ERR_VALIDATION', 'a replicated deprecation is malformed');
          return commands.deprecateTool(required(), body.data, { condition: event.condition, actor, owner });
        };
      case 'tool.undeprecate':
        return () => commands.deprecateTool(required(), null, { condition: event.condition, actor, owner });
      case 'tool-service.put':
        return () =>
          commands.putService(parseToolServicePut(event.body, target), { pathId: target, condition: event.condition, actor, owner });
      case 'tool-service.delete':
        return () => commands.deleteService(required(), { condition: event.condition, actor, owner });
      case 'mcp-server.put':
        return () => commands.putMcpServer(parseMcpServerBody(event.body, target), target, actor);
      case 'mcp-server.delete':
        return () => commands.deleteMcpServer(required(), actor);
      case 'mcp-server.sync':
        return () => {
          const tools = z.array(McpToolSchema).safeParse(event.body);
          if (!tools.success || event.serverIndex === undefined)
            throw new RegistryError('TR_ERR_VALIDATION', 'a replicated sync of an MCP server is malformed');
          // A slice (issue 29): null deletes nothing; its last slice's names delete the rest.
          const listed = event.slice ? (event.listed ? new Set(event.listed) : null) : undefined;
          return commands.syncMcpTools(required(), event.serverIndex, tools.data, listed);
        };
      case 'mcp-server.accept':
      case 'mcp-server.reject':
        return () => {
          const changes = ReviewChangesSchema.safeParse(event.body);
          if (!changes.success) throw new RegistryError('TR_ERR_VALIDATION', `a replicated ${event.op} is malformed`);
          return event.op === 'mcp-server.accept'
            ? commands.acceptMcpChanges(required(), changes.data, actor)
            : commands.rejectMcpChanges(required(), changes.data, actor);
        };
      case 'import.part':
        return () => this.#stageImportPart(event);
      case 'import':
      case 'marker':
        return () => {
          throw new Error(`${event.op} is not a single write`);
        };
    }
  }

  /**
   * A part of an import sent in parts, not its last: staged in the batch's transaction, the one
   * that saves the position. Parts come in order, one each, all giving the same count, within
   * the limits of IMPORT_PART_LIMITS; anything else refuses the part and drops what is staged of
   * its import (its last part is refused then too), the same way on every replica.
   */
  #stageImportPart(event: ReplicationEvent): { part: number; parts: number } {
    const now = Date.parse(this.#commit.stamp());
    const notBefore = now - this.#partLimits.orphanAfterMs;
    // Orphans first, so that a part number they held can be staged again.
    this.#store.dropImportPartsBefore(notBefore);
    const staged = this.#store.stagedImport(event.write, notBefore);
    const problem =
      importPartProblem(event, staged, this.#partLimits) ??
      stagedBytesProblem(event, this.#store.stagedImportBytes(notBefore), this.#partLimits);
    if (problem) {
      this.#store.dropImportParts(event.write);
      throw problem;
    }
    const { part, parts, chunk } = event as Required<Pick<ReplicationEvent, 'part' | 'parts' | 'chunk'>>;
    this.#store.stageImportPart({ write: event.write, part, parts, chunk, bytes: Buffer.byteLength(chunk), stagedAt: now });
    return { part, parts };
  }

  /**
   * The last part of an import sent in parts: its staged parts (those not dropped as orphans
   * before `notBefore`) and this one joined and parsed; a RegistryError when they do not make
   * one import.
   */
  #joinedImport(event: ReplicationEvent, notBefore: number): unknown {
    const problem = importPartProblem(event, this.#store.stagedImport(event.write, notBefore), this.#partLimits);
    if (problem) throw problem;
    const text = this.#store.stagedImportChunks(event.write, notBefore).join('') + (event.chunk ?? '');
    try {
      return JSON.parse(text);
    } catch {
      throw new RegistryError('TR_ERR_INVALID_JSON', `the ${event.parts ?? 0} parts of import ${event.write} do not join into JSON`);
    }
  }

  /**
   * An import from the topic, one message or the last of its parts (`partsOf`, its write id):
   * refused (the position saved alone, with the import's staged parts deleted) or written with
   * the message's index and time (the staged parts deleted in its transaction).
   */
  async #importReplicated(input: (notBefore: number) => unknown, actor: Actor | undefined, pin: Pin, partsOf?: string): Promise<Outcome> {
    const at = this.#commit.stampAt(pin.at);
    let plan: ImportPlan;
    try {
      plan = await this.#imports.plan(input(Date.parse(at) - this.#partLimits.orphanAfterMs));
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      this.#store.group(
        () => {
          if (partsOf !== undefined) this.#store.dropImportParts(partsOf);
          this.#store.saveReplicationPosition(this.#commit.position(pin));
        },
        { deferSync: true },
      );
      await this.#store.sync();
      return { ok: false, error };
    }
    return { ok: true, value: await this.#imports.write(plan, at, actor, { pin, partsOf }) };
  }
}

/** HTTP tools on the topic without `forwardAuthorization` were published before issue 30 (src/model/forwarding.ts). */
const beforeIssue30 = (bundle: unknown) => withForwardingStated(bundle, FORWARD_AUTHORIZATION_BEFORE_ISSUE_30);

/** Half of a UTF-16 pair without its other half: a chunk cut inside a character (SQLite would store U+FFFD). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const partRefused = (event: ReplicationEvent, why: string) =>
  new RegistryError(
    'TR_ERR_BAD_REQUEST',
    `part ${event.part ?? '?'} of ${event.parts ?? '?'} of import ${event.write} is refused: ${why}; the import is dropped, send it again`,
  );

/**
 * Why a part of an import sent in parts cannot be taken, given what is staged of its import:
 * parts 0 to n-1 in order, each once, all with the same count, within the limits.
 */
function importPartProblem(event: ReplicationEvent, staged: StagedImport, limits: ImportPartLimits): RegistryError | undefined {
  const { part, parts, chunk } = event;
  if (part === undefined || parts === undefined || chunk === undefined)
    return partRefused(event, 'an import part needs part, parts and chunk');
  if (parts > limits.maxParts) return partRefused(event, `an import has at most ${limits.maxParts} parts`);
  if (part >= parts) return partRefused(event, 'its number is past the count');
  if (LONE_SURROGATE.test(chunk)) return partRefused(event, 'its chunk is cut inside a character');
  if (staged.count > 0 && (staged.minParts !== parts || staged.maxParts !== parts))
    return partRefused(event, `the parts before it give another count (${staged.maxParts ?? '?'})`);
  if (part < staged.count) return partRefused(event, 'it came before (a duplicate)');
  if (staged.count !== part || (part > 0 && (staged.first !== 0 || staged.last !== part - 1))) {
    return partRefused(
      event,
      `parts 0 to ${part - 1} are not all staged before it (out of order, or dropped as unfinished after ${limits.orphanAfterMs / 60_000} minutes)`,
    );
  }
  if (staged.bytes + Buffer.byteLength(chunk) > limits.maxImportBytes) {
    return new RegistryError(
      'TR_ERR_BODY_TOO_LARGE',
      `import ${event.write} is past the ${limits.maxImportBytes} bytes of JSON an import sent in parts may have`,
    );
  }
  return undefined;
}

/** A part that would take the bytes staged for every unfinished import past their limit. */
function stagedBytesProblem(event: ReplicationEvent, stagedBytes: number, limits: ImportPartLimits): RegistryError | undefined {
  if (stagedBytes + Buffer.byteLength(event.chunk ?? '') <= limits.maxStagedBytes) return undefined;
  return new RegistryError(
    'TR_ERR_BODY_TOO_LARGE',
    `the replicas hold ${stagedBytes} bytes of unfinished imports, and this part would take them past ${limits.maxStagedBytes}; send the import again later`,
  );
}
