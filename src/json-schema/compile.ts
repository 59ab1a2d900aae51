/**
 * One schema compiled for checking values: Ajv's validator and the work model (work.ts) that
 * says what a check will cost before it runs. The same code compiles on the main thread and on
 * the validation worker (validation-worker.ts).
 */
import type { ValidateFunction } from 'ajv';
import type { FieldError } from '../model/errors.js';
import { pointerOf, problemsOf, schemaProblems } from './check.js';
import { dialectOf, newAjv, type AnyAjv, type Dialect } from './dialects.js';
import { ValidationWork } from './work.js';

/** A stored schema a call cannot be checked against (written before issue 12's checks). */
export class UncompilableSchemaError extends Error {
  override readonly name = 'UncompilableSchemaError';
}

export interface Validator {
  /** Ajv's validator; left out where the schema is too large to compile on the event loop. */
  validate: ValidateFunction | undefined;
  work: ValidationWork;
}

/**
 * Subschemas above which a schema is compiled (and its values checked) on the worker only:
 * compiling costs Ajv 0.2 to 1 ms a subschema here (a schema of 10 properties 7.8 ms, of 60
 * 59 ms, with the machine loaded), and the largest schemas the size limit allows have
 * thousands. Most tools' input schemas have under 20.
 */
const MAX_INLINE_COMPILE_NODES = 32;

/** Ajv instances, one per dialect, replaced by `reset` (an instance keeps all it compiled). */
export class AjvInstances {
  #instances = new Map<Dialect, AnyAjv>();

  reset(): void {
    this.#instances = new Map();
  }

  /** `inline`: compiled for the event loop, where Ajv's validator is left out of large schemas. */
  compile(schema: Record<string, unknown>, { inline = false } = {}): Validator | UncompilableSchemaError {
    // Tolerant of any shape, and cheap: it decides whether the rest may run on the event loop.
    const work = new ValidationWork(schema);
    if (inline && work.nodes > MAX_INLINE_COMPILE_NODES) return { validate: undefined, work };
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
      return { validate: ajv.compile(schema), work };
    } catch (err) {
      return new UncompilableSchemaError((err as Error).message);
    } finally {
      // Out of the instance's cache by schema; what the instance keeps besides goes with it.
      ajv.removeSchema(schema);
    }
  }
}

/** The value's problems, one field error per failing path (a JSON pointer into the value). */
export function fieldErrorsOf(validate: ValidateFunction, value: unknown): FieldError[] {
  if (validate(value)) return [];
  return problemsOf(validate.errors ?? [], 'arguments').map(({ path, message }) => ({ path: pointerOf(path), message }));
}
