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
import type { ValidateFunction } from 'ajv';
import type { FieldError } from '../model/errors.js';
import type { Tool } from '../model/normalise.js';
import { pointerOf, problemsOf, schemaProblems } from './check.js';
import { dialectOf, newAjv, type AnyAjv, type Dialect } from './dialects.js';

/** Validators compiled per Ajv instance before a fresh one is started. */
const COMPILES_PER_GENERATION = 4096;

/** A stored schema a call cannot be checked against (written before issue 12's checks). */
export class UncompilableSchemaError extends Error {
  override readonly name = 'UncompilableSchemaError';
}

interface Compiled {
  /** The catalogue's tool it was compiled for: a rewritten tool is a new object. */
  tool: Tool;
  generation: number;
  validate: ValidateFunction | UncompilableSchemaError;
}

/** Validators of one of a tool's schemas, chosen by `schemaOf`: its input or its output schema. */
class SchemaValidators {
  readonly #schemaOf: (tool: Tool) => Record<string, unknown> | undefined;
  readonly #perGeneration: number;
  /** By tool name (user-keyed: a Map). */
  readonly #compiled = new Map<string, Compiled>();
  #generation = 0;
  #compiles = 0;
  #instances = new Map<Dialect, AnyAjv>();

  constructor(schemaOf: (tool: Tool) => Record<string, unknown> | undefined, perGeneration: number) {
    this.#schemaOf = schemaOf;
    this.#perGeneration = perGeneration;
  }

  /** How many validators are kept now. */
  get size(): number {
    return this.#compiled.size;
  }

  /**
   * The value's problems, one field error per failing path (a JSON pointer into the value,
   * `/items/0/name`), at most MAX_PROBLEMS; none when it fits, or when the tool has no such
   * schema. Throws UncompilableSchemaError when the tool's stored schema cannot be compiled.
   */
  check(tool: Tool, value: Record<string, unknown>): FieldError[] {
    const validate = this.#validatorOf(tool);
    if (validate === null) return [];
    if (validate instanceof UncompilableSchemaError) throw validate;
    if (validate(value)) return [];
    return problemsOf(validate.errors ?? [], 'arguments').map(({ path, message }) => ({ path: pointerOf(path), message }));
  }

  #validatorOf(tool: Tool): ValidateFunction | UncompilableSchemaError | null {
    const schema = this.#schemaOf(tool);
    if (schema === undefined) return null;
    const found = this.#compiled.get(tool.name);
    if (found?.tool === tool) return found.validate;
    if (this.#compiles >= this.#perGeneration) this.#nextGeneration();
    this.#compiles++;
    const validate = this.#compile(schema);
    this.#compiled.set(tool.name, { tool, generation: this.#generation, validate });
    return validate;
  }

  #nextGeneration(): void {
    this.#generation++;
    this.#compiles = 0;
    this.#instances = new Map();
    for (const [name, compiled] of this.#compiled) if (compiled.generation < this.#generation - 1) this.#compiled.delete(name);
  }

  #compile(schema: Record<string, unknown>): ValidateFunction | UncompilableSchemaError {
    // The registration check first: a schema stored before it existed gets its reasons.
    const problems = schemaProblems(schema, { sizeLimit: false });
    const dialect = dialectOf(schema);
    if (problems.length > 0 || 'unsupported' in dialect) {
      const first = problems[0];
      return new UncompilableSchemaError(first ? `${pointerOf(first.path) || '(top)'}: ${first.message}` : 'unsupported $schema');
    }
    let ajv = this.#instances.get(dialect);
    if (!ajv) this.#instances.set(dialect, (ajv = newAjv(dialect, { validateSchema: false })));
    try {
      return ajv.compile(schema);
    } catch (err) {
      return new UncompilableSchemaError((err as Error).message);
    } finally {
      // Out of the instance's cache by schema; what the instance keeps besides goes with it.
      ajv.removeSchema(schema);
    }
  }
}

/** A call's arguments against the tool's input schema, as discovery serves it. */
export class ArgumentValidators extends SchemaValidators {
  constructor(perGeneration = COMPILES_PER_GENERATION) {
    super((tool) => tool.inputSchema, perGeneration);
  }
}

/**
 * A call's JSON answer against the tool's output schema, where it declares one: MCP's
 * `structuredContent` must conform to it (MCP 2025-06-18, "Output Schema").
 */
export class OutputValidators extends SchemaValidators {
  constructor(perGeneration = COMPILES_PER_GENERATION) {
    super((tool) => tool.outputSchema, perGeneration);
  }
}
