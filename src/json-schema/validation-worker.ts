/**
 * The validation worker (validation-pool.ts): checks that would hold the event loop for more
 * than a few milliseconds run here. Each request names its schema by a key the main thread
 * gave it; the worker compiles a schema the first time it sees its key.
 */
import { parentPort } from 'node:worker_threads';
import type { ValidateFunction } from 'ajv';
import type { CheckReply, CheckRequest } from './validation-pool.js';
import { AjvInstances, fieldErrorsOf, UncompilableSchemaError, type Validator } from './compile.js';

/** Schemas compiled before the instances (and the validators) start afresh. */
const COMPILES_PER_GENERATION = 1024;

const instances = new AjvInstances();
const validators = new Map<number, Validator | UncompilableSchemaError>();

function answer(request: CheckRequest): CheckReply {
  let validator = validators.get(request.key);
  if (!validator) {
    if (validators.size >= COMPILES_PER_GENERATION) {
      validators.clear();
      instances.reset();
    }
    validators.set(request.key, (validator = instances.compile(request.schema)));
  }
  if (validator instanceof UncompilableSchemaError) return { id: request.id, uncompilable: validator.message };
  const value: unknown = JSON.parse(request.json);
  if (!validator.work.fits(value, request.budget)) return { id: request.id, over: true };
  // Compiled here without `inline`, so the validator is there.
  return { id: request.id, errors: fieldErrorsOf(validator.validate as ValidateFunction, value) };
}

parentPort?.on('message', (request: CheckRequest) => parentPort?.postMessage(answer(request)));
