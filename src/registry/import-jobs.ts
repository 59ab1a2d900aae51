/**
 * Imports run alone, in slices: validation, the SQLite writes (one transaction held across
 * turns of the event loop) and the catalogue's entries are done a few milliseconds at a time,
 * so that reads keep answering; other writes wait in the group commit's queue until the import
 * is answered. The catalogue's new indexes and full view are built beside the live ones in the
 * same way, so that once the commit is on disk, showing the import is one swap.
 */
import { RegistryError, type FieldError } from '../model/errors.js';
import { fieldErrorsFrom, type ParsedTool } from '../model/resolve.js';
import { parseToolService } from '../model/descriptors.js';
import { parseCheckedTool } from '../json-schema/tool-schemas.js';
import { ImportBundleSchema, type ToolService } from '../model/schemas.js';
import type { Actor, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { RegistryStore } from '../store/registry-store.js';
import type { Catalog, CatalogTool, PreparedWrite } from '../catalog/catalog.js';
import { compareNames } from '../catalog/sorted-names.js';
import { sortInSlices } from '../catalog/steps.js';
import type { ChangeBus } from './change-bus.js';
import type { GroupCommit, Pin } from './group-commit.js';
import type { WriteCommands } from './write-commands.js';

export interface ImportSummary {
  index: number;
  toolServices: { created: number; replaced: number };
  tools: { created: number; replaced: number };
}

/** A validated import: its services, and its tools in name order. */
export interface ImportPlan {
  services: Map<string, ToolService>;
  ordered: ParsedTool[];
}

/** Replicated mode: an import applied from the topic. */
interface ImportPinned {
  pin: Pin;
  /** The write id of an import sent in parts: its staged parts are deleted in its transaction. */
  partsOf?: string | undefined;
}

/**
 * Tools per batch of an import's writes. The SQL runs on the store's writer thread where there
 * is one (src/store/bulk-write.ts); here otherwise, where 256 at a time made slices of 40 ms
 * in the import's profile.
 */
const IMPORT_BATCH = 128;

/**
 * The imports' name among the owners of the app's Scheduler: one import runs at a time (an
 * exclusive write), and its validation and writes take turns with the search feeder's backlog
 * and change-stream replays rather than holding the loop until the import is done.
 */
const IMPORT_OWNER = 'import';

export class ImportJobs {
  readonly #store: RegistryStore;
  readonly #catalog: Catalog;
  readonly #bus: ChangeBus;
  readonly #commit: GroupCommit;
  readonly #commands: WriteCommands;

  constructor(store: RegistryStore, catalog: Catalog, bus: ChangeBus, commit: GroupCommit, commands: WriteCommands) {
    this.#store = store;
    this.#catalog = catalog;
    this.#bus = bus;
    this.#commit = commit;
    this.#commands = commands;
  }

  /**
   * Imports services and tools in one transaction, all or nothing, under one registry index.
   * Tools may use services from the bundle or already registered ones. Every problem is
   * reported with its path in the bundle. Nothing of it is seen by anyone until it is on disk
   * and swapped into the catalogue at once. Run it as an exclusive write of the group commit.
   */
  async importSliced(input: unknown, actor?: Actor): Promise<ImportSummary> {
    const plan = await this.plan(input);
    // Nothing to write (an empty bundle, a TrustGraph dump whose items were all skipped): no
    // write, so no new index, no new ETags and no waiters woken for nothing.
    if (plan.services.size === 0 && plan.ordered.length === 0)
      return { index: this.#catalog.index, toolServices: { created: 0, replaced: 0 }, tools: { created: 0, replaced: 0 } };
    return this.write(plan, this.#commit.stamp(), actor);
  }

  /** An import's validation, in slices: what it writes, or a RegistryError naming every problem. */
  async plan(input: unknown): Promise<ImportPlan> {
    const scheduler = this.#catalog.scheduler;
    const bundle = ImportBundleSchema.safeParse(input);
    if (!bundle.success) {
      throw new RegistryError('TR_ERR_VALIDATION', 'invalid import bundle', { fieldErrors: fieldErrorsFrom(bundle.error) });
    }
    const errors: FieldError[] = [];
    const services = new Map<string, ToolService>();
    const rawServices = bundle.data['tool-services'];
    for (let i = 0; i < rawServices.length; i++) {
      collect(errors, () => {
        const service = parseToolService(rawServices[i], ['tool-services', i]);
        if (services.has(service.id)) throw duplicate(['tool-services', i, 'id'], `tool service "${service.id}"`);
        services.set(service.id, service);
      });
      await scheduler.turn(IMPORT_OWNER);
    }
    const lookup = (id: string) => services.get(id) ?? this.#commit.view.service(id);
    const tools = new Map<string, ParsedTool>();
    const rawTools = bundle.data.tools;
    for (let i = 0; i < rawTools.length; i++) {
      collect(errors, () => {
        const tool = parseCheckedTool(rawTools[i], lookup, ['tools', i]);
        this.#commands.checkTargets(tool, ['tools', i]);
        if (tools.has(tool.name)) throw duplicate(['tools', i, 'name'], `tool "${tool.name}"`);
        // A name an upstream's tool has is taken over, as by PUT (WriteCommands.putTool): a
        // backup restores whatever upstreams list meanwhile.
        tools.set(tool.name, tool);
      });
      await scheduler.turn(IMPORT_OWNER);
    }
    // A replaced service must still fit the live tools on it that the bundle does not replace.
    for (const service of services.values()) {
      for (const broken of this.#commands.toolsBrokenBy(service, tools)) errors.push(...broken.errors);
    }
    if (errors.length > 0) {
      throw new RegistryError(
        'TR_ERR_VALIDATION',
        `invalid import bundle: ${errors.length} problem(s), first ${errors[0]?.path}: ${errors[0]?.message}`,
        {
          fieldErrors: errors.slice(0, 100),
        },
      );
    }
    // In name order, so that neither the catalogue nor its indexes sort them again.
    const ordered = await scheduler.run(
      sortInSlices([...tools.values()], (a, b) => compareNames(a.name, b.name)),
      IMPORT_OWNER,
    );
    return { services, ordered };
  }

  /** Writes a validated import in slices, under the message's index in replicated mode (`pinned`). */
  async write({ services, ordered }: ImportPlan, at: string, actor: Actor | undefined, pinned?: ImportPinned): Promise<ImportSummary> {
    const scheduler = this.#catalog.scheduler;
    const write = await this.#store.beginBulk(pinned?.pin.index);
    const entries = new Map<string, CatalogTool>();
    const toolResults: PutResult<ToolRecord>[] = [];
    let serviceResults: PutResult<ServiceRecord>[];
    let prepared: PreparedWrite;
    // Batches sent ahead to the store's writer thread, so that it writes one while this thread
    // builds the catalogue's entries of the one before.
    const inFlight: Promise<PutResult<ToolRecord>[]>[] = [];
    const take = async () => {
      const next = inFlight.shift();
      if (next === undefined) return;
      for (const result of await next) {
        toolResults.push(result);
        // The catalogue's entry (and its bytes), built now so that the swap is only a swap.
        entries.set(result.record.name, this.#catalog.prepare(result.record));
        await scheduler.turn(IMPORT_OWNER);
      }
    };
    try {
      serviceResults = await write.putServices([...services.values()], at);
      for (let i = 0; i < ordered.length; i += IMPORT_BATCH) {
        const batch = write.putTools(ordered.slice(i, i + IMPORT_BATCH), at);
        // Awaited in turn below; a failure meanwhile must not count as unhandled.
        batch.catch(() => undefined);
        inFlight.push(batch);
        if (inFlight.length > 1) await take();
        await scheduler.turn(IMPORT_OWNER);
      }
      while (inFlight.length > 0) await take();
      // Before the commit, so that nothing of the import shows in SQLite (the change feed's
      // replay) before the catalogue can show it too; a failure here rolls the import back.
      const change = { services: serviceResults.map((s) => s.record), tools: toolResults.map((t) => t.record) };
      prepared = await scheduler.run(this.#catalog.prepareWrite(write.index, change, entries), IMPORT_OWNER);
      const detail = `${serviceResults.length} tool service(s), ${toolResults.length} tool(s)`;
      await write.commit(
        actor && { ...actor, at, action: 'import', target: null, outcome: 'ok', status: 200, detail },
        pinned && this.#commit.position(pinned.pin),
        pinned?.partsOf,
      );
    } catch (err) {
      await Promise.allSettled(inFlight);
      // A failed step has rolled back already; the error that counts is the first.
      await write.rollback().catch(() => undefined);
      throw err;
    }
    // Nothing is shown or answered before the commit is on disk (as in a group commit).
    await this.#store.sync();
    const index = write.index;
    this.#bus.publish(index, this.#catalog.applyPrepared(prepared).changes);
    const count = (items: PutResult<unknown>[]) => ({
      created: items.filter((i) => i.created).length,
      replaced: items.filter((i) => !i.created).length,
    });
    return { index, toolServices: count(serviceResults), tools: count(toolResults) };
  }
}

function collect(errors: FieldError[], fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof RegistryError)) throw err;
    // One at a time: an item with 300,000 bad entries overflowed the stack spread into one push.
    for (const error of err.fieldErrors ?? [{ path: '', message: err.message }]) errors.push(error);
  }
}

function duplicate(path: PropertyKey[], what: string): RegistryError {
  return new RegistryError('TR_ERR_VALIDATION', `duplicate ${what}`, {
    fieldErrors: [{ path: path.map(String).join('.'), message: `duplicate ${what} in the bundle` }],
  });
}
