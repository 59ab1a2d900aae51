/**
 * The write path: validate against the live catalogue, write, then swap the result into the
 * catalogue. Validation, the write and the swap run synchronously, so no other request can
 * slip between them in this process; the store re-checks what SQLite can (services in use).
 *
 * Group commit: writes that arrive while the event loop is busy are queued and run together
 * in one transaction, each in its own savepoint (a failed write rolls back alone), so that a
 * burst of registrations pays one fsync instead of one each. Every write still gets its own
 * registry index, and none is acknowledged before the shared commit returns.
 */
import { RegistryError, type FieldError } from '../model/errors.js';
import { parseTool, parseToolService, type ParsedTool } from '../model/resolve.js';
import { ImportBundleSchema, type ToolService } from '../model/schemas.js';
import { fieldErrorsFrom } from '../model/resolve.js';
import type { Actor, AuditEntryInput, PutResult, ServiceRecord, ToolRecord } from '../model/records.js';
import type { AuditFor, ImportResult, RegistryStore } from '../store/registry-store.js';
import type { Catalog } from '../catalog/catalog.js';
import type { ChangeBus } from './change-bus.js';

export interface ImportSummary {
  index: number;
  toolServices: { created: number; replaced: number };
  tools: { created: number; replaced: number };
}

interface QueuedWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export class RegistryService {
  readonly #store: RegistryStore;
  readonly #catalog: Catalog;
  readonly #bus: ChangeBus;
  readonly #now: () => string;
  #queue: QueuedWrite[] = [];
  #scheduled = false;

  constructor(store: RegistryStore, catalog: Catalog, bus: ChangeBus, now: () => string = () => new Date().toISOString()) {
    this.#store = store;
    this.#catalog = catalog;
    this.#bus = bus;
    this.#now = now;
  }

  /** `POST /tools/register` and `PUT /tools/{name}`; `pathName` must match the body's name. */
  putTool(input: unknown, pathName?: string, actor?: Actor): Promise<PutResult<ToolRecord>> {
    return this.#enqueue(() => this.#putTool(input, pathName, actor));
  }

  deleteTool(name: string, actor?: Actor): Promise<ToolRecord> {
    return this.#enqueue(() => this.#deleteTool(name, actor));
  }

  putService(input: unknown, pathId?: string, actor?: Actor): Promise<PutResult<ServiceRecord>> {
    return this.#enqueue(() => this.#putService(input, pathId, actor));
  }

  deleteService(id: string, actor?: Actor): Promise<ServiceRecord> {
    return this.#enqueue(() => this.#deleteService(id, actor));
  }

  importBundle(input: unknown, actor?: Actor): Promise<ImportSummary> {
    return this.#enqueue(() => this.#importBundle(input, actor));
  }

  #enqueue<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Runs every queued write under one commit, then answers each. */
  #flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    try {
      // Changes are applied to the catalogue inside the transaction (so later writes in the
      // batch validate against earlier ones), but published only once the commit returns.
      this.#bus.afterCommit(() =>
        this.#store.group(() => {
          for (const item of batch) {
            try {
              outcomes.push({ ok: true, value: item.run() });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
        }),
      );
    } catch (error) {
      // The shared commit failed, so none of the batch is durable: nobody hears of it, every
      // write in it is refused, and the catalogue goes back to what the database holds.
      for (const item of batch) item.reject(error);
      try {
        this.#catalog.load(this.#store.loadSnapshot());
      } catch {
        // The database cannot be read either; the next write's failure (and /readyz) say so.
      }
      return;
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    });
  }

  /** Swaps committed records into the catalogue and tells the bus what changed. */
  #apply(index: number, change: { services?: ServiceRecord[]; tools?: ToolRecord[] }): void {
    this.#bus.publish(index, this.#catalog.apply(index, change));
  }

  #putTool(input: unknown, pathName?: string, actor?: Actor): PutResult<ToolRecord> {
    const parsed = parseTool(withPathKey(input, 'name', pathName), this.#catalog.lookupService);
    const result = this.#store.putTool(parsed, this.#now(), this.#audit(actor, 'tool.put', (r) => [r.record.name, r.created ? 201 : 200]));
    this.#apply(result.record.index, { tools: [result.record] });
    return result;
  }

  #deleteTool(name: string, actor?: Actor): ToolRecord {
    const record = this.#store.deleteTool(name, this.#now(), this.#audit(actor, 'tool.delete', (r) => [r.name, 200]));
    this.#apply(record.index, { tools: [record] });
    return record;
  }

  /**
   * Creates or replaces a service. A replacement must keep every live tool on it valid (a new
   * required config param, say, would break them), or nothing changes.
   */
  #putService(input: unknown, pathId?: string, actor?: Actor): PutResult<ServiceRecord> {
    const service = parseToolService(withPathKey(input, 'id', pathId));
    const broken = this.#toolsBrokenBy(service);
    if (broken.length > 0) {
      throw new RegistryError(
        'TR_ERR_CONFLICT',
        `replacing tool service "${service.id}" would invalidate tools: ${broken.map((b) => b.name).join(', ')}`,
        { fieldErrors: broken.flatMap((b) => b.errors), extra: { tools: broken.map((b) => b.name) } },
      );
    }
    const result = this.#store.putService(service, this.#now(), this.#audit(actor, 'tool-service.put', (r) => [r.record.id, r.created ? 201 : 200]));
    this.#apply(result.record.index, { services: [result.record] });
    return result;
  }

  #deleteService(id: string, actor?: Actor): ServiceRecord {
    const users = this.#catalog.toolsUsingService(id);
    if (users.length > 0) {
      throw new RegistryError('TR_ERR_IN_USE', `tool service "${id}" is still used by: ${users.join(', ')}`, { extra: { tools: users } });
    }
    const record = this.#store.deleteService(id, this.#now(), this.#audit(actor, 'tool-service.delete', (r) => [r.id, 200]));
    this.#apply(record.index, { services: [record] });
    return record;
  }

  /**
   * Imports services and tools in one transaction. Tools may use services from the bundle or
   * already registered ones. Every problem is reported with its path in the bundle.
   */
  #importBundle(input: unknown, actor?: Actor): ImportSummary {
    const bundle = ImportBundleSchema.safeParse(input);
    if (!bundle.success) {
      throw new RegistryError('TR_ERR_VALIDATION', 'invalid import bundle', { fieldErrors: fieldErrorsFrom(bundle.error) });
    }
    const errors: FieldError[] = [];
    const services = new Map<string, ToolService>();
    bundle.data['tool-services'].forEach((raw, i) => {
      collect(errors, () => {
        const service = parseToolService(raw, ['tool-services', i]);
        if (services.has(service.id)) throw duplicate(['tool-services', i, 'id'], `tool service "${service.id}"`);
        services.set(service.id, service);
      });
    });
    const lookup = (id: string) => services.get(id) ?? this.#catalog.lookupService(id);
    const tools = new Map<string, ParsedTool>();
    bundle.data.tools.forEach((raw, i) => {
      collect(errors, () => {
        const tool = parseTool(raw, lookup, ['tools', i]);
        if (tools.has(tool.name)) throw duplicate(['tools', i, 'name'], `tool "${tool.name}"`);
        tools.set(tool.name, tool);
      });
    });
    // A replaced service must still fit the live tools on it that the bundle does not replace.
    for (const service of services.values()) {
      for (const broken of this.#toolsBrokenBy(service, tools)) errors.push(...broken.errors);
    }
    if (errors.length > 0) {
      throw new RegistryError('TR_ERR_VALIDATION', `invalid import bundle: ${errors.length} problem(s), first ${errors[0]?.path}: ${errors[0]?.message}`, {
        fieldErrors: errors.slice(0, 100),
      });
    }
    const result: ImportResult = this.#store.importBundle(
      [...services.values()],
      [...tools.values()],
      this.#now(),
      this.#audit(actor, 'import', (r) => [null, 200, `${r.services.length} tool service(s), ${r.tools.length} tool(s)`]),
    );
    this.#apply(result.index, { services: result.services.map((s) => s.record), tools: result.tools.map((t) => t.record) });
    const count = (items: PutResult<unknown>[]) => ({
      created: items.filter((i) => i.created).length,
      replaced: items.filter((i) => !i.created).length,
    });
    return { index: result.index, toolServices: count(result.services), tools: count(result.tools) };
  }

  /** Proves the database still takes a write (readiness); throws when it does not. */
  probeWrite(): void {
    this.#store.probeWrite(this.#now());
  }

  /** Everything live, in the import bundle's form. */
  exportBundle(): { 'tool-services': ToolService[]; tools: unknown[] } {
    return {
      'tool-services': this.#catalog.services().map((s) => s.descriptor),
      tools: this.#catalog.tools().map((t) => t.record.descriptor),
    };
  }

  /** The audit entry of a successful write, built from its result inside the transaction. */
  #audit<T>(actor: Actor | undefined, action: string, describe: (result: T) => [target: string | null, status: number, detail?: string]): AuditFor<T> | undefined {
    if (!actor) return undefined;
    return (result: T): AuditEntryInput => {
      const [target, status, detail] = describe(result);
      return { ...actor, at: this.#now(), action, target, outcome: 'ok', status, detail: detail ?? null };
    };
  }

  #toolsBrokenBy(service: ToolService, replacedBy: ReadonlyMap<string, unknown> = new Map()): { name: string; errors: FieldError[] }[] {
    const broken: { name: string; errors: FieldError[] }[] = [];
    for (const name of this.#catalog.toolsUsingService(service.id)) {
      if (replacedBy.has(name)) continue;
      const entry = this.#catalog.getTool(name);
      if (!entry) continue;
      try {
        parseTool(entry.record.descriptor, (id) => (id === service.id ? service : this.#catalog.lookupService(id)), ['tools', name]);
      } catch (err) {
        if (!(err instanceof RegistryError)) throw err;
        broken.push({ name, errors: err.fieldErrors ?? [{ path: `tools.${name}`, message: err.message }] });
      }
    }
    return broken;
  }
}

/** Fills the body's key from the URL path, or refuses a body that names something else. */
function withPathKey(input: unknown, key: string, fromPath: string | undefined): unknown {
  if (fromPath === undefined || typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const body = input as Record<string, unknown>;
  if (body[key] === undefined) return { ...body, [key]: fromPath };
  if (body[key] !== fromPath) {
    throw new RegistryError('TR_ERR_VALIDATION', `the body's ${key} "${String(body[key])}" differs from the URL's "${fromPath}"`, {
      fieldErrors: [{ path: key, message: `must equal "${fromPath}" from the URL` }],
    });
  }
  return input;
}

function collect(errors: FieldError[], fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof RegistryError)) throw err;
    errors.push(...(err.fieldErrors ?? [{ path: '', message: err.message }]));
  }
}

function duplicate(path: PropertyKey[], what: string): RegistryError {
  return new RegistryError('TR_ERR_VALIDATION', `duplicate ${what}`, {
    fieldErrors: [{ path: path.map(String).join('.'), message: `duplicate ${what} in the bundle` }],
  });
}
