/**
 * How route schemas validate and serialise. Requests are validated by the zod type provider,
 * descriptor bodies by their schema's parse function (validatedBy), and a few hot or ordered
 * parts only documented (documentedOnly); answers are written with JSON.stringify.
 */
import type { FastifyRequest, FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RegistryError } from '../model/errors.js';
import { withPathKey } from '../model/descriptors.js';

/** Route schema parts that only document the request, with the schema the document shows. */
const documentedOnlyParts = new WeakMap<z.ZodType, z.ZodType>();

/**
 * A request part the route documents with `documented` but passes on as it came (the handler
 * sees `unknown`), because something else must stay the one place that checks it: a call's
 * arguments are looked at by the bridge only after it has checked the caller's scopes
 * (401/403/404/410 first); an import's items are parsed in slices by the import job (200,000
 * tools in one parse would hold the event loop for seconds), with the same schemas; and
 * conditional headers are read by the handlers, so that no header is parsed on the hot reads.
 */
export function documentedOnly(documented: z.ZodType): z.ZodUnknown {
  const schema = z.unknown();
  documentedOnlyParts.set(schema, documented);
  return schema;
}

/** Parse functions of body schemas, by schema (see validatedBy). */
const bodyParsers = new WeakMap<z.ZodType, (data: unknown) => unknown>();

/**
 * A body validated with `schema` through `parse`, which parses with that schema and throws the
 * registry's own refusal (a RegistryError: `invalid HTTP tool: ...`, as every other front that
 * parses the same body words it), and may check more than zod can (a tool's JSON Schemas).
 * The handler gets the parsed value, typed by the schema; the document shows the schema.
 */
export function validatedBy<T extends z.ZodType>(schema: T, parse: (data: unknown) => z.output<T>): T {
  bodyParsers.set(schema, parse);
  return schema;
}

/**
 * A PUT's hook that gives the body the path's key (`name` or `id`) before the body is validated,
 * so that it parses as the same body with the key would (the stored form has the key where the
 * schema puts it), or refuses a body that names something else (src/model/descriptors.ts).
 */
export function pathKeyIntoBody(key: 'name' | 'id'): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const fromPath: unknown = isObject(request.params) ? request.params[key] : undefined;
    request.body = withPathKey(request.body, key, typeof fromPath === 'string' ? fromPath : undefined);
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** The schema the document shows for a route schema part. */
export function documentedSchema<T>(schema: T): T | z.ZodType {
  return schema instanceof z.ZodType ? (documentedOnlyParts.get(schema) ?? schema) : schema;
}

function isEmpty(value: unknown): boolean {
  for (const _ in value as object) return false;
  return true;
}

/** Precompiled checks of hot request parts, by their schema (see withFastPath). */
const fastPaths = new WeakMap<z.ZodType, (data: unknown) => unknown>();

/**
 * Gives a request part's schema a precompiled check for the common, plainly valid inputs:
 * `check` returns the value zod would give, or undefined to let zod decide. Only zod refuses,
 * so every refusal (its problem+json with the same field errors) is what it was; the hot routes
 * skip zod's parse, ~3 us a request in the profile of `GET /?limit=100`.
 */
export function withFastPath<T extends z.ZodType>(schema: T, check: (data: Record<string, unknown>) => z.output<T> | undefined): T {
  fastPaths.set(schema, (data) => (typeof data === 'object' && data !== null ? check(data as Record<string, unknown>) : undefined));
  return schema;
}

/** Every key of a path's params object a plain required `z.string()`: any string passes as is. */
function plainStringParams(schema: z.ZodType): ReadonlySet<string> | null {
  if (!(schema instanceof z.ZodObject) || schema.def.catchall !== undefined) return null;
  const keys = Object.keys(schema.shape);
  const plain = keys.every((key) => {
    const field = schema.shape[key] as z.ZodType;
    return field instanceof z.ZodString && (field.def.checks ?? []).length === 0;
  });
  return plain ? new Set(keys) : null;
}

export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = (route) => {
  // Left as it came: not even null for an absent body, so services see what they always saw.
  if (documentedOnlyParts.has(route.schema)) return () => true;
  const parse = bodyParsers.get(route.schema);
  if (parse) {
    return (data) => {
      try {
        return { value: parse(data) };
      } catch (err) {
        // Fastify answers with the error as it is: the registry's problem, not a schema error.
        if (err instanceof RegistryError) return { error: err };
        throw err;
      }
    };
  }
  const validate = zodValidatorCompiler(route);
  const fast = fastPaths.get(route.schema);
  if (fast) {
    const emptyPasses = route.httpPart === 'querystring' && leavesEmptyAlone(validate);
    return (data) => {
      if (emptyPasses && isEmpty(data)) return true;
      const value = fast(data);
      return value === undefined ? validate(data) : { value };
    };
  }
  // Path parameters are strings with exactly the route's keys: zod would copy them as they are.
  const params = route.httpPart === 'params' ? plainStringParams(route.schema) : null;
  if (params) {
    return (data) => {
      let count = 0;
      for (const key in data as object) {
        if (!params.has(key) || typeof (data as Record<string, unknown>)[key] !== 'string') return validate(data);
        count++;
      }
      return count === params.size ? true : validate(data);
    };
  }
  if (route.httpPart !== 'querystring' || !leavesEmptyAlone(validate)) return validate;
  return (data) => (isEmpty(data) ? true : validate(data));
};

/**
 * The plain `GET /` is the hot path: a query string the schema takes empty and leaves empty is
 * checked once, here, rather than parsed on every request.
 */
function leavesEmptyAlone(validate: (data: unknown) => unknown): boolean {
  const empty = validate({}) as { value?: unknown };
  return empty.value !== undefined && isEmpty(empty.value);
}

/**
 * Answers are not parsed by their zod schemas on the way out: the schemas type the handlers and
 * make the document, and test/http/openapi.test.ts checks real answers against it. Parsing every
 * answer cost 4.5 times the serialisation (a 1000-tool page: 5 ms with JSON.stringify, 23 ms
 * with zod parse and stringify) and would rebuild objects in schema key order.
 */
export const serializerCompiler: FastifySerializerCompiler<unknown> = () => (data) => JSON.stringify(data);
