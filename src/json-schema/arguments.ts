/**
 * A call's arguments checked against the tool's input schema, exactly as discovery serves it, and its
 * JSON answer against the output schema, where the tool declares one.
 * A schema is compiled when the tool is first called (never at registration: about 1.5 ms a
 * schema), and its validator kept until the tool is written again.
 *
 * Ajv keeps every schema it compiled, and the validator's code, in its instance for the life of
 * the instance (about 7 kB a small schema, whatever `removeSchema` does), so one instance that
 * compiled forever would grow forever as tools are rewritten. Validators are therefore compiled
 * in generations of COMPILES_PER_GENERATION on a fresh instance each; when a generation fills,
 * the validators of the one before it are dropped (the tools they served compile again on
 * their next call). At most two generations, 2 x COMPILES_PER_GENERATION validators, are alive.
 */
import type { FieldError } from '../model/errors.js';
import type { Tool } from '../model/normalise.js';
import { AjvInstances, fieldErrorsOf, UncompilableSchemaError, type Validator } from './compile.js';
import { sharedValidationPool, type ValidationPool } from './validation-pool.js';
import { INLINE_VALIDATION_WORK, MAX_VALIDATION_WORK } from './work.js';

export { UncompilableSchemaError } from './compile.js';

/** Validators compiled per Ajv instance before a fresh one is started. */
const COMPILES_PER_GENERATION = 4096;

/** Every compiled validator's key on the worker (validation-pool.ts). */
let nextKey = 0;

interface Compiled {
  /** The catalogue's tool it was compiled for: a rewritten tool is a new object. */
  tool: Tool;
  generation: number;
  /** Names the schema on the worker. */
  key: number;
  validator: Validator | UncompilableSchemaError;
}

/** Who asks for a check, and how long it may take. */
export interface CheckContext {
  /** The caller (or the upstream), for its share of the worker's queue. */
  owner: string;
  timeoutMs: number;
}

/** A check asked for by the registry itself. */
const LOCAL: CheckContext = { owner: 'registry', timeoutMs: 30_000 };

/** Validators of one of a tool's schemas, chosen by `schemaOf`: its input or its output schema. */
class SchemaValidators {
  readonly #schemaOf: (tool: Tool) => Record<string, unknown> | undefined;
  /** What the checked value is called in messages. */
  readonly #what: string;
  readonly #perGeneration: number;
  readonly #pool: ValidationPool;
  /** By tool name (user-keyed: a Map). */
  readonly #compiled = new Map<string, Compiled>();
  #generation = 0;
  #compiles = 0;
  readonly #instances = new AjvInstances();

  constructor(schemaOf: (tool: Tool) => Record<string, unknown> | undefined, what: string, perGeneration: number, pool: ValidationPool) {
    this.#schemaOf = schemaOf;
    this.#what = what;
    this.#perGeneration = perGeneration;
    this.#pool = pool;
  }

  /** How many validators are kept now. */
  get size(): number {
    return this.#compiled.size;
  }

  /**
   * The value's problems, one field error per failing path (a JSON pointer into the value,
   * `/items/0/name`), at most MAX_PROBLEMS; none when it fits, or when the tool has no such
   * schema. A check that costs more than INLINE_VALIDATION_WORK, or against a schema too large
   * to compile on the event loop, runs on the worker thread.
   * Rejects with UncompilableSchemaError when the tool's stored schema cannot be compiled,
   * ValidationWorkError when the check would cost more than MAX_VALIDATION_WORK or overran
   * the time, and ValidationBusyError when the worker's queue is full.
   */
  async check(tool: Tool, value: Record<string, unknown>, context: CheckContext = LOCAL): Promise<FieldError[]> {
    const schema = this.#schemaOf(tool);
    if (schema === undefined) return [];
    const { validator, key } = this.#compiledFor(tool, schema);
    if (validator instanceof UncompilableSchemaError) throw validator;
    const { validate, work } = validator;
    // The fast bound, else the exact estimate (at most INLINE_VALIDATION_WORK steps of its own).
    if (validate && work.fits(value, INLINE_VALIDATION_WORK)) return fieldErrorsOf(validate, value);
    return this.#pool.check(key, schema, value, { ...context, what: this.#what, budget: MAX_VALIDATION_WORK });
  }

  #compiledFor(tool: Tool, schema: Record<string, unknown>): Compiled {
    const found = this.#compiled.get(tool.name);
    if (found?.tool === tool) return found;
    if (this.#compiles >= this.#perGeneration) this.#nextGeneration();
    this.#compiles++;
    const compiled = { tool, generation: this.#generation, key: nextKey++, validator: this.#instances.compile(schema, { inline: true }) };
    this.#compiled.set(tool.name, compiled);
    return compiled;
  }

  #nextGeneration(): void {
    this.#generation++;
    this.#compiles = 0;
    this.#instances.reset();
    for (const [name, compiled] of this.#compiled) if (compiled.generation < this.#generation - 1) this.#compiled.delete(name);
  }
}

/** A call's arguments against the tool's input schema, as discovery serves it. */
export class ArgumentValidators extends SchemaValidators {
  constructor(perGeneration = COMPILES_PER_GENERATION, pool = sharedValidationPool()) {
    super((tool) => tool.inputSchema, 'arguments', perGeneration, pool);
  }
}

/**
 * A call's JSON answer against the tool's output schema, where it declares one: MCP's
 * `structuredContent` must conform to it (MCP 2025-06-18, "Output Schema").
 */
export class OutputValidators extends SchemaValidators {
  constructor(perGeneration = COMPILES_PER_GENERATION, pool = sharedValidationPool()) {
    super((tool) => tool.outputSchema, 'answer', perGeneration, pool);
  }
}
